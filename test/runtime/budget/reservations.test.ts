import { describe, expect, it } from 'vitest';
import {
  BudgetReservations,
  LAST_TURN_OUTPUT_TOKENS,
  type ReservationAnswer,
  type ReservationDeps,
} from '../../../src/runtime/budget/reservations.js';
import type { BudgetCrossing } from '../../../src/runtime/budget/tree-budget.js';
import type { ModelPrice } from '../../../src/runtime/budget/usage-ledger.js';

/** A run's spending as the ledger would report it, and the crossings the reservations raised. */
function world(options: Partial<ReservationDeps> & { prices?: Record<string, ModelPrice> } = {}) {
  const spent = { tokens: 0, costUsd: 0 };
  const crossings: BudgetCrossing[] = [];
  const reservations = new BudgetReservations({
    tokens: 10_000,
    costUsd: undefined,
    lastTurnShare: 0,
    spent: () => ({ ...spent }),
    price: (agentId) => options.prices?.[agentId],
    exhausted: (crossing) => crossings.push(crossing),
    ...options,
  });
  return { reservations, spent, crossings };
}

const ask = { promptTokens: 1000, maxTokens: 4096, minTokens: 256 };

function granted(answer: ReservationAnswer): { id: number; maxTokens: number } {
  if (!answer.ok) throw new Error(`refused: ${answer.reason}`);
  return answer;
}

describe('BudgetReservations', () => {
  it('gives a call its max_tokens when the budget has room for its prompt and output', async () => {
    const { reservations } = world();
    const answer = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    expect(answer.maxTokens).toBe(4096);
    expect(reservations.heldTokens).toBe(5096);
  });

  it('caps max_tokens by what is left after the calls in flight and what was spent', async () => {
    const { reservations, spent } = world();
    spent.tokens = 2000;
    granted(await reservations.reserve({ ...ask, agentId: 'a' })); // holds 5,096
    const second = granted(await reservations.reserve({ ...ask, agentId: 'b' }));
    // 10,000 - 2,000 spent - 5,096 held - 1,000 prompt.
    expect(second.maxTokens).toBe(1904);
    expect(spent.tokens + reservations.heldTokens).toBe(10_000);
  });

  it('makes a call that does not fit wait for the calls in flight, then gives it the room they left', async () => {
    const { reservations, spent } = world();
    const first = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    const second = granted(await reservations.reserve({ ...ask, agentId: 'b' }));
    let third: ReservationAnswer | undefined;
    const waiting = reservations.reserve({ ...ask, agentId: 'c' }).then((answer) => {
      third = answer;
    });
    await Promise.resolve();
    expect(third).toBeUndefined();
    // The first call used 1,000 prompt + 300 output: its unused room comes back.
    spent.tokens += 1300;
    reservations.settle(first.id, { inputTokens: 1000, outputTokens: 300 });
    await waiting;
    expect(granted(third as ReservationAnswer).maxTokens).toBe(
      10_000 - 1300 - (1000 + second.maxTokens) - 1000,
    );
  });

  it('refuses a call that cannot fit when nothing is in flight, once says the budget is exhausted, and refuses every later call', async () => {
    const { reservations, spent, crossings } = world();
    spent.tokens = 8900;
    const answer = await reservations.reserve({ ...ask, agentId: 'a' });
    expect(answer).toMatchObject({ ok: false });
    expect(answer.ok ? '' : answer.reason).toBe(
      "The run's token budget has no room for this model call: it needs about 1,000 prompt tokens and at least 256 output tokens, and 8,900 of 10,000 tokens are used.",
    );
    expect(crossings).toEqual([{ kind: 'exceeded', metric: 'tokens', used: 8900, limit: 10_000 }]);
    // A small call would fit, but the run's work is over.
    const small = await reservations.reserve({
      promptTokens: 10,
      maxTokens: 100,
      minTokens: 10,
      agentId: 'b',
    });
    expect(small.ok).toBe(false);
    expect(crossings).toHaveLength(1);
  });

  it('refuses the waiting calls when the last call in flight gives back too little', async () => {
    const { reservations, spent, crossings } = world();
    spent.tokens = 4000;
    const first = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    const waiting = reservations.reserve({ ...ask, agentId: 'b' });
    spent.tokens += 1000 + first.maxTokens; // the first call used all of its room
    reservations.settle(first.id, { inputTokens: 1000, outputTokens: first.maxTokens });
    expect((await waiting).ok).toBe(false);
    expect(crossings).toHaveLength(1);
  });

  it('keeps room for the coordinator last turn: its prompt plus an answer, which only the last turn may use', async () => {
    const { reservations, spent } = world({ lastTurnShare: 0.15 });
    // The coordinator's call sizes what is kept: 3,000 prompt + 1,024 output (more than 15%).
    granted(
      await reservations.reserve({
        ...ask,
        promptTokens: 3000,
        agentId: 'coordinator',
        root: true,
      }),
    );
    reservations.settle(1, { inputTokens: 3000, outputTokens: 100 });
    spent.tokens = 3100;
    const kept = 3000 + LAST_TURN_OUTPUT_TOKENS;
    const worker = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    expect(worker.maxTokens).toBe(10_000 - kept - 3100 - 1000);
    reservations.settle(worker.id, { inputTokens: 1000, outputTokens: worker.maxTokens });
    spent.tokens += 1000 + worker.maxTokens;
    expect((await reservations.reserve({ ...ask, agentId: 'b' })).ok).toBe(false);
    const last = granted(
      await reservations.reserve({
        ...ask,
        promptTokens: 3200,
        agentId: 'coordinator',
        root: true,
        lastTurn: true,
      }),
    );
    expect(last.maxTokens).toBe(kept - 3200);
    expect(spent.tokens + reservations.heldTokens).toBe(10_000);
  });

  it('charges a call lost in flight its prompt, and gives back the room of one that failed with an answer', async () => {
    const { reservations } = world();
    const lost = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    const refused = granted(await reservations.reserve({ ...ask, agentId: 'b' }));
    reservations.settle(lost.id, 'aborted');
    reservations.settle(refused.id, 'failed');
    expect(reservations.heldTokens).toBe(0);
    expect(reservations.unmeteredTokens).toBe(1000);
    const next = granted(await reservations.reserve({ ...ask, agentId: 'c' }));
    expect(next.maxTokens).toBe(4096);
    expect(reservations.heldTokens).toBe(5096);
  });

  it('answers a waiting call as refused when its signal aborts, and releases a finished agent', async () => {
    const { reservations } = world({ tokens: 6000 });
    const held = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    const controller = new AbortController();
    const waiting = reservations.reserve({ ...ask, agentId: 'b' }, controller.signal);
    controller.abort();
    expect(await waiting).toMatchObject({ ok: false });
    // Settling with another agent's name does nothing.
    reservations.settle(held.id, 'failed', 'b');
    expect(reservations.heldTokens).toBe(1000 + held.maxTokens);
    reservations.release('a');
    expect(reservations.heldTokens).toBe(0);
    expect(reservations.unmeteredTokens).toBe(1000);
  });

  it('converts a cost limit into output tokens at the model price', async () => {
    const { reservations, crossings } = world({
      tokens: undefined,
      costUsd: 0.01,
      prices: { a: { inputPerMTok: 1, outputPerMTok: 4 } },
    });
    // $0.01 - 1,000 prompt tokens at $1/MTok = $0.009, at $4/MTok = 2,250 output tokens.
    const answer = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    expect(answer.maxTokens).toBe(2250);
    reservations.settle(answer.id, 'aborted');
    // The lost call's prompt is charged ($0.001): $0.01 - 0.001 - 0.001 prompt = $0.008 -> 2,000.
    const next = granted(await reservations.reserve({ ...ask, agentId: 'a' }));
    expect(next.maxTokens).toBe(2000);
    expect(crossings).toEqual([]);
  });
});
