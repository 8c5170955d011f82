import { addUsage, emptyUsage, totalTokens, type Usage } from '../../model/types.js';

/** Price of one model, in US dollars per million tokens. */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
}

/** Usage totals of one agent, a subtree or the whole run. */
export interface UsageTotals {
  usage: Usage;
  /** Input plus output tokens. */
  tokens: number;
  /** From the price table; 0 for models without a price. */
  costUsd: number;
  /** Agent-time: the sum of each agent's wall time (running agents count up to now), in milliseconds. */
  timeMs: number;
  /** Agents counted. */
  agents: number;
}

interface Entry {
  parentId: string | undefined;
  model: string;
  usage: Usage;
  costUsd: number;
  startedAt: number;
  finishedAt: number | undefined;
  children: Set<string>;
}

/**
 * Attributes usage to agents and sums it per agent, per subtree and for the
 * run, while the run goes on. Cost comes from a price table keyed by model
 * name; an agent's time is its wall time from spawn to finish.
 */
export class UsageLedger {
  readonly #prices: Readonly<Record<string, ModelPrice>>;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  #total: Usage = emptyUsage();
  #totalCost = 0;

  constructor(prices: Readonly<Record<string, ModelPrice>> = {}, now: () => number = Date.now) {
    this.#prices = prices;
    this.#now = now;
  }

  /** Starts counting an agent (idempotent); `model` names its price. */
  register(agentId: string, parentId: string | undefined, model: string): void {
    if (this.#entries.has(agentId)) return;
    this.#entries.set(agentId, {
      parentId,
      model,
      usage: emptyUsage(),
      costUsd: 0,
      startedAt: this.#now(),
      finishedAt: undefined,
      children: new Set(),
    });
    if (parentId !== undefined) this.#entries.get(parentId)?.children.add(agentId);
  }

  /** Adds one model call's usage to `agentId`; returns its cost. Unknown agents are registered as roots. */
  record(agentId: string, usage: Usage): number {
    if (!this.#entries.has(agentId)) this.register(agentId, undefined, 'unknown');
    const entry = this.#entries.get(agentId) as Entry;
    const price = this.#prices[entry.model];
    const cost =
      price === undefined
        ? 0
        : (usage.inputTokens * price.inputPerMTok + usage.outputTokens * price.outputPerMTok) / 1e6;
    entry.usage = addUsage(entry.usage, usage);
    entry.costUsd += cost;
    this.#total = addUsage(this.#total, usage);
    this.#totalCost += cost;
    return cost;
  }

  /** The price of `agentId`'s model, when the table has one. */
  priceOf(agentId: string): ModelPrice | undefined {
    const entry = this.#entries.get(agentId);
    return entry === undefined ? undefined : this.#prices[entry.model];
  }

  /** Stops an agent's clock. */
  finish(agentId: string): void {
    const entry = this.#entries.get(agentId);
    if (entry !== undefined && entry.finishedAt === undefined) entry.finishedAt = this.#now();
  }

  /** One agent's own totals (its descendants not included). */
  self(agentId: string): UsageTotals {
    const entry = this.#entries.get(agentId);
    if (entry === undefined) return zeroTotals();
    return totalsOf([entry], this.#now());
  }

  /** An agent's totals with all its descendants. */
  subtree(agentId: string): UsageTotals {
    const entries: Entry[] = [];
    const stack = [agentId];
    while (stack.length > 0) {
      const entry = this.#entries.get(stack.pop() as string);
      if (entry === undefined) continue;
      entries.push(entry);
      stack.push(...entry.children);
    }
    return totalsOf(entries, this.#now());
  }

  /** The whole run's totals. */
  total(): UsageTotals {
    const totals = totalsOf([...this.#entries.values()], this.#now());
    // The running sums are exact; the per-entry pass only adds the time.
    return {
      ...totals,
      usage: this.#total,
      tokens: totalTokens(this.#total),
      costUsd: this.#totalCost,
    };
  }

  /** Tokens and cost of the run so far, cheaply (for budget checks on every call). */
  spent(): { tokens: number; costUsd: number } {
    return { tokens: totalTokens(this.#total), costUsd: this.#totalCost };
  }
}

function zeroTotals(): UsageTotals {
  return { usage: emptyUsage(), tokens: 0, costUsd: 0, timeMs: 0, agents: 0 };
}

function totalsOf(entries: readonly Entry[], now: number): UsageTotals {
  const totals = zeroTotals();
  for (const entry of entries) {
    totals.usage = addUsage(totals.usage, entry.usage);
    totals.costUsd += entry.costUsd;
    totals.timeMs += (entry.finishedAt ?? now) - entry.startedAt;
    totals.agents += 1;
  }
  totals.tokens = totalTokens(totals.usage);
  return totals;
}
