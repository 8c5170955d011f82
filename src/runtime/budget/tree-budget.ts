import { TroupeError } from '../../errors.js';

/** One budget for a whole agent tree, shared by parallel children. */
export interface TreeBudgetLimits {
  /** Input plus output tokens of every agent. */
  tokens?: number | undefined;
  /** Cost from the price table, in US dollars. */
  costUsd?: number | undefined;
  /** Wall time since the runtime started, in milliseconds. */
  timeMs?: number | undefined;
  /** Fraction of a limit at which `budget.warning` is emitted (default 0.8). */
  softRatio?: number | undefined;
  /**
   * Share of the token and cost limits kept for the coordinator's last turn:
   * no other call may use it (default 0.15; 0 keeps none).
   */
  lastTurnShare?: number | undefined;
}

/** A limit crossing, reported once per metric and kind. */
export interface BudgetCrossing {
  kind: 'warning' | 'exceeded';
  metric: 'tokens' | 'cost' | 'time';
  used: number;
  limit: number;
}

/** What a tree has spent so far. */
export interface TreeSpending {
  tokens: number;
  costUsd: number;
  elapsedMs: number;
}

/**
 * Watches a tree's spending against its limits. Each crossing is reported
 * once: the soft limit as a warning, the hard limit as exceeded. Once any
 * hard limit is reached, `exceeded` stays true.
 */
export class TreeBudget {
  readonly limits: Readonly<TreeBudgetLimits>;
  readonly #softRatio: number;
  readonly #reported = new Set<string>();
  #exceeded: BudgetCrossing | undefined;

  constructor(limits: TreeBudgetLimits = {}) {
    for (const key of ['tokens', 'costUsd', 'timeMs'] as const) {
      const value = limits[key];
      if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
        throw new TroupeError(
          'usage.invalid_option',
          `budget.${key} must be a positive number, got ${value}.`,
        );
      }
    }
    const softRatio = limits.softRatio ?? 0.8;
    if (!(softRatio > 0 && softRatio <= 1)) {
      throw new TroupeError(
        'usage.invalid_option',
        `budget.softRatio must be in (0, 1], got ${softRatio}.`,
      );
    }
    const share = limits.lastTurnShare;
    if (share !== undefined && !(share >= 0 && share < 1)) {
      throw new TroupeError(
        'usage.invalid_option',
        `budget.lastTurnShare must be in [0, 1), got ${share}.`,
      );
    }
    this.limits = { ...limits };
    this.#softRatio = softRatio;
  }

  /** True when the tree has any limit. */
  get active(): boolean {
    const { tokens, costUsd, timeMs } = this.limits;
    return tokens !== undefined || costUsd !== undefined || timeMs !== undefined;
  }

  /** The first hard limit reached, if any. */
  get exceeded(): BudgetCrossing | undefined {
    return this.#exceeded;
  }

  /** New crossings since the last check, warnings first. */
  check(spending: TreeSpending): BudgetCrossing[] {
    const crossings: BudgetCrossing[] = [];
    const metrics = [
      ['tokens', spending.tokens, this.limits.tokens],
      ['cost', spending.costUsd, this.limits.costUsd],
      ['time', spending.elapsedMs, this.limits.timeMs],
    ] as const;
    for (const [metric, used, limit] of metrics) {
      if (limit === undefined) continue;
      if (used >= limit * this.#softRatio)
        this.#report(crossings, { kind: 'warning', metric, used, limit: limit * this.#softRatio });
      if (used >= limit) {
        const crossing: BudgetCrossing = { kind: 'exceeded', metric, used, limit };
        if (this.#report(crossings, crossing)) this.#exceeded ??= crossing;
      }
    }
    return crossings;
  }

  /**
   * Records a hard limit reached by other means than spending past it: the
   * next model call does not fit in what is left. Returns false when a hard
   * limit was already reached (it stays the first).
   */
  exceed(crossing: BudgetCrossing): boolean {
    if (this.#exceeded !== undefined) return false;
    // The warning would come after the stop: it says nothing more.
    this.#reported.add(`warning:${crossing.metric}`);
    this.#reported.add(`exceeded:${crossing.metric}`);
    this.#exceeded = crossing;
    return true;
  }

  #report(into: BudgetCrossing[], crossing: BudgetCrossing): boolean {
    const key = `${crossing.kind}:${crossing.metric}`;
    if (this.#reported.has(key)) return false;
    this.#reported.add(key);
    into.push(crossing);
    return true;
  }
}
