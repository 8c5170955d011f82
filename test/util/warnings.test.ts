/* biome-ignore-all lint/suspicious/noConsole: these tests call console.warn on purpose. */
import { afterEach, describe, expect, it } from 'vitest';
import { captureWarnings, type LibraryWarning, withWarningSink } from '../../src/util/warnings.js';

describe('captureWarnings', () => {
  const releases: Array<() => void> = [];
  afterEach(() => {
    for (const release of releases.splice(0)) release();
  });

  it('sends console.warn and process.emitWarning to the sink of the code that raised them', async () => {
    const fallback: LibraryWarning[] = [];
    const agent: LibraryWarning[] = [];
    releases.push(captureWarnings((warning) => void fallback.push(warning)));
    console.warn('outside %s', 'any agent');
    await withWarningSink(
      (warning) => void agent.push(warning),
      async () => {
        await Promise.resolve();
        console.warn('The model is deprecated');
        process.emitWarning('11 abort listeners added', 'MaxListenersExceededWarning');
      },
    );
    expect(fallback).toEqual([{ source: 'console', message: 'outside any agent' }]);
    expect(agent).toEqual([
      { source: 'console', message: 'The model is deprecated' },
      { source: 'node', message: 'MaxListenersExceededWarning: 11 abort listeners added' },
    ]);
  });

  it('puts console.warn and process.emitWarning back when the last capture ends', () => {
    const warn = console.warn;
    const emitWarning = process.emitWarning;
    const first = captureWarnings(() => undefined);
    const second = captureWarnings(() => undefined);
    expect(console.warn).not.toBe(warn);
    first();
    expect(console.warn).not.toBe(warn);
    second();
    expect(console.warn).toBe(warn);
    expect(process.emitWarning).toBe(emitWarning);
  });
});
