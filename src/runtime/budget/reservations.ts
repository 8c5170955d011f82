import type { CallAsk, CallOutcome } from '../../agent/allowance.js';
import { groupDigits } from '../../util/text-order.js';
import type { BudgetCrossing } from './tree-budget.js';
import type { ModelPrice } from './usage-ledger.js';

/** Share of a token or cost limit held back for the coordinator's last turn (default). */
export const DEFAULT_LAST_TURN_SHARE = 0.15;

/** Output tokens the room kept for the last turn allows besides the coordinator's prompt. */
export const LAST_TURN_OUTPUT_TOKENS = 1024;

// The room kept for the last turn never takes more than this share of the limit.
const MAX_LAST_TURN_SHARE = 0.5;

/** One call's ask, with who makes it. */
export interface ReservationRequest extends CallAsk {
  agentId: string;
  /** The coordinator's last turn: it may use the share held back for it. */
  lastTurn?: boolean | undefined;
  /** A call of the coordinator: its prompt sizes the room kept for its last turn. */
  root?: boolean | undefined;
}

/** Room for the call (its id settles it), or why there is none. */
export type ReservationAnswer =
  | { ok: true; id: number; maxTokens: number }
  | { ok: false; reason: string };

/** What the reservations read from the run. */
export interface ReservationDeps {
  /** Token and cost limits of the tree (either may be absent). */
  tokens: number | undefined;
  costUsd: number | undefined;
  /** Share of each limit only the coordinator's last turn may use (default DEFAULT_LAST_TURN_SHARE). */
  lastTurnShare?: number | undefined;
  /** What the run has spent, as providers reported it. */
  spent(): { tokens: number; costUsd: number };
  /** The price of `agentId`'s model, when the run has one. */
  price(agentId: string): ModelPrice | undefined;
  /** No call but the last turn fits any more: called once, before the refusal is answered. */
  exhausted(crossing: BudgetCrossing): void;
}

interface Held {
  agentId: string;
  promptTokens: number;
  tokens: number;
  promptCostUsd: number;
  costUsd: number;
}

interface Waiting {
  request: ReservationRequest;
  resolve(answer: ReservationAnswer): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * The tree budget's room, handed out one model call at a time: a call
 * reserves its estimated prompt plus its `max_tokens` before it is sent, so
 * the calls in flight together can never promise more than the budget has
 * left. `max_tokens` is cut to the room there is (never below the call's
 * minimum); a call that does not fit waits while other calls hold room and
 * is refused when nothing is in flight, which ends the run's work
 * (`exhausted`). A share of the limit is held back for the coordinator's
 * last turn. When a call ends its reservation is replaced by the usage the
 * provider reported (read from the ledger); a call lost in flight is charged
 * its prompt estimate, since the provider may have billed it.
 */
export class BudgetReservations {
  readonly #deps: ReservationDeps;
  readonly #share: number;
  readonly #held = new Map<number, Held>();
  readonly #queue: Waiting[] = [];
  #nextId = 1;
  #unmeteredTokens = 0;
  #unmeteredCostUsd = 0;
  #exhausted = false;
  // Running sums of what the calls in flight hold (thousands of agents may ask at once).
  #heldTokens = 0;
  #heldCostUsd = 0;
  // The largest prompt the coordinator sent: its last turn resends it and more.
  #rootPromptTokens = 0;

  constructor(deps: ReservationDeps) {
    this.#deps = deps;
    this.#share = deps.lastTurnShare ?? DEFAULT_LAST_TURN_SHARE;
  }

  /** True once no call but the coordinator's last turn is given room. */
  get exhausted(): boolean {
    return this.#exhausted;
  }

  /** Tokens promised to calls in flight (prompt estimates plus max_tokens). */
  get heldTokens(): number {
    return this.#heldTokens;
  }

  /** Tokens charged for calls lost in flight (not in the ledger). */
  get unmeteredTokens(): number {
    return this.#unmeteredTokens;
  }

  /**
   * Reserves room for one call. Resolves at once when it fits or cannot
   * ever fit; waits while other calls hold the room it needs. An abort of
   * `signal` while it waits resolves it as refused.
   */
  reserve(request: ReservationRequest, signal?: AbortSignal): Promise<ReservationAnswer> {
    if (signal?.aborted === true) return Promise.resolve(aborted());
    if (this.#queue.length === 0) {
      const answer = this.#try(request);
      if (answer !== undefined) return Promise.resolve(answer);
    }
    return new Promise((resolve) => {
      const waiting: Waiting = { request, resolve, signal, onAbort: undefined };
      if (signal !== undefined) {
        waiting.onAbort = () => {
          const index = this.#queue.indexOf(waiting);
          if (index < 0) return;
          this.#queue.splice(index, 1);
          resolve(aborted());
          this.#drain();
        };
        signal.addEventListener('abort', waiting.onAbort, { once: true });
      }
      this.#queue.push(waiting);
    });
  }

  /**
   * The call of reservation `id` ended; unknown ids (settled, released) and
   * another agent's are ignored.
   */
  settle(id: number, outcome: CallOutcome, agentId?: string): void {
    const held = this.#held.get(id);
    if (held === undefined || (agentId !== undefined && held.agentId !== agentId)) return;
    this.#drop(id, held);
    // A reported usage is in the ledger by now (model.response comes first).
    if (outcome === 'aborted') this.#charge(held);
    this.#drain();
  }

  /** `agentId` is gone: its calls in flight are charged their prompts, its waiting asks refused. */
  release(agentId: string): void {
    for (const [id, held] of this.#held) {
      if (held.agentId !== agentId) continue;
      this.#drop(id, held);
      this.#charge(held);
    }
    for (const waiting of [...this.#queue]) {
      if (waiting.request.agentId !== agentId) continue;
      this.#answer(waiting, aborted());
    }
    this.#drain();
  }

  /** The tree budget's hard limit was reached some other way: no more room but the last turn's. */
  markExhausted(): void {
    this.#exhausted = true;
    this.#drain();
  }

  #drop(id: number, held: Held): void {
    this.#held.delete(id);
    this.#heldTokens -= held.tokens;
    this.#heldCostUsd -= held.costUsd;
  }

  #charge(held: Held): void {
    this.#unmeteredTokens += held.promptTokens;
    this.#unmeteredCostUsd += held.promptCostUsd;
  }

  // Hands room to waiting asks in order; the first that must wait keeps its place and those behind it.
  #drain(): void {
    while (this.#queue.length > 0) {
      const waiting = this.#queue[0] as Waiting;
      const answer = this.#try(waiting.request);
      if (answer === undefined) return;
      this.#answer(waiting, answer);
    }
  }

  #answer(waiting: Waiting, answer: ReservationAnswer): void {
    const index = this.#queue.indexOf(waiting);
    if (index >= 0) this.#queue.splice(index, 1);
    if (waiting.onAbort !== undefined)
      waiting.signal?.removeEventListener('abort', waiting.onAbort);
    waiting.resolve(answer);
  }

  // Room for the call, a refusal, or undefined: it must wait for calls in flight.
  #try(request: ReservationRequest): ReservationAnswer | undefined {
    const lastTurn = request.lastTurn === true;
    if (this.#exhausted && !lastTurn) return { ok: false, reason: this.#spentReason() };
    const spent = this.#deps.spent();
    const price = this.#deps.price(request.agentId);
    const minimum = Math.min(request.minTokens, request.maxTokens);
    let room = request.maxTokens;
    let limiting: 'tokens' | 'cost' | undefined;
    const { tokens, costUsd } = this.#deps;
    const keep = lastTurn ? 0 : this.#share;
    if (request.root === true && !lastTurn)
      this.#rootPromptTokens = Math.max(this.#rootPromptTokens, request.promptTokens);
    if (tokens !== undefined) {
      const left =
        tokens -
        this.#keptTokens(tokens, lastTurn) -
        spent.tokens -
        this.#unmeteredTokens -
        this.heldTokens -
        request.promptTokens;
      if (left < room) {
        room = Math.floor(left);
        limiting = 'tokens';
      }
    }
    // A model without a price costs nothing in the ledger, so only priced calls are held to a cost limit.
    if (costUsd !== undefined && price !== undefined && price.outputPerMTok > 0) {
      const heldCost = this.#heldCostUsd;
      const promptCost = (request.promptTokens * price.inputPerMTok) / 1e6;
      const left =
        costUsd * (1 - keep) - spent.costUsd - this.#unmeteredCostUsd - heldCost - promptCost;
      const affordable = Math.floor((left * 1e6) / price.outputPerMTok);
      if (affordable < room) {
        room = affordable;
        limiting = 'cost';
      }
    }
    if (room >= minimum) {
      const id = this.#nextId;
      this.#nextId += 1;
      const promptCostUsd =
        price === undefined ? 0 : (request.promptTokens * price.inputPerMTok) / 1e6;
      const held: Held = {
        agentId: request.agentId,
        promptTokens: request.promptTokens,
        tokens: request.promptTokens + room,
        promptCostUsd,
        costUsd: promptCostUsd + (price === undefined ? 0 : (room * price.outputPerMTok) / 1e6),
      };
      this.#held.set(id, held);
      this.#heldTokens += held.tokens;
      this.#heldCostUsd += held.costUsd;
      return { ok: true, id, maxTokens: room };
    }
    // Calls in flight will give room back: wait for them.
    if (this.#held.size > 0) return undefined;
    const metric = limiting ?? 'tokens';
    const reason = this.#noRoom(request, metric, spent, lastTurn);
    if (!lastTurn && !this.#exhausted) {
      this.#exhausted = true;
      const limit = (metric === 'cost' ? costUsd : tokens) ?? 0;
      const used =
        metric === 'cost'
          ? spent.costUsd + this.#unmeteredCostUsd
          : spent.tokens + this.#unmeteredTokens;
      this.#deps.exhausted({ kind: 'exceeded', metric, used, limit });
    }
    return { ok: false, reason };
  }

  // Kept for the coordinator's last turn: the share, or its last prompt plus
  // room for an answer when that is more (up to half the limit).
  #keptTokens(limit: number, lastTurn: boolean): number {
    if (lastTurn || this.#share === 0) return 0;
    // Without a coordinator (a runtime used alone) only the share is kept.
    const needed =
      this.#rootPromptTokens === 0 ? 0 : this.#rootPromptTokens + LAST_TURN_OUTPUT_TOKENS;
    return Math.min(Math.max(limit * this.#share, needed), limit * MAX_LAST_TURN_SHARE);
  }

  #noRoom(
    request: ReservationRequest,
    metric: 'tokens' | 'cost',
    spent: { tokens: number; costUsd: number },
    lastTurn: boolean,
  ): string {
    const what = lastTurn ? "the coordinator's last turn" : 'this model call';
    const needs = `it needs about ${count(request.promptTokens)} prompt tokens and at least ${count(Math.min(request.minTokens, request.maxTokens))} output tokens`;
    if (metric === 'cost') {
      const limit = this.#deps.costUsd ?? 0;
      return `The run's cost budget has no room for ${what}: ${needs}, and $${(spent.costUsd + this.#unmeteredCostUsd).toFixed(4)} of $${limit.toFixed(4)} is spent${lastTurn ? '' : ` (${Math.round(this.#share * 100)}% is kept for the coordinator's last turn)`}.`;
    }
    const limit = this.#deps.tokens ?? 0;
    const kept = this.#keptTokens(limit, lastTurn);
    return `The run's token budget has no room for ${what}: ${needs}, and ${count(spent.tokens + this.#unmeteredTokens)} of ${count(limit)} tokens are used${kept > 0 ? ` (${count(kept)} are kept for the coordinator's last turn)` : ''}.`;
  }

  #spentReason(): string {
    return "The run's budget is used up: no more model calls are made (only the coordinator's last turn).";
  }
}

function aborted(): ReservationAnswer {
  return { ok: false, reason: 'The call was cancelled while it waited for room in the budget.' };
}

function count(tokens: number): string {
  return groupDigits(Math.round(tokens));
}
