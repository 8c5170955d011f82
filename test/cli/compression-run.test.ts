import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { readTrace } from '../../src/events/trace.js';
import {
  type MockOpenAIServer,
  type OpenAIReply,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { SUMMARY_REQUEST } from '../helpers/scripts.js';

// `troupe run --context-window 8k` as a person runs it (node bin/troupe.js on
// the built dist/), against the strict local OpenAI-compatible mock server:
// the built-in researcher (no compression option of its own) and the
// coordinator compress their histories, and the trace says so.
const root = new URL('../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'troupe.js');
const WINDOW = 8000;
const READS = 12;
const PARTS = 3;
const TASK = 'Summarise the notes.';
const FILES = ['a.md', 'b.md', 'c.md', 'd.md'];

// Notes of about 4,000 characters each: twelve reads pass the window without compression.
function notesFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-cli-compress-notes-'));
  for (const [index, file] of FILES.entries())
    writeFileSync(
      join(dir, file),
      `# Notes ${index + 1}\n\n${'Grid storage grew in every region; the report lists each site. '.repeat(62)}\n`,
    );
  return dir;
}

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
  server = undefined;
});

type Body = Record<string, unknown>;
interface WireMessage {
  role: string;
  content?: unknown;
}

const messagesOf = (body: Body): WireMessage[] => body['messages'] as WireMessage[];
const isSummary = (body: Body): boolean =>
  String(messagesOf(body)[0]?.content ?? '').startsWith(SUMMARY_REQUEST);
const isCoordinator = (body: Body): boolean =>
  String(messagesOf(body)[0]?.content ?? '').startsWith('You are the coordinator');

/** The prompt as a provider would count it: a token per four characters of what it got. */
function promptTokens(body: Body): number {
  return Math.ceil(JSON.stringify({ m: body['messages'], t: body['tools'] ?? [] }).length / 4);
}

describe('troupe run compresses sub-agent and coordinator histories (child process, strict mock server)', () => {
  it('a researcher reading 12 files and a coordinator collecting 3 long answers stay under an 8k window', async () => {
    let coordinatorTurns = 0;
    // Calls per researcher, by its task (the task is the second message of every request, verbatim).
    const researcherTurns = new Map<string, number>();
    server = await startMockOpenAIServer({
      respond: (body): OpenAIReply => {
        const messages = messagesOf(body);
        if (isSummary(body))
          return openaiReply({ content: 'Earlier: files were read; nothing new.' });
        if (isCoordinator(body)) {
          coordinatorTurns += 1;
          if (coordinatorTurns <= PARTS) {
            return openaiReply({
              toolCalls: [
                {
                  name: 'delegate',
                  arguments: {
                    tasks: [
                      { role: 'researcher', task: `Read part ${coordinatorTurns} of the notes.` },
                    ],
                  },
                },
              ],
            });
          }
          return openaiReply({ content: 'All three parts are read.' });
        }
        const task = String(messages[1]?.content ?? '');
        const turn = (researcherTurns.get(task) ?? 0) + 1;
        researcherTurns.set(task, turn);
        if (turn <= READS) {
          const file = FILES[turn % FILES.length] as string;
          return openaiReply({ toolCalls: [{ name: 'read_file', arguments: { path: file } }] });
        }
        // A long answer: three of them in the coordinator's history pass its limit.
        return openaiReply({
          content: `${task} ${'The notes agree on storage growth. '.repeat(180)}`,
        });
      },
    });
    const mock = server;
    const out = mkdtempSync(join(tmpdir(), 'troupe-cli-compress-'));
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
        mock.baseURL,
        '--workspace',
        notesFolder(),
        '--out',
        out,
        '--threads',
        '1',
        '--quiet',
        '--allow',
        'read',
        '--context-window',
        '8k',
      ],
      {
        cwd: root,
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: tmpdir(),
          OPENAI_API_KEY: mock.apiKey,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child = started;
    let stderr = '';
    started.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) =>
      started.once('exit', (exit) => resolve(exit)),
    );

    expect(code, stderr).toBe(0);
    expect(mock.violations).toEqual([]);
    const bodies = mock.requests.map((request) => request.body as Body);
    for (const body of bodies) expect(promptTokens(body)).toBeLessThanOrEqual(WINDOW);
    // Every turn keeps its agent's system prompt and task verbatim, however often it was compressed.
    const firstOf = new Map<string, string>();
    for (const body of bodies.filter((b) => !isSummary(b))) {
      const [system, task] = messagesOf(body);
      expect(system?.role).toBe('system');
      expect(task?.role).toBe('user');
      const key = String(task?.content);
      const seen = firstOf.get(key);
      if (seen === undefined) firstOf.set(key, String(system?.content));
      else expect(String(system?.content)).toBe(seen);
    }
    expect([...firstOf.keys()].sort()).toEqual(
      [TASK, ...Array.from({ length: PARTS }, (_, i) => `Read part ${i + 1} of the notes.`)].sort(),
    );

    const [runId] = readdirSync(out);
    const trace = readTrace(join(out, runId as string, 'trace.jsonl'));
    expect(trace.invalidLines).toEqual([]);
    const compressed = trace.events.filter(
      (event): event is Extract<AgentEvent, { type: 'history.compressed' }> =>
        event.type === 'history.compressed',
    );
    const researchers = compressed.filter((event) => event.role === 'researcher');
    // Each of the three researchers compressed, with no role option: the run's window is enough.
    expect(new Set(researchers.map((event) => event.agentId)).size).toBe(PARTS);
    expect(compressed.some((event) => event.agentId === 'coordinator')).toBe(true);
    for (const event of compressed) {
      expect(event.afterTokens).toBeLessThan(event.beforeTokens);
      expect(event.limitTokens).toBe(WINDOW * 0.75);
      expect(event.usage).toBeDefined();
    }
    // One summary request per compression, no more.
    expect(bodies.filter(isSummary)).toHaveLength(compressed.length);
  });
});
