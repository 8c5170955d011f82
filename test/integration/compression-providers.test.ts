import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent } from '../../src/agent/agent.js';
import { compressionFor } from '../../src/agent/history.js';
import type { UnsequencedEvent } from '../../src/events/schema.js';
import { createModel, type ModelSpec } from '../../src/model/model.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool } from '../../src/tools/tool.js';
import {
  type AnthropicReply,
  anthropicReply,
  type MockAnthropicServer,
  startMockAnthropicServer,
} from '../helpers/mock-anthropic-server.js';
import {
  type MockOpenAIServer,
  type OpenAIReply,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { SUMMARY_REQUEST } from '../helpers/scripts.js';

// A 200-turn conversation through each real provider adapter and SDK, over
// HTTP, against the strict local mock servers (they answer 400 to any
// request that breaks the provider's rules: an orphaned tool result, a
// tool call without its result, two user messages in a row for Anthropic…),
// with a small context window so the history is compressed many times.

const TURNS = 200;
const WINDOW = 8192;
const MAX_OUTPUT = 2048;
const SYSTEM = 'You read the manual one page at a time with lookup and report when done.';
const TASK = `Read pages 1 to ${TURNS} of the manual with lookup, one page per call, then say done.`;

const lookup = defineTool({
  name: 'lookup',
  description: 'Returns one page of the manual.',
  parameters: z.object({ page: z.number().int() }),
  idempotent: true,
  execute: ({ page }) =>
    `Page ${page}. ${'The pump must be primed before the valve opens; check the seal. '.repeat(14)}`,
});

const servers: Array<MockOpenAIServer | MockAnthropicServer> = [];

afterEach(async () => {
  const open = servers.splice(0);
  await Promise.all(open.map((server) => server.close()));
  for (const server of open) expect(server.violations).toEqual([]);
});

type Body = Record<string, unknown>;

/** The prompt as a provider would count it: a token per four characters of what it got. */
function promptTokens(body: Body): number {
  return Math.ceil(
    JSON.stringify({ s: body['system'] ?? '', m: body['messages'], t: body['tools'] ?? [] })
      .length / 4,
  );
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => (typeof block?.text === 'string' ? (block.text as string) : ''))
    .join('\n');
}

/** The text of the first block of the first message (the task), as sent. */
function firstText(message: unknown): string | undefined {
  const content = (message as { content?: unknown } | undefined)?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const block = content[0] as { type?: string; text?: string } | undefined;
    return block?.type === 'text' ? block.text : undefined;
  }
  return undefined;
}

function run(spec: ModelSpec, env: NodeJS.ProcessEnv) {
  const events: UnsequencedEvent[] = [];
  const agent = new Agent({
    name: 'reader',
    model: createModel(spec, env),
    tools: new ToolRegistry([lookup]),
    system: SYSTEM,
    maxSteps: TURNS + 10,
    compression: compressionFor({ contextWindow: WINDOW }, spec),
    events: { emit: (event) => events.push(event) },
  });
  return { agent, events };
}

// The checks both providers share: every request under the window with its
// output, the system prompt and the task verbatim in every turn, many compressions.
function expectWithinWindow(
  bodies: readonly Body[],
  isSummary: (body: Body) => boolean,
  systemOf: (body: Body) => string,
  taskOf: (body: Body) => string | undefined,
  events: readonly UnsequencedEvent[],
): void {
  const turns = bodies.filter((body) => !isSummary(body));
  const summaries = bodies.filter(isSummary);
  expect(turns).toHaveLength(TURNS + 1);
  const compressed = events.filter((event) => event.type === 'history.compressed');
  expect(compressed.length).toBeGreaterThanOrEqual(10);
  expect(summaries).toHaveLength(compressed.length);
  let largest = 0;
  for (const body of bodies) {
    const tokens = promptTokens(body) + Number(body['max_tokens'] ?? MAX_OUTPUT);
    largest = Math.max(largest, tokens);
    expect(tokens).toBeLessThanOrEqual(WINDOW);
  }
  for (const body of turns) {
    expect(systemOf(body)).toBe(SYSTEM);
    expect(taskOf(body)).toBe(TASK);
  }
  // The history did grow to the limit, so the bound is not empty.
  expect(largest).toBeGreaterThan(WINDOW / 2);
}

describe('compression over 200 turns against the strict mock servers', () => {
  it('anthropic (thinking on): stays under the window with no request refused', async () => {
    let turn = 0;
    const server = await startMockAnthropicServer({
      respond: (body): AnthropicReply => {
        const thinking = body['thinking'] !== undefined;
        const think = (text: string) =>
          thinking ? [{ type: 'thinking' as const, thinking: text }] : [];
        if (textOf(body['system']).startsWith(SUMMARY_REQUEST)) {
          return anthropicReply({
            blocks: [
              ...think('Condense.'),
              {
                type: 'text',
                text: `Pages read so far, up to page ${turn}; each says to prime the pump.`,
              },
            ],
          });
        }
        turn += 1;
        if (turn > TURNS) return anthropicReply({ blocks: [{ type: 'text', text: 'done' }] });
        return anthropicReply({
          blocks: [
            ...think(`Next is page ${turn}.`),
            { type: 'tool_use', name: 'lookup', input: { page: turn } },
          ],
        });
      },
    });
    servers.push(server);
    const spec: ModelSpec = {
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      baseURL: server.baseURL,
      maxRetries: 0,
      maxTokens: MAX_OUTPUT,
      thinking: { budgetTokens: 1024 },
    };
    const { agent, events } = run(spec, { ANTHROPIC_API_KEY: server.apiKey });

    const result = await agent.run(TASK);

    expect(result.stopReason).toBe('final');
    expect(result.final).toBe('done');
    const bodies = server.requests.map((request) => request.body as Body);
    expect(server.violations).toEqual([]);
    expectWithinWindow(
      bodies,
      (body) => textOf(body['system']).startsWith(SUMMARY_REQUEST),
      (body) => textOf(body['system']),
      (body) => firstText((body['messages'] as unknown[])[0]),
      events,
    );
  });

  it('openai: stays under the window with no request refused', async () => {
    let turn = 0;
    const server = await startMockOpenAIServer({
      respond: (body): OpenAIReply => {
        const messages = body['messages'] as Array<{ role: string; content?: unknown }>;
        if (textOf(messages[0]?.content).startsWith(SUMMARY_REQUEST)) {
          return openaiReply({
            content: `Pages read so far, up to page ${turn}; each says to prime the pump.`,
          });
        }
        turn += 1;
        if (turn > TURNS) return openaiReply({ content: 'done' });
        return openaiReply({ toolCalls: [{ name: 'lookup', arguments: { page: turn } }] });
      },
    });
    servers.push(server);
    const spec: ModelSpec = {
      provider: 'openai',
      model: 'gpt-5.4-mini',
      baseURL: server.baseURL,
      maxRetries: 0,
      maxTokens: MAX_OUTPUT,
    };
    const { agent, events } = run(spec, { OPENAI_API_KEY: server.apiKey });

    const result = await agent.run(TASK);

    expect(result.stopReason).toBe('final');
    expect(result.final).toBe('done');
    const bodies = server.requests.map((request) => request.body as Body);
    expect(server.violations).toEqual([]);
    const messagesOf = (body: Body) =>
      body['messages'] as Array<{ role: string; content?: unknown }>;
    expectWithinWindow(
      bodies,
      (body) => textOf(messagesOf(body)[0]?.content).startsWith(SUMMARY_REQUEST),
      (body) =>
        messagesOf(body)[0]?.role === 'system' ? textOf(messagesOf(body)[0]?.content) : '',
      (body) => firstText(messagesOf(body)[1]),
      events,
    );
  });
});
