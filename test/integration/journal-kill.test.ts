import { type ChildProcess, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLERKS,
  FINAL,
  type JournalModelServer,
  REPORT,
  startJournalModelServer,
} from '../helpers/journal-model-server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const JOB = join(root, 'test', 'fixtures', 'journal', 'job.mjs');
const ROLES = join(root, 'test', 'fixtures', 'journal', 'roles.mjs');
const dirs: string[] = [];
let server: JournalModelServer;

beforeAll(async () => {
  server = await startJournalModelServer();
});
afterAll(async () => {
  await server.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A seeded generator (mulberry32): the same 20 moments every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Place {
  dir: string;
  workspace: string;
}

/** The run folder: the library job's is run-kill; troupe run names its own. */
function runDirOf(at: Place): string {
  const out = join(at.dir, 'out');
  const runs = existsSync(out) ? readdirSync(out) : [];
  return join(out, runs[0] ?? 'run-kill');
}

function place(): Place {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-kill-'));
  dirs.push(dir);
  const workspace = join(dir, 'ws');
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'notes.md'), 'Notes for the clerks.\n');
  return { dir, workspace };
}

const TASK = 'Keep the ledger and write its report.';

/** How a job is started: through the library (a script) or through the CLI. */
type Runner = (at: Place, resume: boolean) => string[];

const library: Runner = (at, resume) => [
  JOB,
  server.baseURL,
  at.workspace,
  join(at.dir, 'out', 'run-kill'),
  'run-kill',
  ...(resume ? ['resume'] : []),
];

// `troupe run` puts the run folder under --out; the place's runDir is <out>/run-kill… once it exists.
const cli: Runner = (at, resume) => [
  join(root, 'bin', 'troupe.js'),
  'run',
  ...(resume ? ['--resume', basename(runDirOf(at))] : [TASK]),
  '--provider',
  'openai',
  '--base-url',
  server.baseURL,
  '--model',
  'mock-model',
  '--roles',
  ROLES,
  '--workspace',
  at.workspace,
  '--out',
  join(at.dir, 'out'),
  '--threads',
  '1',
  '--allow',
  'read,write',
  '--quiet',
];

function start(
  runner: Runner,
  at: Place,
  resume: boolean,
): { child: ChildProcess; done: Promise<number | null> } {
  const child = spawn(process.execPath, runner(at, resume), {
    cwd: root,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: tmpdir(),
      OPENAI_API_KEY: server.apiKey,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      if (code !== 0 && code !== null) process.stderr.write(stderr);
      resolve(code);
    }),
  );
  return { child, done };
}

const ledger = (at: Place): string[] =>
  existsSync(join(at.workspace, 'ledger.txt'))
    ? readFileSync(join(at.workspace, 'ledger.txt'), 'utf8').trim().split('\n').filter(Boolean)
    : [];

/** Where a kill lands: the kth request's jth chunk written (mid-stream), or the nth ledger entry written (mid-tool). */
type Moment = { kind: 'stream'; request: number; chunk: number } | { kind: 'tool'; entry: number };

/**
 * Kills the job at each moment and resumes it, checking the request count at
 * the server, the ledger, the answer and report.md against an uninterrupted run.
 */
async function killAndResume(runner: Runner, kills: number, seed: number, ledgered: boolean) {
  // The uninterrupted run: its request count, answer and report are the reference.
  const reference = place();
  server.reset();
  expect(await start(runner, reference, false).done).toBe(0);
  const uninterrupted = server.received;
  const agents = [...server.agents];
  const answer = readFileSync(join(runDirOf(reference), 'answer.md'), 'utf8').trim();
  expect(answer).toBe(FINAL);
  expect(readFileSync(join(runDirOf(reference), 'report.md'), 'utf8')).toBe(REPORT);
  if (ledgered) expect(ledger(reference).sort()).toEqual(CLERKS);

  const next = random(seed);
  const coordinatorRequests = agents.flatMap((agent, index) =>
    agent === 'coordinator' ? [index + 1] : [],
  );
  // Inside the coordinator's turns first (each of its requests mid-stream), then seeded moments.
  const moments: Moment[] = coordinatorRequests.map((request) => ({
    kind: 'stream',
    request,
    chunk: 2,
  }));
  if (ledgered) moments.push({ kind: 'tool', entry: 1 });
  while (moments.length < kills) {
    moments.push(
      ledgered && next() < 0.3
        ? { kind: 'tool', entry: 1 + Math.floor(next() * CLERKS.length) }
        : {
            kind: 'stream',
            request: 1 + Math.floor(next() * uninterrupted),
            chunk: Math.floor(next() * 6),
          },
    );
  }

  let landed = 0;
  for (const [index, moment] of moments.entries()) {
    const label = `kill ${index + 1}: ${JSON.stringify(moment)}`;
    const at = place();
    server.reset();
    let inFlight = -1;
    const run = start(runner, at, false);
    const kill = (): void => {
      if (inFlight >= 0) return;
      inFlight = server.received - server.finished;
      run.child.kill('SIGKILL');
    };
    let watcher: NodeJS.Timeout | undefined;
    if (moment.kind === 'stream') {
      server.onChunk = (request, chunk, of) => {
        if (request === moment.request && chunk === Math.min(moment.chunk, of - 1)) kill();
      };
    } else {
      watcher = setInterval(() => {
        if (ledger(at).length >= moment.entry) kill();
      }, 5);
    }
    const code = await run.done;
    server.onChunk = undefined;
    clearInterval(watcher);
    if (inFlight < 0) {
      // The moment never came (the run ended first): it must have completed.
      expect(code, label).toBe(0);
      continue;
    }
    landed += 1;
    expect(code, label).toBe(null);
    const killed = server.received;
    // The resume, counted at the server on its own.
    server.reset();
    expect(await start(runner, at, true).done, label).toBe(0);
    const resumed = server.received;
    expect(killed + resumed - uninterrupted, label).toBeGreaterThanOrEqual(0);
    expect(killed + resumed - uninterrupted, label).toBeLessThanOrEqual(inFlight);
    // Each ledger entry at most once (an interrupted call is not run again), none twice.
    const entries = ledger(at);
    expect(new Set(entries).size, label).toBe(entries.length);
    expect(readFileSync(join(runDirOf(at), 'answer.md'), 'utf8').trim(), label).toBe(answer);
    expect(readFileSync(join(runDirOf(at), 'report.md'), 'utf8'), label).toBe(REPORT);
  }
  return landed;
}

describe('killing a journaled multi-agent job with SIGKILL', () => {
  it('at 20 seeded moments: resume pays only the calls in flight, runs no non-idempotent tool twice, and ends as an uninterrupted run', async () => {
    expect(await killAndResume(library, 20, 14, true)).toBeGreaterThanOrEqual(18);
  }, 600_000);

  it('through the CLI (kill -9, troupe run --resume) against the local model server, counting requests there', async () => {
    expect(await killAndResume(cli, 6, 15, false)).toBeGreaterThanOrEqual(5);
  }, 600_000);
});
