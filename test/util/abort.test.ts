import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.js';
import { onAbort, sleep } from '../../src/util/abort.js';

// The listener count Node keeps per event target (an internal symbol's value).
function abortListeners(signal: AbortSignal): number {
  const symbol = Object.getOwnPropertySymbols(signal).find(
    (candidate) => candidate.description === 'kEvents',
  );
  const events = symbol === undefined ? undefined : (signal as never)[symbol];
  return (events as Map<string, { size: number }> | undefined)?.get('abort')?.size ?? 0;
}

describe('onAbort', () => {
  it('calls every registered function once, through one listener on the signal', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    onAbort(controller.signal, () => calls.push('a'));
    const releaseB = onAbort(controller.signal, () => calls.push('b'));
    onAbort(controller.signal, () => calls.push('c'));
    expect(abortListeners(controller.signal)).toBe(1);
    releaseB();
    controller.abort();
    controller.abort();
    expect(calls).toEqual(['a', 'c']);
  });

  it('does nothing for a signal that has already aborted', () => {
    const controller = new AbortController();
    controller.abort();
    let called = false;
    onAbort(controller.signal, () => {
      called = true;
    })();
    expect(called).toBe(false);
  });

  it('lets a function release another one while the signal aborts', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    let releaseSecond = (): void => {};
    onAbort(controller.signal, () => {
      calls.push('first');
      releaseSecond();
    });
    releaseSecond = onAbort(controller.signal, () => calls.push('second'));
    controller.abort();
    expect(calls).toEqual(['first']);
  });
});

describe('sleep', () => {
  it('rejects with a cancelled TroupeError when its signal aborts, and leaves no wait behind', async () => {
    const controller = new AbortController();
    const finished = sleep(60_000, controller.signal);
    const other = sleep(1, controller.signal);
    await other;
    controller.abort();
    const error = await finished.catch((caught: unknown) => caught);
    expect(isTroupeError(error, 'cancelled')).toBe(true);
  });

  it('rejects at once for a signal that has already aborted, and resolves a zero wait', async () => {
    const controller = new AbortController();
    await expect(sleep(0, controller.signal)).resolves.toBeUndefined();
    controller.abort();
    const error = await sleep(10, controller.signal).catch((caught: unknown) => caught);
    expect(isTroupeError(error, 'cancelled')).toBe(true);
  });
});
