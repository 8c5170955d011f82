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
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';

// `troupe run --budget 20k` as a person runs it (node bin/troupe.js on the
// built dist/), against a local OpenAI-compatible server with latency that
// counts tokens as a provider bills them.
const root = new URL('../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'troupe.js');
const corpus = join(root, 'examples', 'corpus');
const BUDGET = 20_000;
const RESEARCHERS = 10;

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
}

function messagesOf(body: Body): WireMessage[] {
  return body['messages'] as WireMessage[];
}

/** The prompt as the server counts it: a token per four characters of the messages and tools it got. */
function promptTokens(body: Body): number {
  return Math.ceil(JSON.stringify({ m: body['messages'], t: body['tools'] ?? [] }).length / 4);
}

/** The request's output limit: a provider never writes more than this. */
function maxTokensOf(body: Body): number {
  const value = body['max_tokens'] ?? body['max_completion_tokens'];
  return typeof value === 'number' ? value : Number.POSITIVE_INFINITY;
}

/**
 * A reply that wants to write `wanted` tokens (its reasoning included, so
 * the text itself stays short): the usage the server reports is the prompt
 * it counted and what the request's max_tokens let it write.
 */
function reply(body: Body, wanted: number, spec: Parameters<typeof openaiReply>[0]): OpenAIReply {
  const completion = Math.min(wanted, maxTokensOf(body));
  return openaiReply({
    ...spec,
    usage: { prompt: promptTokens(body), completion },
    ...(completion < wanted && spec.toolCalls === undefined ? { finishReason: 'length' } : {}),
  });
}

/** Seeded latency: 40–160 ms per reply, the same run after run. */
function latencies(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return 40 + (state % 121);
  };
}

function traceOf(out: string): AgentEvent[] {
  const [runId] = readdirSync(out);
  if (runId === undefined) throw new Error(`no run folder in ${out}`);
  const trace = readTrace(join(out, runId, 'trace.jsonl'));
  expect(trace.invalidLines).toEqual([]);
  return trace.events;
}

const LAST_ANSWER = 'Parts 1 to 3 are summarised; the budget stopped the rest.';

describe('troupe run --budget (child process, local HTTP model server with latency)', () => {
  it('a budget of 20k with 10 parallel researchers: what the server bills is at most 20k plus one call max_tokens', async () => {
    const delay = latencies(7);
    server = await startMockOpenAIServer({
      respond: (body) => {
        const messages = messagesOf(body);
        const system = String(messages[0]?.content ?? '');
        const turns = messages.filter((message) => message.role === 'assistant').length;
        const delayMs = delay();
        if (system.startsWith('You are the coordinator')) {
          const last = String(messages.at(-1)?.content ?? '');
          if (turns === 0) {
            return reply(body, 200, {
              delayMs,
              toolCalls: [
                {
                  name: 'delegate',
                  arguments: {
                    tasks: Array.from({ length: RESEARCHERS }, (_, index) => ({
                      role: 'researcher',
                      task: `Read part ${index + 1} of the notes.`,
                    })),
                  },
                },
              ],
            });
          }
          return reply(body, 300, {
            delayMs,
            content: last.includes('budget is used up') ? LAST_ANSWER : 'Every part is read.',
          });
        }
        // A researcher lists the folder, then writes a long answer: about 4,000 tokens each.
        if (turns === 0)
          return reply(body, 1200, {
            delayMs,
            toolCalls: [{ name: 'list_dir', arguments: { path: '.' } }],
          });
        return reply(body, 1800, { delayMs, content: 'The part says what the notes say.' });
      },
    });
    const mock = server;
    const out = mkdtempSync(join(tmpdir(), 'troupe-cli-budget-'));
    const started = spawn(
      process.execPath,
      [
        bin,
        'run',
        'Summarise the notes.',
        '--provider',
        'openai',
        '--model',
        'mock-model',
        '--base-url',
        mock.baseURL,
        '--workspace',
        corpus,
        '--out',
        out,
        '--threads',
        '2',
        '--quiet',
        '--budget',
        '20k',
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
    let stdout = '';
    let stderr = '';
    started.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    started.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) =>
      started.once('exit', (exit) => resolve(exit)),
    );

    // A run the budget stopped is not a success.
    expect(code, stderr).toBe(1);
    const bodies = mock.requests
      .map((request) => request.body as Body)
      .filter((body) => Array.isArray(body['messages']));
    const maxTokens = bodies.map(maxTokensOf);
    // Every request carried a max_tokens, never above the default of 4,096.
    for (const value of maxTokens) expect(value).toBeLessThanOrEqual(4096);
    // The bound: what a provider bills (whole replies, and the prompts of requests closed early).
    const largest = Math.max(...maxTokens);
    expect(mock.billedTokens).toBeLessThanOrEqual(BUDGET + largest);
    // The budget was needed: the researchers alone wanted about twice as much.
    expect(bodies.length).toBeLessThan(1 + 2 * RESEARCHERS + 1);

    const events = traceOf(out);
    const end = events.at(-1);
    expect(end).toMatchObject({ type: 'run.finished', status: 'budget', final: LAST_ANSWER });
    const exceeded = events.find(
      (event) => event.type === 'budget.exceeded' && event.scope === 'tree',
    );
    expect(exceeded).toMatchObject({ metric: 'tokens', limit: BUDGET });
    // The coordinator's last turn came after the stop, with a max_tokens inside the limit.
    const lastRequest = events.filter(
      (event) => event.type === 'model.request' && event.agentId === 'coordinator',
    );
    expect(lastRequest.at(-1)?.seq ?? 0).toBeGreaterThan(exceeded?.seq ?? 0);
    // What the run counted is what the server billed for whole replies.
    const usage = end?.type === 'run.finished' ? end.usage : undefined;
    const used = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(mock.billedTokens);
    expect(used).toBeLessThanOrEqual(BUDGET);
    // Researchers the budget stopped say so.
    const stopped = events.filter(
      (event) =>
        event.type === 'agent.finished' &&
        event.role === 'researcher' &&
        event.status !== 'completed',
    );
    expect(stopped.length).toBeGreaterThan(0);
    for (const event of stopped)
      expect(event.type === 'agent.finished' ? event.error?.code : '').toBe('budget.exceeded');
    // The summary says the budget stopped it, and how much was used.
    expect(stdout).toMatch(/Run \S+ budget in/);
    expect(stdout).toContain(
      `stopped by its token budget: tokens ${used.toLocaleString('en-US')} of 20,000 used`,
    );
  });
});
