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
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FINAL,
  type JournalModelServer,
  REPORT,
  startJournalModelServer,
} from '../helpers/journal-model-server.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';
import { type NodeProcess, startNode, stopNode } from './nats-helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const ROLES = join(root, 'test', 'fixtures', 'journal', 'roles.mjs');
const TASK = 'Keep the ledger and write its report.';

let nats: NatsServer;
let server: JournalModelServer;
const nodes: NodeProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  if (natsServerBinary() === undefined) return;
  nats = await NatsServer.start();
  server = await startJournalModelServer();
  // Nodes use their own environment: the model key is theirs.
  const env = { OPENAI_API_KEY: server.apiKey };
  nodes.push(
    ...(await Promise.all([
      startNode(nats.url, 'node-a', [], env),
      startNode(nats.url, 'node-b', [], env),
    ])),
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(nodes.splice(0).map((node) => stopNode(node)));
  await server?.close();
  await nats?.dispose();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Place {
  dir: string;
  workspace: string;
  out: string;
}

function place(): Place {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-nats-cli-'));
  dirs.push(dir);
  const workspace = join(dir, 'ws');
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'notes.md'), 'Notes for the clerks.\n');
  return { dir, workspace, out: join(dir, 'out') };
}

function runDirOf(at: Place): string {
  const runs = existsSync(at.out) ? readdirSync(at.out) : [];
  expect(runs).toHaveLength(1);
  return join(at.out, runs[0] ?? '');
}

/** `troupe run … --nats <url>` as a child process (the coordinator), its stderr kept. */
function troupeRun(
  at: Place,
  resume: boolean | string,
): { child: ChildProcess; done: Promise<number | null>; stderr: () => string } {
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin', 'troupe.js'),
      'run',
      ...(resume === false
        ? [TASK]
        : ['--resume', resume === true ? (readdirSync(at.out)[0] ?? '') : resume]),
      '--nats',
      nats.url,
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
      at.out,
      '--allow',
      'read,write',
      '--quiet',
    ],
    {
      cwd: root,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: tmpdir(),
        OPENAI_API_KEY: server.apiKey,
        TROUPE_NATS_DEAD_AFTER_MS: '3000',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, done, stderr: () => stderr };
}

function logs(): string {
  return nodes.map((node) => `${node.name}:\n${node.log.slice(-30).join('\n')}`).join('\n');
}

/** The uninterrupted run on the two nodes: its request count and the agent of each request. */
async function uninterruptedRun(): Promise<{ requests: number; agents: string[] }> {
  const reference = place();
  server.reset();
  const clean = troupeRun(reference, false);
  expect(await clean.done, `${clean.stderr()}\n${logs()}`).toBe(0);
  expect(readFileSync(join(runDirOf(reference), 'answer.md'), 'utf8').trim()).toBe(FINAL);
  expect(readFileSync(join(runDirOf(reference), 'report.md'), 'utf8')).toBe(REPORT);
  return { requests: server.received, agents: [...server.agents] };
}

/**
 * A run killed with SIGKILL mid-stream in request `moment` (its third chunk): whether the kill
 * landed, the exit code, and the requests not answered whole at the kill (a response written
 * whole may still be unread).
 */
async function killedRun(
  at: Place,
  moment: number,
): Promise<{ killed: boolean; code: number | null; cut: Set<number> }> {
  server.reset();
  const run = troupeRun(at, false);
  let killed = false;
  let cut = new Set<number>();
  server.onChunk = (request, chunk) => {
    if (request === moment && chunk === 2 && !killed) {
      killed = true;
      cut = server.open();
      run.child.kill('SIGKILL');
    }
  };
  const code = await run.done;
  server.onChunk = undefined;
  return { killed, code, cut };
}

/**
 * After the resume: every request beyond the uninterrupted run's is one whose answer never
 * arrived whole (in flight at the kill, or cut when the old coordinator's actors stopped on the
 * nodes), and the run folder has the uninterrupted run's answer and report.
 */
function expectNothingPaidTwice(
  label: string,
  uninterrupted: number,
  cut: Set<number>,
  runDir: string,
): void {
  for (const request of server.aborted) cut.add(request);
  const extra = server.received - uninterrupted;
  expect(extra, label).toBeGreaterThanOrEqual(0);
  expect(extra, `${label}: requests ${[...cut].join(', ')} cut\n${logs()}`).toBeLessThanOrEqual(
    cut.size,
  );
  expect(readFileSync(join(runDir, 'answer.md'), 'utf8').trim(), label).toBe(FINAL);
  expect(readFileSync(join(runDir, 'report.md'), 'utf8'), label).toBe(REPORT);
}

describe.skipIf(natsServerBinary() === undefined)('troupe run --nats (child processes)', () => {
  it('resumes a coordinator killed with SIGKILL with no finished model call paid for twice', async () => {
    const { requests: uninterrupted, agents } = await uninterruptedRun();
    // Kill mid-stream inside a clerk's first call (three clerks on the nodes), the reporter's
    // first call, and the coordinator's turn between clerks and reporter.
    const firstOf = (agent: string): number => agents.indexOf(agent) + 1;
    const moments = [firstOf('clerk'), firstOf('reporter'), firstOf('reporter') - 1];
    let landed = 0;
    for (const moment of moments) {
      const label = `kill at request ${moment} (${agents[moment - 1]})`;
      const at = place();
      const { killed, code, cut } = await killedRun(at, moment);
      if (!killed) {
        expect(code, label).toBe(0);
        continue;
      }
      landed += 1;
      expect(code, label).toBe(null);
      // The resume, on the same nodes; the old coordinator's actors there stop when it starts.
      const resumed = troupeRun(at, true);
      expect(await resumed.done, `${label}\n${resumed.stderr()}\n${logs()}`).toBe(0);
      expectNothingPaidTwice(label, uninterrupted, cut, runDirOf(at));
    }
    expect(landed).toBeGreaterThanOrEqual(moments.length - 1);
  }, 600_000);

  it("resumes on a machine without the run folder: the journal comes from its NATS mirror, and the coordinator's finished turns are not paid again", async () => {
    const { requests: uninterrupted, agents } = await uninterruptedRun();
    // Killed in a clerk's first call (the coordinator's delegation is done) and in the coordinator's
    // turn between the clerks and the reporter (its turns and every clerk's are done).
    const moments = [agents.indexOf('clerk') + 1, agents.indexOf('reporter')];
    let landed = 0;
    for (const moment of moments) {
      const label = `kill at request ${moment} (${agents[moment - 1]}), resumed elsewhere`;
      const at = place();
      const { killed, code, cut } = await killedRun(at, moment);
      if (!killed) continue;
      landed += 1;
      expect(code, label).toBe(null);
      const runId = readdirSync(at.out)[0] ?? '';
      // Another machine: the same workspace (the files the clerks wrote), an out folder without the run.
      const elsewhere: Place = { ...at, out: join(place().dir, 'out') };
      const resumed = troupeRun(elsewhere, runId);
      expect(await resumed.done, `${label}\n${resumed.stderr()}\n${logs()}`).toBe(0);
      expectNothingPaidTwice(label, uninterrupted, cut, join(elsewhere.out, runId));
    }
    expect(landed).toBeGreaterThanOrEqual(1);
  }, 600_000);
});
