import { TroupeError } from '../errors.js';

/**
 * Waits `milliseconds`, or rejects with TroupeError `cancelled` as soon as
 * `signal` aborts (at once when it already has). A zero wait resolves without
 * a timer. One timer and one abort listener, removed when either fires:
 * scripted models wait here once per call, thousands at a time in a
 * fan-out, so this is cheaper than timers/promises' setTimeout with a signal.
 */
export function sleep(milliseconds: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelledBy(signal));
  if (milliseconds <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    if (signal === undefined) {
      setTimeout(resolve, milliseconds);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(cancelledBy(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, milliseconds);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function cancelledBy(signal: AbortSignal): TroupeError {
  return new TroupeError('cancelled', 'The model call was cancelled.', { cause: signal.reason });
}

/**
 * A signal for one request that aborts when `parent` does. The parent gets
 * exactly one listener, removed by `release()`: an SDK that adds its own
 * listener to the signal it is given and never removes it (the OpenAI client)
 * then adds it to this short-lived signal, so a long-lived agent signal does
 * not collect one listener per request (Node's MaxListenersExceededWarning
 * after ten).
 */
export function requestSignal(parent: AbortSignal | undefined): {
  signal: AbortSignal | undefined;
  release: () => void;
} {
  if (parent === undefined) return { signal: undefined, release: () => {} };
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, release: () => {} };
  }
  const forward = (): void => controller.abort(parent.reason);
  parent.addEventListener('abort', forward, { once: true });
  return {
    signal: controller.signal,
    release: () => parent.removeEventListener('abort', forward),
  };
}
