import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TraceWriter } from '../../src/events/trace.js';
import { defineRole } from '../../src/roles/role.js';
import { closeRuntimes, expectWellFormed, makeRuntime } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Worker actors send their events as JSON text; the bus hands that text on
// (stamped) instead of serializing each event again. What a listener, the
// trace and JSON.stringify see must be the same bytes.
describe('events from worker threads as JSON text', () => {
  it('reach listeners as objects and the trace as the same bytes JSON.stringify writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-event-text-'));
    dirs.push(dir);
    const worker = defineRole({
      name: 'worker',
      description: 'w',
      system: 'w',
      tools: ['report_progress'],
      maxSteps: 4,
    });
    const { runtime, events } = makeRuntime({
      roles: [worker],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              content: 'Quotes " and \\ backslashes, unicode ✓ and a newline\nhere.',
              toolCalls: [{ name: 'report_progress', arguments: { note: 'tab\there, "quoted"' } }],
            },
            { content: 'done', repeat: true },
          ],
        },
      },
    });
    const trace = new TraceWriter(join(dir, 'trace.jsonl'));
    trace.attach(runtime.bus);
    // The workers' events come with their text (the local transport's hosts send them so).
    let withText = 0;
    const adopt = runtime.bus.adopt.bind(runtime.bus);
    runtime.bus.adopt = (event, text) => {
      if (text !== undefined) withText += 1;
      return adopt(event, text);
    };
    const mismatches: string[] = [];
    runtime.bus.onAny((event) => {
      const text = runtime.bus.json(event);
      if (text !== JSON.stringify(event)) mismatches.push(text);
    });

    const results = await Promise.all(
      Array.from({ length: 6 }, (_, index) => runtime.spawn('worker', `part ${index}`).result),
    );
    trace.close();

    expect(results.every((result) => result.status === 'completed')).toBe(true);
    expect(mismatches).toEqual([]);
    expectWellFormed(events);
    const lines = readFileSync(join(dir, 'trace.jsonl'), 'utf8').trimEnd().split('\n');
    expect(lines).toEqual(events.map((event) => JSON.stringify(event)));
    // The workers' own events are among them (not only the main thread's), as text.
    expect(withText).toBeGreaterThanOrEqual(6 * 4);
    expect(events.some((event) => event.type === 'agent.progress')).toBe(true);
    expect(events.some((event) => event.type === 'model.response')).toBe(true);
  });
});
