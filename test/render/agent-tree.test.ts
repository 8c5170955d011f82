import { describe, expect, it } from 'vitest';
import {
  type AgentFilter,
  filteredLines,
  fitTree,
  layOutLines,
  type TreeOptions,
  treeLines,
} from '../../src/render/agent-tree.js';
import { type AgentView, RunState } from '../../src/render/run-state.js';
import { createPalette } from '../../src/render/terminal.js';
import { EventFactory } from '../cli/events.js';

// A fan-out under the coordinator, with an analyst that has sub-agents of its own: statuses and
// activities drawn from a seeded sequence, so every rank shows up in every sibling group.
function bigRun(researchers: number, seed: number): RunState {
  const f = new EventFactory();
  const state = new RunState();
  let value = seed;
  const next = (): number => {
    value = (value * 1103515245 + 12345) % 2147483648;
    return value / 2147483648;
  };
  state.apply(f.make('coordinator', { type: 'run.started', task: 't' }, { role: 'coordinator' }));
  const spawn = (id: string, role: string, parentId: string): void => {
    state.apply(f.make(id, { type: 'agent.spawned', task: id }, { parentId, role, advanceMs: 0 }));
    const roll = next();
    const envelope = { parentId, role, advanceMs: 0 };
    if (roll < 0.3) {
      state.apply(
        f.make(
          id,
          {
            type: 'agent.finished',
            status: 'completed',
            usage: { inputTokens: 5, outputTokens: 1 },
          },
          envelope,
        ),
      );
    } else if (roll < 0.35) {
      state.apply(
        f.make(
          id,
          {
            type: 'agent.finished',
            status: 'failed',
            error: { name: 'TroupeError', code: 'internal', message: 'x' },
          },
          envelope,
        ),
      );
    } else if (roll < 0.7) {
      state.apply(f.make(id, { type: 'model.request', step: 0, messages: 1, tools: 1 }, envelope));
    }
    // The rest stay "starting": idle.
  };
  spawn('analyst-1', 'analyst', 'coordinator');
  for (let i = 1; i <= researchers; i += 1) spawn(`researcher-${i}`, 'researcher', 'coordinator');
  for (let i = 1; i <= researchers / 4; i += 1) spawn(`checker-${i}`, 'checker', 'analyst-1');
  spawn('reporter-1', 'reporter', 'coordinator');
  return state;
}

function options(state: RunState): TreeOptions {
  return {
    state,
    palette: createPalette(false),
    width: 100,
    now: state.lastTs + 1_000,
    fold: true,
    sort: true,
    glyph: (agent: AgentView) => (agent.status === 'running' ? '*' : (agent.status[0] ?? '?')),
  };
}

describe('the agent list of a large run', () => {
  it('shows the very lines it would if every agent were listed, when past-the-screen leaves are only counted', () => {
    for (const [researchers, maxLines, seed] of [
      [40, 12, 1],
      [400, 20, 2],
      [2_000, 30, 3],
      [2_000, 3, 4],
    ] as const) {
      const state = bigRun(researchers, seed);
      const base = options(state);
      const every = fitTree(treeLines(base), maxLines, base.palette, base.width);
      const limited = layOutLines(
        fitTree(
          treeLines({ ...base, layout: false, limit: maxLines - 1 }),
          maxLines,
          base.palette,
          base.width,
        ),
        base,
      );
      expect(limited.map((line) => line.agent?.id)).toEqual(every.map((line) => line.agent?.id));
      // The last line counts what is hidden, running ones included, the same either way.
      expect(limited.at(-1)?.text).toBe(every.at(-1)?.text);
      expect(limited.at(-1)?.text).toMatch(/more not shown \(\d+ running\)/);
      // Only the lines shown were laid out together: the same ids, each on one line of the width.
      for (const line of limited) expect(line.text.length).toBeLessThanOrEqual(base.width);
    }
  });

  it('lays out only the lines asked for, with one column plan for them', () => {
    const state = bigRun(30, 5);
    const base = options(state);
    const filter: AgentFilter = { kind: 'status', status: 'running' };
    const bare = filteredLines({ ...base, layout: false }, filter);
    expect(bare.every((line) => line.text === '')).toBe(true);
    expect(layOutLines(bare, base).map((line) => line.text)).toEqual(
      filteredLines(base, filter).map((line) => line.text),
    );
  });
});
