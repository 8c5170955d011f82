import { describe, expect, it } from 'vitest';
import { RunState } from '../../src/render/run-state.js';
import { EventFactory } from '../cli/events.js';
import { seededIntegers } from '../helpers/seeded.js';

describe('RunState', () => {
  it('shows a reused agent as completed when its first event is a replayed message.sent', () => {
    const factory = new EventFactory();
    const state = new RunState();
    const sub = { parentId: 'coordinator', role: 'researcher' };
    state.apply(factory.make('coordinator', { type: 'run.started', task: 't' }));
    state.apply(
      factory.make(
        'researcher-1',
        { type: 'message.sent', channel: 'findings', messageId: 'm1', payload: {} },
        sub,
      ),
    );
    state.apply(factory.make('researcher-2', { type: 'agent.spawned', task: 't' }, sub));
    state.apply(
      factory.make(
        'researcher-2',
        { type: 'message.sent', channel: 'findings', messageId: 'm2', payload: {} },
        sub,
      ),
    );

    expect(state.agents.get('researcher-1')).toMatchObject({
      status: 'completed',
      activity: 'reused: published on findings again',
    });
    expect(state.agents.get('researcher-2')).toMatchObject({
      status: 'running',
      activity: 'published on findings',
    });
    expect(state.agents.get('coordinator')?.children).toEqual(['researcher-1', 'researcher-2']);
    expect(state.countByStatus()).toMatchObject({ running: 2, completed: 1 });
  });
});

// The sums a frame reads are kept as events arrive; here they are checked against walking every
// agent (as RunState did before) after each event of seeded random runs.
describe('RunState sums', () => {
  function brute(state: RunState) {
    const tokens = (id: string): [number, number, number, number] => {
      const agent = state.agents.get(id);
      if (agent === undefined) return [0, 0, 0, 0];
      const own: [number, number, number, number] = [
        agent.usage.inputTokens,
        agent.usage.outputTokens,
        agent.usage.cacheReadTokens ?? 0,
        agent.usage.cacheWriteTokens ?? 0,
      ];
      for (const child of agent.children) {
        const below = tokens(child);
        for (let index = 0; index < 4; index += 1)
          own[index] = (own[index] ?? 0) + (below[index] ?? 0);
      }
      return own;
    };
    const cost = (id: string): number => {
      const agent = state.agents.get(id);
      if (agent === undefined) return 0;
      return agent.children.reduce((sum, child) => sum + cost(child), agent.costUsd);
    };
    const counts = { running: 0, completed: 0, failed: 0, cancelled: 0, timed_out: 0 };
    const roles = new Map<string, number>();
    let total: [number, number, number, number] = [0, 0, 0, 0];
    let totalCost = 0;
    for (const agent of state.agents.values()) {
      counts[agent.status] += 1;
      if (agent.parentId !== undefined)
        roles.set(agent.role ?? '?', (roles.get(agent.role ?? '?') ?? 0) + 1);
      total = [
        total[0] + agent.usage.inputTokens,
        total[1] + agent.usage.outputTokens,
        total[2] + (agent.usage.cacheReadTokens ?? 0),
        total[3] + (agent.usage.cacheWriteTokens ?? 0),
      ];
      totalCost += agent.costUsd;
    }
    return { tokens, cost, counts, roles, total, totalCost };
  }
  const flat = (usage: {
    inputTokens: number;
    outputTokens: number;
    cacheReadTokens?: number | undefined;
    cacheWriteTokens?: number | undefined;
  }) => [
    usage.inputTokens,
    usage.outputTokens,
    usage.cacheReadTokens ?? 0,
    usage.cacheWriteTokens ?? 0,
  ];

  it('match a walk over every agent after every event, for 20 seeded runs', () => {
    for (let run = 1; run <= 20; run += 1) {
      const next = seededIntegers(run * 7919);
      const factory = new EventFactory();
      const price = (
        _model: string | undefined,
        usage: { inputTokens: number; outputTokens: number },
      ) => (run % 3 === 0 ? undefined : (usage.inputTokens * 3 + usage.outputTokens * 15) / 1e6);
      const state = new RunState({ price });
      const ids = ['coordinator'];
      const roles = ['researcher', 'analyst', 'reporter'];
      const usage = () => ({
        inputTokens: next(2000),
        outputTokens: next(500),
        ...(next(3) === 0 ? { cacheReadTokens: next(800) } : {}),
        ...(next(4) === 0 ? { cacheWriteTokens: next(300) } : {}),
      });
      state.apply(
        factory.make('coordinator', { type: 'run.started', task: 't' }, { role: 'coordinator' }),
      );
      for (let step = 0; step < 200; step += 1) {
        const choice = next(10);
        const id = ids[next(ids.length)] ?? 'coordinator';
        const envelope =
          id === 'coordinator' ? { role: 'coordinator' } : { parentId: 'x', role: 'r' };
        const known = state.agents.get(id);
        const env =
          known === undefined
            ? envelope
            : {
                ...(known.parentId === undefined ? {} : { parentId: known.parentId }),
                ...(known.role === undefined ? {} : { role: known.role }),
              };
        if (choice < 3) {
          const parent = ids[next(ids.length)] ?? 'coordinator';
          const child = `agent-${ids.length}`;
          ids.push(child);
          // Now and then an agent's first event names no role: it is learned from a later one.
          const role = next(5) === 0 ? undefined : roles[next(roles.length)];
          state.apply(
            factory.make(
              child,
              { type: 'agent.spawned', task: 't', model: 'm' },
              {
                parentId: parent,
                ...(role === undefined ? {} : { role }),
              },
            ),
          );
          if (role === undefined && next(2) === 0)
            state.apply(
              factory.make(
                child,
                { type: 'agent.progress', note: 'n' },
                { parentId: parent, role: 'late' },
              ),
            );
        } else if (choice < 7) {
          state.apply(
            factory.make(
              id,
              { type: 'model.response', content: '', toolCalls: [], usage: usage() },
              env,
            ),
          );
        } else if (choice < 8) {
          state.apply(
            factory.make(
              id,
              {
                type: 'history.compressed',
                beforeMessages: 9,
                beforeTokens: 900,
                afterMessages: 3,
                afterTokens: 100,
                usage: usage(),
              },
              env,
            ),
          );
        } else if (choice < 9 && id !== 'coordinator') {
          const statuses = ['completed', 'failed', 'cancelled', 'timed_out'] as const;
          state.apply(
            factory.make(
              id,
              {
                type: 'agent.finished',
                status: statuses[next(4)] ?? 'completed',
                steps: 2,
                usage: { inputTokens: next(9000), outputTokens: next(900) },
              },
              env,
            ),
          );
        } else {
          // A reused agent of a resumed run: its first event is a replayed message.sent.
          const reused = `reused-${step}`;
          state.apply(
            factory.make(
              reused,
              { type: 'message.sent', channel: 'c', messageId: `m${step}`, payload: {} },
              { parentId: 'coordinator', role: 'researcher' },
            ),
          );
        }
        const expected = brute(state);
        expect(state.countByStatus()).toEqual(expected.counts);
        expect(new Map(state.subAgentsByRole())).toEqual(expected.roles);
        expect(flat(state.totalUsage())).toEqual(expected.total);
        expect(state.totalCost()).toBeCloseTo(expected.totalCost, 9);
        for (const agentId of state.agents.keys()) {
          expect(flat(state.subtreeUsage(agentId))).toEqual(expected.tokens(agentId));
          expect(state.subtreeCost(agentId)).toBeCloseTo(expected.cost(agentId), 9);
        }
      }
      state.apply(
        factory.make(
          'coordinator',
          { type: 'run.finished', status: 'completed', final: 'f' },
          { role: 'coordinator' },
        ),
      );
      expect(state.countByStatus()).toEqual(brute(state).counts);
      expect(state.countByStatus().running).toBe(0);
    }
  });
});
