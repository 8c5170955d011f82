import type { Agent, AgentResult } from '../agent/agent.js';
import type { EventPayload } from '../events/schema.js';
import { addUsage } from '../model/types.js';
import { DEFAULT_RETRY, type RetryPolicy } from '../roles/role.js';
import { Supervisor } from '../runtime/actors/supervisor.js';

/** A run of an agent in the main thread, supervised like an actor's. */
export interface SupervisedRun {
  result: AgentResult;
  /** Attempts made (1 when the first succeeded or failed for good). */
  attempts: number;
}

/**
 * Runs `agent` on `task` and, when the run ends on a transient failure (a
 * 429 or 5xx after the SDK's own retries, a lost connection, a cut stream),
 * retries it with backoff as a supervisor retries an actor: from its
 * history as it stood, so finished tool calls (a whole delegation) are not
 * made again. Usage and steps add up over the attempts. A retry is reported
 * as `agent.progress`; a stop (the signal) ends the waiting at once.
 */
export async function runSupervised(
  agent: Agent,
  task: string,
  options: {
    signal: AbortSignal;
    retry?: Readonly<RetryPolicy> | 'fail_fast' | undefined;
    emit(payload: EventPayload): void;
    supervisor?: Supervisor | undefined;
  },
): Promise<SupervisedRun> {
  const policy =
    options.retry === 'fail_fast'
      ? { ...DEFAULT_RETRY, maxRetries: 0 }
      : { ...DEFAULT_RETRY, ...options.retry };
  const supervisor = options.supervisor ?? new Supervisor();
  let result = await agent.run(task, { signal: options.signal });
  let attempts = 1;
  while (result.stopReason === 'error' && !options.signal.aborted) {
    const decision = supervisor.decide(policy, undefined, attempts, result.error);
    if (!decision.retry) {
      if (decision.reason !== undefined && result.error !== undefined) {
        result = {
          ...result,
          error: { ...result.error, message: `${result.error.message}; ${decision.reason}` },
        };
      }
      break;
    }
    options.emit({
      type: 'agent.progress',
      note: `attempt ${attempts} failed (${result.error?.message ?? 'an error'}); retrying in ${decision.delayMs} ms from its history`,
    });
    if (!(await pause(decision.delayMs, options.signal))) break;
    attempts += 1;
    // The conversation as it stood when the call failed: the call is made again on it.
    agent.resetHistory(result.messages);
    const next = await agent.resume({ signal: options.signal });
    result = {
      ...next,
      usage: addUsage(result.usage, next.usage),
      steps: [...result.steps, ...next.steps],
    };
  }
  return { result, attempts };
}

// Resolves true after `ms`, or false at once when `signal` aborts.
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
