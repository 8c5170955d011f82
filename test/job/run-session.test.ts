import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TroupeError } from '../../src/errors.js';
import { EventBus } from '../../src/events/bus.js';
import { readTrace } from '../../src/events/trace.js';
import { WRITER_LOCK } from '../../src/job/run-folder.js';
import { resolveRun, startRun } from '../../src/job/run-session.js';
import { DEFAULT_GRANTS } from '../../src/tools/permissions.js';

const corpus = new URL('../../examples/corpus/', import.meta.url).pathname;
const TASK = 'Compare the storage documents and write a report.';

const dirs: string[] = [];
function outDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-run-session-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function offline(out: string) {
  return {
    model: { provider: 'offline' as const },
    workspace: corpus,
    threads: 1,
    grants: [...DEFAULT_GRANTS],
    out,
    env: { SECRET_TOKEN: 'sk-abcdefghijklmnopqrstuvwxyz012345' },
  };
}

describe('startRun', () => {
  it('runs a job with its folder, trace, journal and answer, and closes everything', async () => {
    const out = outDir();
    const bus = new EventBus();
    const seen: string[] = [];
    bus.onAny((event) => seen.push(event.type));
    const run = await startRun({ ...offline(out), task: TASK, bus });
    expect(run.events).toBe(bus);
    expect(existsSync(join(run.paths.runDir, WRITER_LOCK))).toBe(true);
    const outcome = await run.done;

    expect(outcome.error).toBeUndefined();
    expect(outcome.cancelled).toBe(false);
    expect(outcome.result?.status).toBe('completed');
    expect(seen[0]).toBe('run.started');
    expect(seen.at(-1)).toBe('run.finished');
    const trace = readTrace(run.paths.trace);
    expect(trace.events.map((event) => event.type)).toEqual(seen);
    expect(existsSync(run.paths.journal)).toBe(true);
    expect(existsSync(run.paths.report)).toBe(true);
    expect(readFileSync(run.paths.answer, 'utf8').trim()).toBe(outcome.result?.final.trim());
    expect(existsSync(join(run.paths.runDir, WRITER_LOCK))).toBe(false);
  });

  it('resumes a finished run from its journal: the trace is rotated and no model call is made again', async () => {
    const out = outDir();
    const first = await startRun({ ...offline(out), task: TASK });
    const firstOutcome = await first.done;
    const bus = new EventBus();
    const calls: string[] = [];
    const replayed: string[] = [];
    bus.on('model.request', (event) =>
      (event.replayed === true ? replayed : calls).push(event.agentId),
    );
    const again = await startRun({ ...offline(out), resume: first.runId, bus });
    expect(again.task).toBe(TASK);
    expect(again.resumed).toBe(true);
    const outcome = await again.done;
    expect(outcome.result?.final).toBe(firstOutcome.result?.final);
    expect(existsSync(join(first.paths.runDir, 'trace.1.jsonl'))).toBe(true);
    expect(calls).toEqual([]);
    expect(replayed.length).toBeGreaterThan(0);
  });

  it('stops when cancelled, and still closes the run', async () => {
    const out = outDir();
    const run = await startRun({ ...offline(out), task: TASK });
    run.cancel(new Error('stop now'));
    const outcome = await run.done;
    expect(outcome.cancelled).toBe(true);
    expect(outcome.result?.status).toBe('cancelled');
    expect(existsSync(join(run.paths.runDir, WRITER_LOCK))).toBe(false);
  });

  it('says what to do about a resume it cannot make, before touching anything', () => {
    const out = outDir();
    const missing = (): unknown => resolveRun({ out, resume: 'run-nope' });
    expect(missing).toThrow(TroupeError);
    expect(missing).toThrow(/no run folder .*run-nope/);
    expect(() => resolveRun({ out, task: '  ' })).toThrow(/needs a task/);
    expect(existsSync(join(out, 'run-nope'))).toBe(false);
  });
});
