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

  it('keeps showing the last log lines while events that make none stream in', () => {
    const factory = new EventFactory();
    const output = new FakeTerminal({ isTTY: true, columns: 120, rows: 24 });
    const renderer = new LiveRenderer({ output, env: {}, color: false, now: () => factory.ts });
    const envelope = { parentId: 'coordinator', role: 'researcher', advanceMs: 1 };
    renderer.handle(factory.make('coordinator', { type: 'run.started', task: 'fan out' }));
    renderer.handle(factory.make('researcher-1', { type: 'agent.spawned', task: 't' }, envelope));
    renderer.handle(
      factory.make(
        'researcher-1',
        { type: 'tool.call', callId: 'c1', name: 'read_file', input: { path: 'notes.md' } },
        envelope,
      ),
    );
    // A long streamed reply: hundreds of deltas, none of them a log line.
    for (let i = 0; i < 600; i++) {
      renderer.handle(
        factory.make('researcher-1', { type: 'model.delta', kind: 'text', text: 'x' }, envelope),
      );
    }
    const log = renderer.frame().slice(-4).join('\n');
    expect(log).toMatch(/researcher-1 +🤔 read_file\(\{"path":"notes.md"\}\)/);
    expect(log).toContain('▸ researcher-1 started: t');
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
    // The reason is in the failures section, under the tree.
    const failures = frame.indexOf('── failures (1) ──');
    expect(failures).toBeGreaterThan(0);
    expect(frame[failures + 1]).toContain('✖ researcher-2: The model failed: HTTP 500');
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
    // Failures are listed under the tree (the newest; the summary has them all).
    expect(frame).toContain('── failures (6, 2 more in the summary) ──');
    for (const id of [120, 160, 200, 240]) {
      expect(frame.some((line) => line.startsWith(`✖ researcher-${id}: boom ${id}`))).toBe(true);
    }
    // Running agents come before finished ones when not all fit.
    for (const id of [246, 247, 248, 249, 250]) {
      expect(frame.some((line) => line.includes(`researcher-${id} `))).toBe(true);
    }
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

  it('renders the same state at 200, 120, 80 and 60 columns, dropping the least important columns first', () => {
    const events = sampleRun();
    const last = events[events.length - 4]!;
    const frames = new Map<number, string[]>();
    for (const columns of [200, 120, 80, 60]) {
      const output = new FakeTerminal({ isTTY: true, columns, rows: 30 });
      const renderer = new LiveRenderer({ output, env: {}, color: false, now: () => last.ts });
      for (const event of events.slice(0, -3)) renderer.handle(event);
      const frame = renderer.frame();
      frames.set(columns, frame);
      for (const line of frame) expect(displayWidth(line)).toBeLessThan(columns);
      const rows = frame.filter(
        (line) => /(coordinator|researcher-\d|analyst-\d) /.test(line) && /[✔✖⠋-⠿◌]/.test(line),
      );
      expect(rows.length).toBeGreaterThanOrEqual(4);
      // Never dropped: status, id, tokens and time.
      for (const row of rows.slice(0, 4)) {
        expect(row).toMatch(/\d+(\.\d)?k? tok/);
        expect(row).toMatch(/\d+(\.\d)?(ms|s)\b/);
      }
      expect(frame[0]).toContain('4 agents: 3 running');
    }
    const row = (columns: number, id: string): string =>
      frames.get(columns)?.find((line) => line.includes(`${id} `)) ?? '';
    // Wide: everything, the progress note in full.
    expect(row(200, 'researcher-1')).toMatch(
      /researcher +answered .*\d+ steps? .*2\.5k tok.*read 1 of 1 documents$/,
    );
    expect(row(200, 'coordinator')).toContain('Σ 3.5k');
    // 120: still every column, the activity not padded past its longest text.
    expect(row(120, 'researcher-1')).toContain('read 1 of 1 documents');
    // 80: the progress note goes first; every number stays.
    expect(row(80, 'researcher-1')).not.toContain('read 1 of');
    expect(row(80, 'researcher-1')).toMatch(/researcher +answered +\d+ steps/);
    expect(row(80, 'coordinator')).toContain('Σ 3.5k');
    // 60: the role goes too; the subtree total stays while it fits.
    expect(row(60, 'researcher-1')).not.toMatch(/researcher-1 +researcher/);
    expect(frames.get(60)?.[0]).not.toContain('offline');
  });
});

describe('LiveRenderer, interactive', () => {
  function interactive() {
    const factory = new EventFactory();
    const output = new FakeTerminal({ isTTY: true, columns: 100, rows: 20 });
    const cancelled: string[] = [];
    let stops = 0;
    const renderer = new LiveRenderer({
      output,
      env: {},
      color: false,
      now: () => factory.ts,
      actions: { stop: () => (stops += 1), cancel: (id) => cancelled.push(id) },
    });
    renderer.handle(factory.make('coordinator', { type: 'run.started', task: 'fan out' }));
    for (let i = 1; i <= 40; i++) {
      renderer.handle(
        factory.make(
          `researcher-${i}`,
          { type: 'agent.spawned', task: `topic ${i}` },
          { parentId: 'coordinator', role: 'researcher' },
        ),
      );
    }
    renderer.handle(
      factory.make(
        'researcher-40',
        { type: 'tool.call', callId: 'c1', name: 'read_file', input: { path: 'notes/40.md' } },
        { parentId: 'coordinator', role: 'researcher' },
      ),
    );
    return { renderer, cancelled, stops: () => stops };
  }

  it('moves a selection through every agent, past what the overview has room for', () => {
    const { renderer } = interactive();
    expect(renderer.frame().some((line) => line.startsWith('›'))).toBe(false);
    renderer.press('down');
    expect(renderer.frame().find((line) => line.startsWith('›'))).toContain('coordinator');
    renderer.press('end');
    const frame = renderer.frame();
    expect(frame.find((line) => line.startsWith('›'))).toMatch(/researcher-\d+ /);
    expect(frame.some((line) => /^ {2}↑ \d+ more$/.test(line))).toBe(true);
    expect(frame.at(-1)).toBe('↑↓ select · ⏎ open · f filter: all agents · c cancel · q stop');
  });

  it('opens the transcript of the selected agent and goes back with Escape', () => {
    const { renderer } = interactive();
    renderer.press('down');
    renderer.press('down');
    renderer.press('enter');
    const frame = renderer.frame();
    // The busiest agent sorts first among 40 siblings: researcher-40 reads a file.
    expect(frame[0]).toMatch(/^\S researcher-40 · researcher · calling read_file/);
    expect(frame.join('\n')).toContain('task: topic 40');
    expect(frame.join('\n')).toContain('🤔 read_file({');
    expect(frame).toHaveLength(19);
    renderer.press('escape');
    expect(renderer.frame()[0]).toMatch(/^troupe · /);
  });

  it('cancels the selected agent only after y, and stops the run on q', () => {
    const { renderer, cancelled, stops } = interactive();
    renderer.press('down');
    renderer.press('down');
    renderer.press('char:c');
    expect(renderer.frame().at(-1)).toBe('Cancel researcher-40? y/n');
    renderer.press('char:n');
    expect(cancelled).toEqual([]);
    renderer.press('char:c');
    renderer.press('char:y');
    expect(cancelled).toEqual(['researcher-40']);
    renderer.press('char:q');
    expect(stops()).toBe(1);
  });

  it('filters by status and by role with f', () => {
    const { renderer } = interactive();
    renderer.press('char:f');
    expect(renderer.frame().at(-1)).toContain('f filter: running');
    renderer.press('char:f');
    const failed = renderer.frame();
    expect(failed.at(-1)).toContain('f filter: failed');
    expect(failed).toContain('  no agent matches the filter (failed)');
    renderer.press('char:f');
    renderer.press('char:f');
    expect(renderer.frame().at(-1)).toContain('f filter: role researcher');
  });
});
