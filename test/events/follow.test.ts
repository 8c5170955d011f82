import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { followTrace } from '../../src/events/follow.js';

function progress(seq: number): string {
  return JSON.stringify({
    v: 1,
    seq,
    ts: 1,
    runId: 'r1',
    agentId: 'a',
    type: 'agent.progress',
    note: `n${seq}`,
  });
}

const finished = (seq: number): string =>
  JSON.stringify({
    v: 1,
    seq,
    ts: 2,
    runId: 'r1',
    agentId: 'coordinator',
    type: 'run.finished',
    status: 'completed',
  });

function tracePath(): string {
  return join(mkdtempSync(join(tmpdir(), 'troupe-follow-')), 'trace.jsonl');
}

describe('followTrace', () => {
  it('yields existing and appended events and ends after run.finished', async () => {
    const path = tracePath();
    writeFileSync(path, `${progress(0)}\n`);
    const events = followTrace(path, { pollIntervalMs: 10 });

    expect((await events.next()).value?.seq).toBe(0);
    appendFileSync(path, `${progress(1)}\n`);
    expect((await events.next()).value?.seq).toBe(1);
    appendFileSync(path, `${finished(2)}\n${progress(3)}\n`);
    expect((await events.next()).value?.type).toBe('run.finished');
    expect((await events.next()).done).toBe(true);
  });

  it('holds a torn last line until its newline arrives', async () => {
    const path = tracePath();
    const line = progress(0);
    writeFileSync(path, line.slice(0, 20));
    const events = followTrace(path, { pollIntervalMs: 10 });
    const next = events.next();
    appendFileSync(path, `${line.slice(20)}\n`);
    expect((await next).value).toMatchObject({ seq: 0, note: 'n0' });
    await events.return(undefined);
  });

  it('waits for the file to appear', async () => {
    const path = tracePath();
    const events = followTrace(path, { pollIntervalMs: 10 });
    const next = events.next();
    writeFileSync(path, `${progress(5)}\n`);
    expect((await next).value?.seq).toBe(5);
    await events.return(undefined);
  });

  it('skips complete lines that are not events and reports them', async () => {
    const path = tracePath();
    const invalid: number[] = [];
    writeFileSync(path, `not json\n{"v":1}\n${finished(0)}\n`);
    const seen = [];
    for await (const event of followTrace(path, {
      pollIntervalMs: 10,
      onInvalidLine: (line) => invalid.push(line),
    })) {
      seen.push(event.type);
    }
    expect(seen).toEqual(['run.finished']);
    expect(invalid).toEqual([1, 2]);
  });

  it('ends without an error when the signal aborts', async () => {
    const path = tracePath();
    writeFileSync(path, `${progress(0)}\n`);
    const controller = new AbortController();
    const seen: number[] = [];
    for await (const event of followTrace(path, {
      signal: controller.signal,
      pollIntervalMs: 10,
    })) {
      seen.push(event.seq);
      controller.abort();
    }
    expect(seen).toEqual([0]);
  });

  it('keeps following past run.finished when untilRunFinished is false', async () => {
    const path = tracePath();
    writeFileSync(path, `${finished(0)}\n${progress(1)}\n`);
    const events = followTrace(path, { untilRunFinished: false, pollIntervalMs: 10 });
    expect((await events.next()).value?.seq).toBe(0);
    expect((await events.next()).value?.seq).toBe(1);
    await events.return(undefined);
  });
});
