import type { ErrorCode, SerializedError } from '../../errors.js';
import type { RetryPolicy } from '../../roles/role.js';

/** Error codes of failures worth a retry: the provider or the thread, not the task. */
export const TRANSIENT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'model.rate_limited',
  'model.server',
  'model.connection',
  'model.stream_interrupted',
  'runtime.worker_exit',
]);

/** True when `error` is transient: a 429, a 5xx, a lost connection or a crashed thread. */
export function isTransient(error: SerializedError | undefined): boolean {
  if (error === undefined) return false;
  if (TRANSIENT_CODES.has(error.code)) return true;
  const status = error.details?.['status'];
  return typeof status === 'number' && (status === 429 || status >= 500);
}

/** What to do with a failed attempt. */
export type SupervisorDecision =
  | { retry: true; delayMs: number }
  | { retry: false; escalated: boolean; reason?: string | undefined };

/** Distinct children of one parent failing transiently within `periodMs` before the parent escalates. */
export const DEFAULT_MAX_FAILING_CHILDREN = 100;

/**
 * Decides retries, as an Erlang supervisor does. Restart intensity is kept
 * per actor: a transient failure is retried up to the role's `maxRetries`
 * with exponential backoff, and more than `maxRestarts` restarts of that one
 * actor within `periodMs` stops its retrying (a crash loop cannot spin). The
 * parent escalates only when many distinct children fail within the period
 * (`maxFailingChildren`, default 100: a provider outage, not one bad child),
 * so one child's crash loop or a few 429s never make a sibling's failure
 * permanent. Without a child id (the coordinator) the window is the parent's.
 */
export class Supervisor {
  readonly #now: () => number;
  // Restart times per actor (or per parent, for callers without a child id).
  readonly #restarts = new Map<string, number[]>();
  // The distinct children of each parent that failed transiently, with when they last did.
  readonly #failing = new Map<string, Map<string, number>>();

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * Decides about attempt number `attempt` (from 1) of a child of `parentId`
   * (the actor `childId`) that failed with `error`. A retry is counted against
   * the child's own window, and the child among its parent's failing children.
   */
  decide(
    policy: Readonly<RetryPolicy>,
    parentId: string | undefined,
    attempt: number,
    error: SerializedError | undefined,
    childId?: string | undefined,
  ): SupervisorDecision {
    if (!isTransient(error) || policy.maxRetries <= 0) return { retry: false, escalated: false };
    if (attempt > policy.maxRetries) {
      return { retry: false, escalated: false, reason: `gave up after ${attempt} attempts` };
    }
    const parent = parentId ?? '(root)';
    const now = this.#now();
    const period = policy.periodMs ?? 60_000;
    const maxRestarts = policy.maxRestarts ?? 5;
    if (childId !== undefined) {
      const failing = this.#failing.get(parent) ?? new Map<string, number>();
      this.#failing.set(parent, failing);
      for (const [child, time] of failing) if (now - time >= period) failing.delete(child);
      failing.set(childId, now);
      const maxFailing = policy.maxFailingChildren ?? DEFAULT_MAX_FAILING_CHILDREN;
      if (failing.size > maxFailing) {
        return {
          retry: false,
          escalated: true,
          reason: `${failing.size} children of ${parent} failed within ${period} ms (more than ${maxFailing}); escalating to ${parent}`,
        };
      }
    }
    const scope = childId ?? parent;
    const recent = (this.#restarts.get(scope) ?? []).filter((time) => now - time < period);
    if (recent.length >= maxRestarts) {
      this.#restarts.set(scope, recent);
      return {
        retry: false,
        escalated: true,
        reason:
          childId === undefined
            ? `restart limit reached (${recent.length} restarts within ${period} ms under ${scope}); escalating to ${scope}`
            : `restart limit reached (${recent.length} restarts of ${childId} within ${period} ms); escalating to ${parent}`,
      };
    }
    recent.push(now);
    this.#restarts.set(scope, recent);
    const base = policy.backoffMs ?? 1000;
    const delayMs = Math.min(policy.maxBackoffMs ?? 30_000, base * 2 ** (attempt - 1));
    return { retry: true, delayMs };
  }
}
