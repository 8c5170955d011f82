import { describe, expect, it } from 'vitest';
import type { ActorResult, AgentRef } from '../../../src/runtime/actors/actor.js';
import { runDelegation } from '../../../src/runtime/actors/delegation.js';

// A bespoke double: the policies are about the order results arrive in,
// which this spawner controls exactly (no threads, no model).
function spawner(outcomes: Array<'completed' | 'failed' | 'hang'>) {
  const cancelled: string[] = [];
  const settle: Array<(result: ActorResult) => void> = [];
  const refs: AgentRef[] = outcomes.map((_, index) => {
    const id = `worker-${index + 1}`;
    let resolve!: (result: ActorResult) => void;
    const result = new Promise<ActorResult>((r) => {
      resolve = r;
    });
    settle.push(resolve);
    const make = (status: ActorResult['status']): ActorResult => ({
      agentId: id,
      role: 'worker',
      status,
      final: status,
      usage: { inputTokens: 0, outputTokens: 0 },
      steps: 0,
    });
    return {
      id,
      role: 'worker',
      result,
      send: async () => {},
      ask: async () => '',
      cancel: (reason = '') => {
        cancelled.push(`${id}: ${reason}`);
        resolve(make('cancelled'));
      },
    };
  });
  const start = () => {
    outcomes.forEach((outcome, index) => {
      if (outcome !== 'hang') {
        settle[index]?.({
          agentId: `worker-${index + 1}`,
          role: 'worker',
          status: outcome,
          final: outcome,
          usage: { inputTokens: 0, outputTokens: 0 },
          steps: 0,
        });
      }
    });
  };
  return { spawnBatch: () => refs, cancelled, start };
}

const tasks = [
  { role: 'worker', task: 'a' },
  { role: 'worker', task: 'b' },
  { role: 'worker', task: 'c' },
];

describe('runDelegation', () => {
  it('returns every result and cancels nobody under all_settled when one fails', async () => {
    const world = spawner(['completed', 'failed', 'completed']);
    const pending = runDelegation(world, 'coordinator', { tasks });
    world.start();
    const results = await pending;
    expect(results.map((result) => result.status)).toEqual(['completed', 'failed', 'completed']);
    expect(world.cancelled).toEqual([]);
  });

  it('cancels the rest once the quorum has succeeded', async () => {
    const world = spawner(['completed', 'completed', 'hang']);
    const pending = runDelegation(world, 'coordinator', { tasks, policy: 'quorum', quorum: 2 });
    world.start();
    const results = await pending;
    expect(results.map((result) => result.status)).toEqual(['completed', 'completed', 'cancelled']);
    expect(world.cancelled.join()).toContain('quorum of 2 reached');
  });

  it('cancels the rest at the first failure under fail_fast', async () => {
    const world = spawner(['hang', 'failed', 'hang']);
    const pending = runDelegation(world, 'coordinator', { tasks, policy: 'fail_fast' });
    world.start();
    const results = await pending;
    expect(results.map((result) => result.status)).toEqual(['cancelled', 'failed', 'cancelled']);
    expect(world.cancelled.join()).toContain('worker-2 failed');
  });
});
