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
import { readJournal } from '../../src/runtime/resume/journal.js';
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
// Kills run in two lanes at once, each with its own model server, so each lane counts its own requests.
const LANES = 2;
let servers: JournalModelServer[] = [];

beforeAll(async () => {
  servers = await Promise.all(Array.from({ length: LANES }, () => startJournalModelServer()));
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
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
type Runner = (server: JournalModelServer, at: Place, resume: boolean) => string[];

const library: Runner = (server, at, resume) => [
  JOB,
  server.baseURL,
  at.workspace,
  join(at.dir, 'out', 'run-kill'),
  'run-kill',
  ...(resume ? ['resume'] : []),
];

// `troupe run` puts the run folder under --out; the place's runDir is <out>/run-kill… once it exists.
const cli: Runner = (server, at, resume) => [
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
  server: JournalModelServer,
  at: Place,
  resume: boolean,
): { child: ChildProcess; done: Promise<number | null> } {
  const child = spawn(process.execPath, runner(server, at, resume), {
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

/** The model responses a killed run's journal holds (none when it died before opening it). */
function journaledResponses(at: Place): number {
  const path = join(runDirOf(at), 'journal.jsonl');
  if (!existsSync(path) || readFileSync(path).length === 0) return 0;
  let count = 0;
  for (const entries of readJournal(path).entries.values())
    count += entries.filter((entry) => entry.kind === 'model').length;
  return count;
}

const ledger = (at: Place): string[] =>
  existsSync(join(at.workspace, 'ledger.txt'))
    ? readFileSync(join(at.workspace, 'ledger.txt'), 'utf8').trim().split('\n').filter(Boolean)
    : [];

/** Where a kill lands: the kth request's jth chunk written (mid-stream), or the nth ledger entry written (mid-tool). */
type Moment = { kind: 'stream'; request: number; chunk: number } | { kind: 'tool'; entry: number };

/** What an uninterrupted run did: the reference each killed and resumed run is held to. */
interface Reference {
  requests: number;
  answer: string;
}

/**
 * Kills the job at one moment on `server` and resumes it, checking the request
 * count at the server, the ledger, the answer and report.md against the
 * uninterrupted run. Returns whether the moment came before the run ended.
 */
async function killOnce(
  runner: Runner,
  server: JournalModelServer,
  moment: Moment,
  label: string,
  reference: Reference,
): Promise<boolean> {
  const at = place();
  server.reset();
  let inFlight = -1;
  const run = start(runner, server, at, false);
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
    return false;
  }
  expect(code, label).toBe(null);
  // In flight at the kill: every request the killed process sent whose response it had not
  // recorded when it died, counted once it is dead (one it wrote just before SIGKILL can
  // reach the server after the kill callback ran). A response the server had written in full
  // can still be in the client's socket or between its threads when SIGKILL lands: that call
  // was in flight too, so what counts as answered is what the killed run's journal holds.
  const killed = server.received;
  const journaled = journaledResponses(at);
  expect(journaled, label).toBeLessThanOrEqual(killed);
  inFlight = killed - journaled;
  // The resume, counted at the server on its own.
  server.reset();
  expect(await start(runner, server, at, true).done, label).toBe(0);
  const resumed = server.received;
  expect(killed + resumed - reference.requests, label).toBeGreaterThanOrEqual(0);
  expect(killed + resumed - reference.requests, label).toBeLessThanOrEqual(inFlight);
  // Each ledger entry at most once (an interrupted call is not run again), none twice.
  const entries = ledger(at);
  expect(new Set(entries).size, label).toBe(entries.length);
  expect(readFileSync(join(runDirOf(at), 'answer.md'), 'utf8').trim(), label).toBe(
    reference.answer,
  );
  expect(readFileSync(join(runDirOf(at), 'report.md'), 'utf8'), label).toBe(REPORT);
  return true;
}

/**
 * Kills the job at `kills` moments (each coordinator turn mid-stream, a
 * mid-tool moment, then seeded ones) and resumes each, two at a time; returns
 * how many moments came before their run ended.
 */
async function killAndResume(runner: Runner, kills: number, seed: number, ledgered: boolean) {
  // The uninterrupted run: its request count, answer and report are the reference.
  const server = servers[0]!;
  const first = place();
  server.reset();
  expect(await start(runner, server, first, false).done).toBe(0);
  const reference: Reference = {
    requests: server.received,
    answer: readFileSync(join(runDirOf(first), 'answer.md'), 'utf8').trim(),
  };
  const agents = [...server.agents];
  expect(reference.answer).toBe(FINAL);
  expect(readFileSync(join(runDirOf(first), 'report.md'), 'utf8')).toBe(REPORT);
  if (ledgered) expect(ledger(first).sort()).toEqual(CLERKS);

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
            request: 1 + Math.floor(next() * reference.requests),
            chunk: Math.floor(next() * 6),
          },
    );
  }

  let landed = 0;
  let taken = 0;
  const lane = async (laneServer: JournalModelServer): Promise<void> => {
    while (taken < moments.length) {
      const index = taken++;
      const label = `kill ${index + 1}: ${JSON.stringify(moments[index])}`;
      if (await killOnce(runner, laneServer, moments[index]!, label, reference)) landed += 1;
    }
  };
  await Promise.all(servers.map(lane));
  return landed;
}

describe('killing a journaled multi-agent job with SIGKILL', () => {
  it('at 20 seeded moments: resume pays only the calls in flight, runs no non-idempotent tool twice, and ends as an uninterrupted run', async () => {
    expect(await killAndResume(library, 20, 14, true)).toBeGreaterThanOrEqual(18);
  }, 900_000);

  it('through the CLI at 20 seeded moments (kill -9, troupe run --resume) against the local model server, counting requests there', async () => {
    expect(await killAndResume(cli, 20, 15, false)).toBeGreaterThanOrEqual(18);
  }, 900_000);
});
