import type { CallAllowance } from '../../agent/allowance.js';
import type { Unsubscribe } from '../../events/bus.js';
import type { EventPayload } from '../../events/schema.js';
import { BudgetReservations } from './reservations.js';
import { type BudgetCrossing, TreeBudget, type TreeBudgetLimits } from './tree-budget.js';
import type { UsageLedger } from './usage-ledger.js';

/** What the guard needs from the runtime. */
export interface BudgetGuardDeps {
  limits: TreeBudgetLimits | undefined;
  ledger: UsageLedger;
  emit(agentId: string, payload: EventPayload): void;
  /** Stops everything live; called once, at the hard limit, before the listeners. */
  exhaust(crossing: BudgetCrossing): void;
  /** Who a crossing without a cause (the wall clock) is reported for. */
  rootId(): string;
}

/**
 * The tree budget in action: every model call of a token- or cost-budgeted
 * run reserves its room first (BudgetReservations), so its `max_tokens` is
 * capped by what is left and a call that does not fit is not sent; after
 * each call's usage (and on timers for wall time) it checks the run's
 * spending, emits `budget.warning` and `budget.exceeded` (scope tree) once
 * each, and at the hard limit (or when no call fits any more) has the
 * runtime stop everything and tells its listeners (the coordinator's last turn).
 */
export class BudgetGuard {
  readonly #deps: BudgetGuardDeps;
  readonly #budget: TreeBudget;
  readonly #listeners = new Set<(crossing: BudgetCrossing) => void>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #startedAt = Date.now();
  readonly #reservations: BudgetReservations | undefined;

  constructor(deps: BudgetGuardDeps) {
    this.#deps = deps;
    this.#budget = new TreeBudget(deps.limits);
    const { tokens, costUsd, lastTurnShare } = this.#budget.limits;
    if (tokens !== undefined || costUsd !== undefined) {
      this.#reservations = new BudgetReservations({
        tokens,
        costUsd,
        lastTurnShare,
        spent: () => deps.ledger.spent(),
        price: (agentId) => deps.ledger.priceOf(agentId),
        exhausted: (crossing) => this.#exceed(crossing),
      });
    }
    const { timeMs, softRatio } = this.#budget.limits;
    if (timeMs === undefined) return;
    for (const delay of [timeMs * (softRatio ?? 0.8), timeMs]) {
      const timer = setTimeout(() => this.#check(deps.rootId()), delay);
      timer.unref();
      this.#timers.push(timer);
    }
  }

  /** The first hard limit reached, if any. */
  get exceeded(): BudgetCrossing | undefined {
    return this.#budget.exceeded;
  }

  /** Wall time since the runtime was made, in milliseconds. */
  get elapsedMs(): number {
    return Date.now() - this.#startedAt;
  }

  /** True when model calls reserve their room (a token or cost limit is set). */
  get reserves(): boolean {
    return this.#reservations !== undefined;
  }

  /**
   * Where `agentId`'s model calls reserve their room (undefined without a
   * token or cost limit). `lastTurn` may use the share kept for the
   * coordinator's last turn.
   */
  allowance(
    agentId: string,
    options: { lastTurn?: boolean; root?: boolean } = {},
  ): CallAllowance | undefined {
    const reservations = this.#reservations;
    if (reservations === undefined) return undefined;
    return {
      reserve: async (ask, signal) => {
        const answer = await reservations.reserve(
          { ...ask, agentId, lastTurn: options.lastTurn, root: options.root },
          signal,
        );
        if (!answer.ok) return answer;
        return {
          ok: true,
          maxTokens: answer.maxTokens,
          settle: (outcome) => reservations.settle(answer.id, outcome),
        };
      },
    };
  }

  /** The reservations behind the allowances (a worker's calls reserve through the host link). */
  get reservations(): BudgetReservations | undefined {
    return this.#reservations;
  }

  /** Calls `listener` once when the hard limit is reached. */
  onExceeded(listener: (crossing: BudgetCrossing) => void): Unsubscribe {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** `agentId` just spent: check the budget (right after the current event reached every listener). */
  spent(agentId: string): void {
    // Not from inside a bus listener: events this causes must follow the one being delivered.
    if (this.#budget.active) queueMicrotask(() => this.#check(agentId));
  }

  /** Stops the wall-clock timers. */
  close(): void {
    for (const timer of this.#timers) clearTimeout(timer);
  }

  #check(agentId: string): void {
    const spending = { ...this.#deps.ledger.spent(), elapsedMs: this.elapsedMs };
    for (const crossing of this.#budget.check(spending)) {
      const { kind, metric, used, limit } = crossing;
      const type = kind === 'warning' ? 'budget.warning' : 'budget.exceeded';
      this.#deps.emit(agentId, { type, scope: 'tree', metric, used, limit });
      if (kind === 'exceeded' && this.#budget.exceeded === crossing) {
        if (metric !== 'time') this.#reservations?.markExhausted();
        this.#exhaust(crossing);
      }
    }
  }

  // No model call fits in what is left: the hard limit, reached before it is spent past.
  #exceed(crossing: BudgetCrossing): void {
    if (!this.#budget.exceed(crossing)) return;
    const { metric, used, limit } = crossing;
    this.#deps.emit(this.#deps.rootId(), {
      type: 'budget.exceeded',
      scope: 'tree',
      metric,
      used,
      limit,
    });
    this.#exhaust(crossing);
  }

  #exhaust(crossing: BudgetCrossing): void {
    this.#deps.exhaust(crossing);
    for (const listener of this.#listeners) {
      try {
        listener(crossing);
      } catch {
        // One listener's failure must not keep the others from hearing it.
      }
    }
  }
}
