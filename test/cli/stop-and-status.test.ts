import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { readTrace } from '../../src/events/trace.js';
import {
  type MockOpenAIServer,
  type OpenAIReply,
  type OpenAIResponder,
  openaiError,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';

// `troupe run` as a person runs it (node bin/troupe.js on the built dist/),
// against a local OpenAI-compatible server with latency and injected faults.
const root = new URL('../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'troupe.js');
const corpus = join(root, 'examples', 'corpus');
const TASK = 'Compare the storage documents.';

beforeAll(() => {
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before these tests (npm test does).');
  }
});

let server: MockOpenAIServer | undefined;
let child: ChildProcess | undefined;

afterEach(async () => {
  if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
  await server?.close();
  expect(server?.violations ?? []).toEqual([]);
  server = undefined;
});

type Body = Record<string, unknown>;
interface WireMessage {
  role: string;
  content?: unknown;
  tool_calls?: unknown[];
}

/** Who is asking, from the system prompt the request carries. */
function caller(body: Body): 'coordinator' | 'researcher' | 'analyst' | 'reporter' | 'other' {
  const system = String((body['messages'] as WireMessage[])[0]?.content ?? '');
  if (system.startsWith('You are the coordinator')) return 'coordinator';
  if (system.startsWith('You are a researcher')) return 'researcher';
  if (system.startsWith('You are an analyst')) return 'analyst';
  if (system.startsWith('You are the reporter')) return 'reporter';
  return 'other';
}

/** The model's turns so far in this request's conversation. */
function turns(body: Body): number {
  return (body['messages'] as WireMessage[]).filter((message) => message.role === 'assistant')
    .length;
}

/** The tool names the request offers. */
function toolNames(body: Body): string[] {
  const tools = (body['tools'] as Array<{ function: { name: string } }> | undefined) ?? [];
  return tools.map((tool) => tool.function.name);
}

function delegateCall(tasks: Array<{ role: string; task: string }>): OpenAIReply {
  return openaiReply({ toolCalls: [{ name: 'delegate', arguments: { tasks } }] });
}

interface Run {
  child: ChildProcess;
  out: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

async function startRun(respond: OpenAIResponder, extra: string[] = []): Promise<Run> {
  server = await startMockOpenAIServer({ respond });
  const out = mkdtempSync(join(tmpdir(), 'troupe-cli-stop-'));
  const started = spawn(
    process.execPath,
    [
      bin,
      'run',
      TASK,
      '--provider',
      'openai',
      '--model',
      'mock-model',
      '--base-url',
      server.baseURL,
      '--workspace',
      corpus,
      '--out',
      out,
      '--threads',
      '2',
      '--quiet',
      ...extra,
    ],
    {
      cwd: root,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: tmpdir(),
        OPENAI_API_KEY: server.apiKey,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child = started;
  let stdout = '';
  let stderr = '';
  started.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  started.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exit = new Promise<number | null>((resolve) =>
    started.once('exit', (code) => resolve(code)),
  );
  return { child: started, out, stdout: () => stdout, stderr: () => stderr, exit };
}

function traceOf(out: string): AgentEvent[] {
  const [runId] = readdirSync(out);
  if (runId === undefined) throw new Error(`no run folder in ${out}`);
  const trace = readTrace(join(out, runId, 'trace.jsonl'));
  expect(trace.invalidLines).toEqual([]);
  return trace.events;
}

function finished(
  events: readonly AgentEvent[],
): Map<string, Extract<AgentEvent, { type: 'agent.finished' }>> {
  const map = new Map<string, Extract<AgentEvent, { type: 'agent.finished' }>>();
  for (const event of events) if (event.type === 'agent.finished') map.set(event.agentId, event);
  return map;
}

describe('troupe run stops when told to (child process, local HTTP model server)', () => {
  it('Ctrl-C with 50 sub-agents mid-call: exit 130 within the grace period plus 1 s, every agent cancelled, every request closed', async () => {
    const researchers = 50;
    const run = await startRun((body) => {
      if (caller(body) === 'coordinator') {
        if (turns(body) === 0) {
          return delegateCall(
            Array.from({ length: researchers }, (_, index) => ({
              role: 'researcher',
              task: `Read part ${index + 1} of the notes.`,
            })),
          );
        }
        return openaiReply({ content: 'Stopped.' });
      }
      // A slow provider: every sub-agent is still waiting for its reply when Ctrl-C comes.
      return openaiReply({ content: 'Nothing found.', delayMs: 120_000 });
    });
    const mock = server as MockOpenAIServer;
    await mock.until(() => mock.inFlight === researchers);
    const interruptedAt = Date.now();
    run.child.kill('SIGINT');
    const code = await run.exit;
    const elapsed = Date.now() - interruptedAt;
    expect(code, run.stderr()).toBe(130);
    // The runtime's default grace period is 5 s.
    expect(elapsed).toBeLessThan(5000 + 1000);

    const events = traceOf(run.out);
    const end = events.at(-1);
    expect(end).toMatchObject({ type: 'run.finished', status: 'cancelled' });
    const ends = finished(events);
    expect(ends.size).toBe(researchers + 1);
    for (const [id, event] of ends) {
      expect(event.status, id).toBe('cancelled');
      // No sub-agent got a reply: each was stopped inside its one model call.
      if (id !== 'coordinator') expect(event.steps ?? 0, id).toBe(0);
    }
    // Every request was closed by the run itself (before its last event), not by the process exiting.
    expect(mock.abandoned).toBe(researchers);
    expect(mock.inFlight).toBe(0);
    for (const at of mock.hangUps) expect(at).toBeLessThanOrEqual(end?.ts ?? 0);
    expect(run.stderr()).toContain(`Interrupted: ${researchers + 1} agents cancelled`);
  });
});

/** The task a sub-agent was given: its first user message. */
function taskOf(body: Body): string {
  const first = (body['messages'] as WireMessage[]).find((message) => message.role === 'user');
  return String(first?.content ?? '');
}

// A reason long enough that a cut shows (the provider adapter keeps up to 500 characters of it).
function longReason(part: number): string {
  return `part ${part} is refused by the provider's content policy for this deployment; ${'the request was well formed but this account may not use the model. '.repeat(4)}end of reason ${part}.`;
}

/** Each failed agent's whole reason, as its agent.finished carries it, is in the summary. */
function expectReasonsInFull(stdout: string, events: readonly AgentEvent[], ids: string[]): void {
  const summary = stdout.slice(stdout.lastIndexOf('did not complete:'));
  for (const id of ids) {
    const reason = finished(events).get(id)?.error?.message ?? '';
    expect(reason).toContain(`end of reason ${id.split('-')[1]}.`);
    expect(summary).toContain(`${id} failed: ${reason}`);
  }
}

describe('troupe run reports what happened (child process, local HTTP model server)', () => {
  const three = Array.from({ length: 3 }, (_, index) => ({
    role: 'researcher',
    task: `Read part ${index + 1} of the notes.`,
  }));

  it('exits 1 when every sub-agent fails, printing each reason in full', async () => {
    const run = await startRun((body) => {
      if (caller(body) === 'coordinator') {
        return turns(body) === 0
          ? delegateCall(three)
          : openaiReply({ content: 'Nothing could be read: every researcher failed.' });
      }
      const part = Number(/part (\d+)/.exec(taskOf(body))?.[1]);
      return openaiError(400, longReason(part));
    });
    const code = await run.exit;
    expect(code, run.stderr()).toBe(1);
    const events = traceOf(run.out);
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'failed' });
    const ends = finished(events);
    for (const part of [1, 2, 3]) expect(ends.get(`researcher-${part}`)?.status).toBe('failed');
    expect(run.stdout()).toContain('3 agents did not complete:');
    expectReasonsInFull(run.stdout(), events, ['researcher-1', 'researcher-2', 'researcher-3']);
    expect(run.stdout()).toMatch(/Run \S+ failed in/);
  });

  it('exits 3 (partial) when some sub-agents fail, with the failed one and its reason in the summary', async () => {
    const run = await startRun((body) => {
      if (caller(body) === 'coordinator') {
        return turns(body) === 0
          ? delegateCall(three)
          : openaiReply({ content: 'Parts 1 and 2 are summarised; part 3 could not be read.' });
      }
      const part = Number(/part (\d+)/.exec(taskOf(body))?.[1]);
      return part === 3
        ? openaiError(400, longReason(part))
        : openaiReply({ content: `Part ${part} says little.` });
    });
    const code = await run.exit;
    expect(code, run.stderr()).toBe(3);
    const events = traceOf(run.out);
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'partial',
      final: 'Parts 1 and 2 are summarised; part 3 could not be read.',
    });
    expect(finished(events).get('coordinator')?.status).toBe('completed');
    expect(run.stdout()).toMatch(/Run \S+ partial in/);
    expect(run.stdout()).toContain('1 agent did not complete:');
    expectReasonsInFull(run.stdout(), events, ['researcher-3']);
  });

  it('tells a coordinator that answers while its sub-agents still run, once; answering again cancels them by choice', async () => {
    const run = await startRun((body) => {
      if (caller(body) === 'coordinator') {
        if (turns(body) === 0)
          return openaiReply({
            toolCalls: [
              { name: 'spawn_agent', arguments: { role: 'researcher', task: 'Read part 1.' } },
            ],
          });
        return openaiReply({ content: 'Done without waiting.' });
      }
      return openaiReply({ content: 'Part 1 says little.', delayMs: 120_000 });
    });
    const code = await run.exit;
    expect(code, run.stderr()).toBe(0);
    const events = traceOf(run.out);
    const nudges = events.filter(
      (event) => event.type === 'agent.nudged' && event.agentId === 'coordinator',
    );
    expect(nudges).toHaveLength(1);
    expect(nudges[0]).toMatchObject({ reason: expect.stringContaining('researcher-1') });
    expect(finished(events).get('researcher-1')?.status).toBe('cancelled');
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'completed' });
  });
});

describe('troupe run supervises the coordinator (child process, local HTTP model server)', () => {
  it("completes when the coordinator's stream is cut once: retried from its history, not restarted", async () => {
    let cuts = 0;
    const run = await startRun((body) => {
      if (caller(body) === 'coordinator') {
        if (turns(body) === 0)
          return delegateCall([
            { role: 'researcher', task: 'Read part 1 of the notes.' },
            { role: 'researcher', task: 'Read part 2 of the notes.' },
          ]);
        const answer = 'Both parts are summarised.';
        if (cuts === 0) {
          cuts += 1;
          // The connection dies after the first chunks of the answer.
          return openaiReply({
            content: answer,
            chunkSize: 4,
            cut: { afterEvents: 3, mode: 'destroy' },
          });
        }
        return openaiReply({ content: answer });
      }
      return openaiReply({ content: `${taskOf(body)} Done.` });
    });
    const code = await run.exit;
    expect(code, run.stderr()).toBe(0);
    expect(cuts).toBe(1);
    const events = traceOf(run.out);
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'completed',
      final: 'Both parts are summarised.',
    });
    const coordinator = finished(events).get('coordinator');
    expect(coordinator).toMatchObject({ status: 'completed', attempts: 2 });
    // The delegation was not made again: its result was in the history the retry continued from.
    const spawned = events.filter(
      (event) => event.type === 'agent.spawned' && event.agentId !== 'coordinator',
    );
    expect(spawned.map((event) => event.agentId).sort()).toEqual(['researcher-1', 'researcher-2']);
    expect(
      events.some(
        (event) =>
          event.type === 'agent.progress' &&
          event.agentId === 'coordinator' &&
          event.note.startsWith('attempt 1 failed'),
      ),
    ).toBe(true);
  });
});

describe('troupe run fits the roles to the grants (child process, local HTTP model server)', () => {
  it('--allow read: researchers run without fetch_url, the reporter without write_file, and the run completes', async () => {
    const offered = new Map<string, string[]>();
    const run = await startRun(
      (body) => {
        const who = caller(body);
        offered.set(who, toolNames(body));
        if (who === 'coordinator') {
          if (turns(body) === 0)
            return delegateCall([
              { role: 'researcher', task: 'Read part 1 of the notes.' },
              { role: 'researcher', task: 'Read part 2 of the notes.' },
            ]);
          if (turns(body) === 1)
            return delegateCall([
              { role: 'reporter', task: 'Write the report from: parts 1 and 2.' },
            ]);
          return openaiReply({ content: 'The report is in the answer below.' });
        }
        if (who === 'reporter') return openaiReply({ content: '# Report\n\nParts 1 and 2 agree.' });
        return openaiReply({ content: `${taskOf(body)} Done.` });
      },
      ['--allow', 'read'],
    );
    const code = await run.exit;
    expect(code, run.stderr()).toBe(0);
    expect(offered.get('researcher')).toEqual(expect.arrayContaining(['read_file', 'list_dir']));
    expect(offered.get('researcher')).not.toContain('fetch_url');
    expect(offered.get('reporter')).not.toContain('write_file');
    const events = traceOf(run.out);
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'completed' });
    const adapted = events.filter((event) => event.type === 'role.adapted');
    expect(adapted).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'researcher', dropped: ['fetch_url'], tiers: ['network'] }),
        expect.objectContaining({ name: 'reporter', dropped: ['write_file'], tiers: ['write'] }),
      ]),
    );
    const ends = finished(events);
    for (const id of ['researcher-1', 'researcher-2', 'reporter-1'])
      expect(ends.get(id)?.status, id).toBe('completed');
    expect(run.stdout()).toContain(
      'role researcher runs without fetch_url: the network permission is not granted',
    );
    expect(run.stdout()).toContain('researcher ran without fetch_url');
    expect(run.stderr()).toContain(
      'troupe: role "researcher" ran without fetch_url: the network permission is not granted; rerun with --allow read,network to give it back.',
    );
  });
});
