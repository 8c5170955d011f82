import { describe, expect, it } from 'vitest';
import { estimateRemainingMs, roleLines, roleProgress } from '../../src/render/role-progress.js';
import { RunState } from '../../src/render/run-state.js';
import { createPalette, displayWidth } from '../../src/render/terminal.js';
import { EventFactory } from '../cli/events.js';

function fanOut(done: number, failed: number, running: number): { state: RunState; now: number } {
  const factory = new EventFactory();
  const state = new RunState();
  state.apply(factory.make('coordinator', { type: 'run.started', task: 't' }));
  const total = done + failed + running;
  for (let i = 1; i <= total; i++) {
    state.apply(
      factory.make(
        `researcher-${i}`,
        { type: 'agent.spawned', task: `topic ${i}` },
        { parentId: 'coordinator', role: 'researcher', advanceMs: 0 },
      ),
    );
  }
  state.apply(
    factory.make(
      'analyst-1',
      { type: 'agent.spawned', task: 'compare' },
      { parentId: 'coordinator', role: 'analyst', advanceMs: 0 },
    ),
  );
  for (let i = 1; i <= done + failed; i++) {
    state.apply(
      factory.make(
        `researcher-${i}`,
        i <= done
          ? {
              type: 'agent.finished',
              status: 'completed',
              usage: { inputTokens: 1000, outputTokens: 200 },
            }
          : {
              type: 'agent.finished',
              status: 'failed',
              error: { name: 'E', code: 'internal', message: 'boom' },
            },
        { parentId: 'coordinator', role: 'researcher', advanceMs: 1000 },
      ),
    );
  }
  return { state, now: factory.ts };
}

describe('role progress', () => {
  it('counts each role and estimates the rest of a fan-out from the rate so far', () => {
    const { state, now } = fanOut(36, 3, 160);
    const [researcher, analyst] = roleProgress(state, now);
    expect(researcher).toMatchObject({
      role: 'researcher',
      total: 199,
      completed: 36,
      failed: 3,
      running: 160,
      tokens: 36 * 1200,
    });
    // 39 finished in 39 s: 160 left at one a second.
    expect(researcher?.etaMs).toBeCloseTo(160_000, -2);
    expect(analyst).toMatchObject({ role: 'analyst', total: 1, running: 1, etaMs: undefined });
  });

  it('has no estimate before the first agent finished or after the last', () => {
    const start = { startTs: 0 } as const;
    expect(estimateRemainingMs([{ ...start, status: 'running' } as never], 5000)).toBeUndefined();
    expect(estimateRemainingMs([{ ...start, status: 'completed' } as never], 5000)).toBeUndefined();
  });

  it('draws a line per role that keeps the counts at any width', () => {
    const { state, now } = fanOut(36, 3, 160);
    const progress = roleProgress(state, now);
    const wide = roleLines(progress, createPalette(false), 120, 4);
    expect(wide[0]).toMatch(
      /^researcher [█░]{12} 39\/199 done · 3 failed · 160 running · 43k tok · ETA 2m40s$/,
    );
    expect(wide[1]).toMatch(/^analyst {4}░{12} 0\/1 done · 1 running · 0 tok$/);
    for (const width of [60, 40]) {
      const [line = ''] = roleLines(progress, createPalette(false), width, 4);
      expect(displayWidth(line)).toBeLessThanOrEqual(width);
      expect(line).toContain('39/199 done · 3 failed');
    }
    const [first] = roleLines(progress, createPalette(false), 120, 1);
    expect(roleLines(progress, createPalette(false), 120, 1)).toEqual([first]);
    expect(first).toMatch(/^researcher /);
  });
});

describe('role progress of a very large fan-out', () => {
  it('counts 150,000 agents of one role (past the arguments a spread call can take)', () => {
    const state = new RunState();
    const factory = new EventFactory();
    state.apply(factory.make('coordinator', { type: 'run.started', task: 't' }));
    for (let i = 1; i <= 150_000; i++) {
      state.apply(
        factory.make(
          `researcher-${i}`,
          i % 2 === 0
            ? { type: 'agent.finished', status: 'completed' }
            : { type: 'agent.spawned', task: 'x' },
          { parentId: 'coordinator', role: 'researcher', advanceMs: 0 },
        ),
      );
    }
    const [researchers] = roleProgress(state, state.lastTs + 60_000);
    expect(researchers).toMatchObject({ role: 'researcher', total: 150_000, completed: 75_000 });
    expect(researchers?.running).toBe(75_000);
    expect(researchers?.etaMs).toBeGreaterThan(0);
  });
});
