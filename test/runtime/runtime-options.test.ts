import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';

// Construction checks every data option, so nothing starts (no pool, no
// thread) when one is wrong, and the error names the option, the rule and
// the value.

const base: RuntimeOptions = {
  model: { provider: 'scripted', script: { steps: [{ content: 'done' }] } },
  workspace: '/tmp',
  grants: ['read'],
};

function refusal(options: Partial<RuntimeOptions> & Record<string, unknown>): string {
  try {
    new Runtime({ ...base, ...options } as RuntimeOptions);
  } catch (error) {
    expect(isTroupeError(error, 'usage.invalid_option')).toBe(true);
    return (error as Error).message;
  }
  throw new Error('the Runtime was built');
}

describe('RuntimeOptions validation', () => {
  it('refuses maxActorsPerThread: 0, which used to leave a spawned actor pending until close()', () => {
    const message = refusal({ maxActorsPerThread: 0 });
    expect(message).toContain('maxActorsPerThread');
    expect(message).toContain('>=1');
    expect(message).toContain('got 0');
  });

  it("refuses threads: 0, which used to surface as piscina's raw TypeError at the first spawn", () => {
    const message = refusal({ threads: 0 });
    expect(message).toContain('threads');
    expect(message).toContain('got 0');
  });

  it('names each bad option and its value', () => {
    expect(refusal({ threads: 2.5 })).toMatch(/threads: .*expected int.*got 2\.5/);
    expect(refusal({ workspace: 'relative/dir' })).toMatch(
      /workspace: must be an absolute path \(got "relative\/dir"\)/,
    );
    expect(refusal({ grants: ['read', 'root'] as never })).toMatch(/grants\.1: .*got "root"/);
    expect(refusal({ cancelGraceMs: -1 })).toMatch(/cancelGraceMs: .*got -1/);
    expect(refusal({ budget: { tokens: 0 } })).toMatch(/budget\.tokens: .*got 0/);
    expect(refusal({ budget: { softRatio: 2 } })).toMatch(/budget\.softRatio: .*got 2/);
    expect(refusal({ runId: '../escape' })).toMatch(/runId: .*got "\.\.\/escape"/);
    expect(refusal({ maxQueued: Number.NaN })).toMatch(/maxQueued: .*got NaN/);
    expect(refusal({ model: { provider: 'nope' } as never })).toMatch(/model\.provider/);
    expect(refusal({ prices: { m: { inputPerMTok: -1, outputPerMTok: 1 } } })).toMatch(
      /prices\.m\.inputPerMTok: .*got -1/,
    );
  });

  it('reports every problem at once', () => {
    const message = refusal({ threads: 0, maxActorsPerThread: 0, workspace: 'x' });
    expect(message).toContain('threads');
    expect(message).toContain('maxActorsPerThread');
    expect(message).toContain('workspace');
  });

  it('accepts good options without starting anything', async () => {
    const runtime = new Runtime({
      ...base,
      threads: 1,
      maxActorsPerThread: 1,
      maxQueued: 0,
      cancelGraceMs: 0,
    });
    await runtime.close();
  });
});
