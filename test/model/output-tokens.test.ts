import { describe, expect, it } from 'vitest';
import { outputTokenLimits } from '../../src/model/output-tokens.js';

describe('outputTokenLimits', () => {
  it("wants the spec's maxTokens, or a default a budget can hold, and at least 256 output tokens", () => {
    expect(outputTokenLimits({ provider: 'openai', model: 'm' })).toEqual({
      wanted: 4096,
      minimum: 256,
    });
    expect(outputTokenLimits({ provider: 'openai', model: 'm', maxTokens: 100 })).toEqual({
      wanted: 100,
      minimum: 100,
    });
    expect(outputTokenLimits({ provider: 'offline' })).toEqual({ wanted: 4096, minimum: 256 });
  });

  it('counts a fixed thinking budget in what an Anthropic call wants and needs', () => {
    expect(
      outputTokenLimits({ provider: 'anthropic', model: 'm', thinking: { budgetTokens: 2048 } }),
    ).toEqual({ wanted: 4096 + 2048, minimum: 1024 + 256 });
    expect(
      outputTokenLimits({
        provider: 'anthropic',
        model: 'm',
        thinking: { budgetTokens: 2048, adaptive: true },
      }),
    ).toEqual({ wanted: 4096 + 2048, minimum: 256 });
  });
});
