import { TroupeError } from '../errors.js';

// One 'abort' listener per signal, shared by every wait on it (see onAbort).
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `fn` once when `signal` aborts, unless the returned function is
 * called first (it removes `fn`). Every caller on one signal shares a single
 * listener: an agent's signal sees a wait per model call and per tool call,
 * thousands at once in a fan-out, and Node's addEventListener and
 * removeEventListener were ~11% of an actor thread's busy time there. Does nothing
 * for a signal that has already aborted (check `signal.aborted` first).
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) return noop;
  let callbacks = waiting.get(signal);
  if (callbacks === undefined) {
    const set = new Set<() => void>();
    callbacks = set;
    waiting.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        waiting.delete(signal);
        for (const callback of set) {
          try {
            callback();
          } catch (error) {
            // As an EventTarget reports a listener's throw: the others still run.
            process.nextTick(() => {
              throw error;
            });
          }
        }
        set.clear();
      },
      { once: true },
    );
  }
  const entry = (): void => fn();
  callbacks.add(entry);
  const set = callbacks;
  return () => {
    set.delete(entry);
  };
}

function noop(): void {}

/**
 * Waits `milliseconds`, or rejects with TroupeError `cancelled` as soon as
 * `signal` aborts (at once when it already has). A zero wait resolves without
 * a timer. One timer and a shared abort listener (onAbort), removed when
 * either fires: scripted models wait here once per call, thousands at a time
 * in a fan-out, so this is cheaper than timers/promises' setTimeout with a
 * signal.
 */
export function sleep(milliseconds: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelledBy(signal));
  if (milliseconds <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    if (signal === undefined) {
      setTimeout(resolve, milliseconds);
      return;
    }
    const release = onAbort(signal, () => {
      clearTimeout(timer);
      reject(cancelledBy(signal));
    });
    const timer = setTimeout(() => {
      release();
      resolve();
    }, milliseconds);
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
