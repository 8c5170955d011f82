import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events/bus.js';
import { parseTrace, readTrace, TraceWriter } from '../../src/events/trace.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-trace-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('TraceWriter', () => {
  it('writes every bus event as one JSON line and reads them back in order', async () => {
    const path = join(tempDir(), 'run', 'trace.jsonl');
    const bus = new EventBus();
    const writer = new TraceWriter(path, { env: {} });
    writer.attach(bus);
    bus.publish({ v: 1, ts: 1, runId: 'r', agentId: 'a', type: 'agent.progress', note: 'one' });
    bus.publish({
      v: 1,
      ts: 2,
      runId: 'r',
      agentId: 'a',
      type: 'agent.finished',
      status: 'completed',
    });
    // agent.finished flushes at the end of the event-loop turn, without waiting for close.
    expect(readFileSync(path, 'utf8')).toBe('');
    await new Promise((resolve) => setImmediate(resolve));
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(2);
    writer.close();

    const { events, invalidLines } = readTrace(path);
    expect(invalidLines).toEqual([]);
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [0, 'agent.progress'],
      [1, 'agent.finished'],
    ]);
  });

  it('redacts secret environment values and key shapes from every line', () => {
    const path = join(tempDir(), 'trace.jsonl');
    const secret = 'super-secret-value-123';
    const writer = new TraceWriter(path, { env: { ANTHROPIC_API_KEY: secret } });
    const bus = new EventBus();
    writer.attach(bus);
    bus.publish({
      v: 1,
      ts: 1,
      runId: 'r',
      agentId: 'a',
      type: 'tool.result',
      callId: 'c',
      name: 'shell',
      ok: true,
      content: `key=${secret} other=sk-ant-abcdefghijklmnop`,
    });
    writer.close();

    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain(secret);
    expect(text).not.toContain('sk-ant-abcdefghijklmnop');
    expect(text).toContain('[redacted]');
  });

  it('reports a torn last line instead of failing the whole read', () => {
    const path = join(tempDir(), 'trace.jsonl');
    writeFileSync(
      path,
      `${JSON.stringify({ v: 1, seq: 0, ts: 1, runId: 'r', agentId: 'a', type: 'agent.progress', note: 'x' })}\n`,
    );
    appendFileSync(path, '{"v":1,"seq":1,"ts":');
    const { events, invalidLines } = readTrace(path);
    expect(events).toHaveLength(1);
    expect(invalidLines).toEqual([2]);
  });

  it('treats lines that are JSON but not events as invalid', () => {
    expect(parseTrace('{"hello": 1}\n\n').invalidLines).toEqual([1]);
  });
});
