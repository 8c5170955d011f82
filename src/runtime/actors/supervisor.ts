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

/**
 * Decides retries, as an Erlang supervisor does: a transient failure is
 * retried up to the role's `maxRetries` with exponential backoff, but more
 * than `maxRestarts` restarts among one parent's children within `periodMs`
 * stops all retrying there and escalates the failure to the parent, so a
 * crash loop cannot spin forever.
 */
export class Supervisor {
  readonly #now: () => number;
  // Restart times per parent (the supervising scope).
  readonly #restarts = new Map<string, number[]>();

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * Decides about attempt number `attempt` (from 1) of a child of `parentId`
   * that failed with `error`. A retry is counted against the parent's window.
   */
  decide(
    policy: Readonly<RetryPolicy>,
    parentId: string | undefined,
    attempt: number,
    error: SerializedError | undefined,
  ): SupervisorDecision {
    if (!isTransient(error) || policy.maxRetries <= 0) return { retry: false, escalated: false };
    if (attempt > policy.maxRetries) {
      return { retry: false, escalated: false, reason: `gave up after ${attempt} attempts` };
    }
    const scope = parentId ?? '(root)';
    const now = this.#now();
    const period = policy.periodMs ?? 60_000;
    const maxRestarts = policy.maxRestarts ?? 5;
    const recent = (this.#restarts.get(scope) ?? []).filter((time) => now - time < period);
    if (recent.length >= maxRestarts) {
      this.#restarts.set(scope, recent);
      return {
        retry: false,
        escalated: true,
        reason: `restart limit reached (${recent.length} restarts within ${period} ms under ${scope}); escalating to ${scope}`,
      };
    }
    recent.push(now);
    this.#restarts.set(scope, recent);
    const base = policy.backoffMs ?? 1000;
    const delayMs = Math.min(policy.maxBackoffMs ?? 30_000, base * 2 ** (attempt - 1));
    return { retry: true, delayMs };
  }
}
