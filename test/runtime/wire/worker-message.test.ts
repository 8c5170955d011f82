import { describe, expect, it } from 'vitest';
import { parseWorkerMessage } from '../../../src/runtime/wire/protocol.js';

// A worker's batch: events pass through, hot items are checked by hand, the
// rest by a check compiled from their schema, with zod judging what it refuses.
describe('parseWorkerMessage', () => {
  const result = {
    type: 'actor.result',
    actorId: 'bencher-1',
    outcome: {
      stopReason: 'final',
      final: 'done',
      usage: { inputTokens: 30, outputTokens: 18 },
      steps: 3,
    },
  };

  it('keeps valid items of every kind, in order', () => {
    const turn = { type: 'actor.turn', actorId: 'bencher-1', final: 'done' };
    const failed = {
      ...result,
      outcome: {
        ...result.outcome,
        stopReason: 'error',
        error: { name: 'TroupeError', code: 'model.failed', message: 'no' },
      },
    };
    const { items, invalid } = parseWorkerMessage([turn, result, failed]);
    expect(invalid).toEqual([]);
    expect(items).toEqual([turn, result, failed]);
  });

  it('reports an invalid item with what is wrong and keeps the rest of the batch', () => {
    const bad = { ...result, outcome: { ...result.outcome, steps: -1 } };
    const wrongReason = { ...result, outcome: { ...result.outcome, stopReason: 'bored' } };
    const turn = { type: 'actor.turn', actorId: 'bencher-2', final: 'ok' };
    const { items, invalid } = parseWorkerMessage([bad, wrongReason, turn]);
    expect(items).toEqual([turn]);
    expect(invalid).toHaveLength(2);
    expect(invalid[0]).toMatch(/steps/);
    expect(invalid[1]).toMatch(/stopReason/);
  });

  it('refuses a message that is not a batch, and an item of no known type', () => {
    expect(parseWorkerMessage({ type: 'actor.turn' }).invalid).toEqual([
      'a message that is not a batch',
    ]);
    const { items, invalid } = parseWorkerMessage([{ type: 'actor.dance', actorId: 'a' }]);
    expect(items).toEqual([]);
    expect(invalid).toHaveLength(1);
  });
});
