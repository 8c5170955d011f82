import { describe, expect, it } from 'vitest';
import { createModel, raisesWarnings } from '../../src/model/model.js';

// The warning scope (AsyncLocalStorage, promise hooks on in its thread) is
// entered only for an agent whose model can print a warning: an SDK's.
describe('raisesWarnings', () => {
  it('is false for the models troupe implements without an SDK', () => {
    expect(raisesWarnings(createModel({ provider: 'scripted', script: { steps: [] } }))).toBe(
      false,
    );
    expect(raisesWarnings(createModel({ provider: 'offline' }))).toBe(false);
  });

  it('is true for the SDK providers and for a model troupe does not know', () => {
    const env = { OPENAI_API_KEY: 'test-key-0000', ANTHROPIC_API_KEY: 'test-key-0000' };
    expect(raisesWarnings(createModel({ provider: 'openai', model: 'gpt-4.1' }, env))).toBe(true);
    expect(
      raisesWarnings(createModel({ provider: 'anthropic', model: 'claude-sonnet-4-5' }, env)),
    ).toBe(true);
    const custom = {
      spec: { provider: 'scripted' as const, script: { steps: [] } },
      complete: () => Promise.reject(new Error('unused')),
      stream: () => ({
        [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('unused')) }),
      }),
    };
    expect(raisesWarnings(custom)).toBe(true);
  });
});
