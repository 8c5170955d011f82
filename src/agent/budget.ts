import { TroupeError } from '../errors.js';
import { addUsage, emptyUsage, totalTokens, type Usage } from '../model/types.js';

/** Token limits for one agent run. */
export interface TokenBudgetLimits {
  /** Past this many tokens a `budget.warning` event is emitted, once. */
  softTokens?: number | undefined;
  /** At this many tokens the run stops cleanly with stopReason `budget`. */
  hardTokens?: number | undefined;
}

/** What recording a usage did to the budget. */
export type BudgetState = 'ok' | 'warning' | 'exceeded';

/**
 * Sums usage over one run and says when a limit is crossed. `warning` is
 * returned once, on the call that crosses the soft limit; `exceeded` on every
 * call at or past the hard limit.
 */
export class TokenBudget {
  readonly soft: number | undefined;
  readonly hard: number | undefined;
  #usage: Usage = emptyUsage();
  #warned = false;

  constructor(limits: TokenBudgetLimits = {}) {
    const { softTokens, hardTokens } = limits;
    checkLimit('softTokens', softTokens);
    checkLimit('hardTokens', hardTokens);
    this.soft = softTokens;
    this.hard = hardTokens;
  }

  /** Usage recorded so far. */
  get usage(): Usage {
    return this.#usage;
  }

  /** Tokens recorded so far. */
  get used(): number {
    return totalTokens(this.#usage);
  }

  /** True when the hard limit has been reached. */
  get exceeded(): boolean {
    return this.hard !== undefined && this.used >= this.hard;
  }

  /** Adds one call's usage and reports the state it leaves the budget in. */
  record(usage: Usage): BudgetState {
    this.#usage = addUsage(this.#usage, usage);
    if (this.exceeded) return 'exceeded';
    if (this.soft !== undefined && !this.#warned && this.used >= this.soft) {
      this.#warned = true;
      return 'warning';
    }
    return 'ok';
  }
}

function checkLimit(name: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isFinite(value) || value <= 0)) {
    throw new TroupeError(
      'usage.invalid_option',
      `budget.${name} must be a positive number of tokens, got ${value}.`,
    );
  }
}
