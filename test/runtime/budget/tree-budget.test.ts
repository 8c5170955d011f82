import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../../src/errors.js';
import { TreeBudget } from '../../../src/runtime/budget/tree-budget.js';

describe('TreeBudget', () => {
  it('reports the soft limit once and then the hard limit once', () => {
    const budget = new TreeBudget({ tokens: 100, softRatio: 0.5 });
    expect(budget.check({ tokens: 10, costUsd: 0, elapsedMs: 0 })).toEqual([]);
    expect(budget.check({ tokens: 60, costUsd: 0, elapsedMs: 0 })).toEqual([
      { kind: 'warning', metric: 'tokens', used: 60, limit: 50 },
    ]);
    expect(budget.check({ tokens: 70, costUsd: 0, elapsedMs: 0 })).toEqual([]);
    expect(budget.exceeded).toBeUndefined();
    const hard = budget.check({ tokens: 120, costUsd: 0, elapsedMs: 0 });
    expect(hard).toEqual([{ kind: 'exceeded', metric: 'tokens', used: 120, limit: 100 }]);
    expect(budget.exceeded).toEqual(hard[0]);
    expect(budget.check({ tokens: 200, costUsd: 0, elapsedMs: 0 })).toEqual([]);
  });

  it('watches cost and time as well as tokens', () => {
    const budget = new TreeBudget({ costUsd: 1, timeMs: 1000 });
    const crossings = budget.check({ tokens: 0, costUsd: 2, elapsedMs: 900 });
    expect(crossings.map((c) => `${c.kind}:${c.metric}`)).toEqual([
      'warning:cost',
      'exceeded:cost',
      'warning:time',
    ]);
    expect(budget.exceeded?.metric).toBe('cost');
  });

  it('throws usage.invalid_option for a limit that is not positive', () => {
    let error: unknown;
    try {
      new TreeBudget({ tokens: 0 });
    } catch (caught) {
      error = caught;
    }
    expect(isTroupeError(error, 'usage.invalid_option')).toBe(true);
    expect(new TreeBudget().active).toBe(false);
  });
});
