import { describe, expect, it } from 'vitest';
import { UsageLedger } from '../../../src/runtime/budget/usage-ledger.js';

describe('UsageLedger', () => {
  it('sums per agent, per subtree and for the run, with cost from the price table', () => {
    let now = 0;
    const ledger = new UsageLedger({ big: { inputPerMTok: 3, outputPerMTok: 15 } }, () => now);
    ledger.register('coordinator', undefined, 'big');
    ledger.register('researcher-1', 'coordinator', 'big');
    ledger.register('researcher-2', 'coordinator', 'small');
    ledger.register('helper-1', 'researcher-1', 'small');
    ledger.record('coordinator', { inputTokens: 1_000_000, outputTokens: 0 });
    ledger.record('researcher-1', { inputTokens: 0, outputTokens: 1_000_000 });
    ledger.record('researcher-2', { inputTokens: 10, outputTokens: 5 });
    ledger.record('helper-1', { inputTokens: 1, outputTokens: 1 });
    now = 10;

    expect(ledger.self('coordinator').costUsd).toBe(3);
    expect(ledger.subtree('researcher-1')).toMatchObject({
      tokens: 1_000_002,
      costUsd: 15,
      agents: 2,
    });
    const total = ledger.total();
    expect(total.tokens).toBe(2_000_017);
    expect(total.costUsd).toBe(18);
    expect(ledger.subtree('coordinator').tokens).toBe(total.tokens);
    expect(ledger.subtree('coordinator').timeMs).toBe(40);
  });

  it('stops an agent clock when it finishes', () => {
    let now = 0;
    const ledger = new UsageLedger({}, () => now);
    ledger.register('a-1', undefined, 'scripted');
    now = 5;
    ledger.finish('a-1');
    now = 50;
    expect(ledger.self('a-1').timeMs).toBe(5);
  });

  it('counts usage of an agent it never saw as a root', () => {
    const ledger = new UsageLedger();
    ledger.record('stray', { inputTokens: 2, outputTokens: 3 });
    expect(ledger.self('stray').tokens).toBe(5);
    expect(ledger.spent()).toEqual({ tokens: 5, costUsd: 0 });
  });
});
