import { afterEach, describe, expect, it, vi } from 'vitest';
import { LiveRenderer } from '../../src/render/live.js';
import { displayWidth, stripAnsi } from '../../src/render/terminal.js';
import { EventFactory, sampleRun } from '../cli/events.js';
import { FakeTerminal } from './fake-terminal.js';

function manyAgents(
  count: number,
  failEvery: number,
): { factory: EventFactory; renderer: LiveRenderer; output: FakeTerminal } {
  const factory = new EventFactory();
  const output = new FakeTerminal({ isTTY: true, columns: 120, rows: 24 });
  const renderer = new LiveRenderer({ output, env: {}, color: false, now: () => factory.ts });
  renderer.handle(factory.make('coordinator', { type: 'run.started', task: 'fan out' }));
  for (let i = 1; i <= count; i++) {
    renderer.handle(
      factory.make(
        `researcher-${i}`,
        { type: 'agent.spawned', task: 't' },
        { parentId: 'coordinator', role: 'researcher', advanceMs: 1 },
      ),
    );
  }
  for (let i = 1; i <= count - 5; i++) {
    renderer.handle(
      factory.make(
        `researcher-${i}`,
        i % failEvery === 0
          ? {
              type: 'agent.finished',
              status: 'failed',
              error: { name: 'E', code: 'internal', message: `boom ${i}` },
            }
          : { type: 'agent.finished', status: 'completed' },
        { parentId: 'coordinator', role: 'researcher', advanceMs: 1 },
      ),
    );
  }
  return { factory, renderer, output };
}

describe('LiveRenderer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('draws the agent tree with status, activity, tokens and subtree totals while agents run', () => {
    const events = sampleRun();
    const output = new FakeTerminal({ isTTY: true, columns: 150, rows: 30 });
    const last = events[events.length - 4]!;
    const renderer = new LiveRenderer({ output, env: {}, color: false, now: () => last.ts });
    for (const event of events.slice(0, -3)) renderer.handle(event);
    const frame = renderer.frame();

    expect(frame[0]).toContain('4 agents: 3 running, 0 done, 1 failed');
    const coordinator = frame.find((line) => line.includes(' coordinator '))!;
    expect(coordinator).toContain('1.0k tok');
    expect(coordinator).toContain('Σ 3.5k');
    expect(frame.find((line) => line.includes('researcher-1'))).toMatch(
      /^├─ \S researcher-1 +researcher +answered .*2\.5k tok.*read 1 of 1 documents$/,
    );
    expect(frame.find((line) => line.includes('researcher-2'))).toContain('✖ researcher-2');
    expect(frame.find((line) => line.includes('researcher-2'))).toContain(
      'The model failed: HTTP 500',
    );
    expect(frame.find((line) => line.startsWith('└─'))).toContain(
      'reading findings from researcher-1',
    );
    expect(frame).toContain('── recent ──');
    expect(
      frame.some((line) => line.includes('researcher-1   🤔 read_file({"path":"a.md"})')),
    ).toBe(true);
  });

  it('folds finished agents into counts and keeps failures visible when there are 250 agents', () => {
    const { renderer, output } = manyAgents(250, 40);
    const frame = renderer.frame();
    expect(frame.length).toBeLessThanOrEqual(output.rows - 1);
    expect(frame.some((line) => /└─ ✔ 239 finished \(239 completed\)/.test(line))).toBe(true);
    for (const id of [40, 80, 120, 160, 200, 240]) {
      expect(frame.some((line) => line.includes(`✖ researcher-${id} `))).toBe(true);
    }
    expect(frame.some((line) => line.includes('researcher-250'))).toBe(true);
  });

  it('redraws at a bounded rate however many events arrive', () => {
    vi.useFakeTimers();
    const factory = new EventFactory();
    const output = new FakeTerminal({ isTTY: true });
    const renderer = new LiveRenderer({ output, env: {}, color: false, frameIntervalMs: 100 });
    renderer.start();
    for (let i = 0; i < 1000; i++) {
      renderer.handle(factory.make('a', { type: 'agent.progress', note: `n${i}` }));
    }
    expect(output.writes).toHaveLength(0);
    vi.advanceTimersByTime(350);
    expect(output.writes).toHaveLength(3);
    renderer.finish();
  });

  it('leaves the last frame, shows the cursor and prints the summary when finished', () => {
    const output = new FakeTerminal({ isTTY: true, columns: 100, rows: 30 });
    const renderer = new LiveRenderer({ output, env: {}, now: () => 0 });
    for (const event of sampleRun()) renderer.handle(event);
    renderer.finish();
    expect(output.text).toContain('\u001b[?25l');
    expect(output.text).toContain('\u001b[?25h');
    const plain = output.plain;
    expect(plain).toContain('Run run-1 completed in 1.6s · 4 agents (3 completed, 1 failed)');
    expect(plain).toMatch(/total\s+4\s+3\s+1\s+0\s+3\.5k/);
    for (const frame of output.writes) {
      for (const line of stripAnsi(frame).split('\n')) {
        expect(displayWidth(line)).toBeLessThanOrEqual(100);
      }
    }
  });
});
