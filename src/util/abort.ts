import { setTimeout as wait } from 'node:timers/promises';
import { TroupeError } from '../errors.js';

/**
 * Waits `milliseconds`, or rejects with TroupeError `cancelled` as soon as
 * `signal` aborts (at once when it already has). A zero wait resolves without
 * a timer.
 */
export async function sleep(milliseconds: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw cancelledBy(signal);
  if (milliseconds <= 0) return;
  try {
    await wait(milliseconds, undefined, signal === undefined ? undefined : { signal });
  } catch (error) {
    if (signal?.aborted) throw cancelledBy(signal);
    throw error;
  }
}

function cancelledBy(signal: AbortSignal): TroupeError {
  return new TroupeError('cancelled', 'The model call was cancelled.', { cause: signal.reason });
}
