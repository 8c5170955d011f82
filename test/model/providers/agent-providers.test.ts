import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent } from '../../../src/agent/agent.js';
import { EventBus } from '../../../src/events/bus.js';
import type { AgentEvent } from '../../../src/events/schema.js';
import { createModel } from '../../../src/model/model.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { defineTool } from '../../../src/tools/tool.js';
import {
  anthropicReply,
  type MockAnthropicServer,
  startMockAnthropicServer,
} from '../../helpers/mock-anthropic-server.js';
import {
  type MockOpenAIServer,
  openaiReply,
  startMockOpenAIServer,
} from '../../helpers/mock-openai-server.js';

// The lead's Agent driving each real provider adapter, over the real SDK, against the mocks.

const weather = defineTool({
  name: 'get_weather',
  description: 'Current weather in a city.',
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => (city === 'Paris' ? '18°C, clear' : '14°C, rain'),
});

let cancelRun: (() => void) | undefined;
const slowLookup = defineTool({
  name: 'lookup',
  description: 'Looks something up; the run is cancelled while it works.',
  parameters: z.object({ query: z.string() }),
  execute: () => {
    cancelRun?.();
    return 'too late';
  },
});

const servers: Array<MockOpenAIServer | MockAnthropicServer> = [];

afterEach(async () => {
  const open = servers.splice(0);
  await Promise.all(open.map((server) => server.close()));
  for (const server of open) expect(server.violations).toEqual([]);
});

function collect(bus: EventBus): AgentEvent[] {
  const events: AgentEvent[] = [];
  bus.onAny((event) => events.push(event));
  return events;
}

async function openaiWorld() {
  const server = await startMockOpenAIServer();
  servers.push(server);
  const model = createModel(
    { provider: 'openai', model: 'gpt-test', baseURL: server.baseURL, maxRetries: 0 },
    { OPENAI_API_KEY: server.apiKey },
  );
  return { server, model };
}

async function anthropicWorld(key?: string) {
  const server = await startMockAnthropicServer();
  servers.push(server);
  const model = createModel(
    {
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      baseURL: server.baseURL,
      maxRetries: 0,
      thinking: { budgetTokens: 1024 },
    },
    { ANTHROPIC_API_KEY: key ?? server.apiKey },
  );
  return { server, model };
}

describe('Agent with the openai provider', () => {
  it('runs parallel tool calls to a final answer, streaming deltas and summing usage', async () => {
    const { server, model } = await openaiWorld();
    server.enqueue(
      openaiReply({
        content: '<think>Two cities, two calls.</think>',
        toolCalls: [
          { name: 'get_weather', arguments: { city: 'Paris' } },
          { name: 'get_weather', arguments: { city: 'Bogotá' } },
        ],
        interleaveToolCalls: true,
        chunkSize: 3,
        usage: { prompt: 50, completion: 20 },
      }),
      openaiReply({
        content: 'Paris: 18°C. Bogotá: 14°C.',
        chunkSize: 4,
        usage: { prompt: 90, completion: 12 },
      }),
    );
    const bus = new EventBus();
    const events = collect(bus);
    const agent = new Agent({
      name: 'forecaster',
      model,
      tools: new ToolRegistry([weather]),
      events: bus,
      system: 'Answer briefly.',
    });

    const result = await agent.run('Weather in Paris and Bogotá?');

    expect(result).toMatchObject({
      stopReason: 'final',
      final: 'Paris: 18°C. Bogotá: 14°C.',
      usage: { inputTokens: 140, outputTokens: 32 },
    });
    const sent = server.requests[1]?.body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(sent.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
    ]);
    expect(sent.messages.slice(3).map((message) => message.content)).toEqual([
      '18°C, clear',
      '14°C, rain',
    ]);
    const deltas = events.filter((event) => event.type === 'model.delta');
    expect(
      deltas
        .filter((event) => event.kind === 'thinking')
        .map((event) => event.text)
        .join(''),
    ).toBe('Two cities, two calls.');
    expect(
      deltas
        .filter((event) => event.kind === 'text')
        .map((event) => event.text)
        .join(''),
    ).toBe('Paris: 18°C. Bogotá: 14°C.');
  });

  it('keeps the conversation valid for the next run after a run is cancelled mid-tool', async () => {
    const { server, model } = await openaiWorld();
    server.enqueue(
      openaiReply({
        toolCalls: [
          { name: 'lookup', arguments: { query: 'a' } },
          { name: 'lookup', arguments: { query: 'b' } },
        ],
      }),
      openaiReply({ content: 'Fresh start.' }),
    );
    const agent = new Agent({ name: 'worker', model, tools: new ToolRegistry([slowLookup]) });
    const controller = new AbortController();
    cancelRun = () => controller.abort();

    const cancelled = await agent.run('Look up a and b.', { signal: controller.signal });
    cancelRun = undefined;
    const next = await agent.run('Forget that; say hi.');

    expect(cancelled.stopReason).toBe('cancelled');
    expect(next).toMatchObject({ stopReason: 'final', final: 'Fresh start.' });
  });
});

describe('Agent with the anthropic provider', () => {
  it('runs a thinking tool-use loop, sending the signed thinking back, to a final answer', async () => {
    const { server, model } = await anthropicWorld();
    server.enqueue(
      anthropicReply({
        blocks: [
          { type: 'thinking', thinking: 'I need the weather for Paris.' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', name: 'get_weather', input: { city: 'Paris' } },
        ],
        chunkSize: 5,
        usage: { input: 40, output: 30, cacheWrite: 100 },
      }),
      anthropicReply({
        blocks: [
          { type: 'thinking', thinking: 'Done.' },
          { type: 'text', text: 'It is 18°C in Paris.' },
        ],
        usage: { input: 60, output: 10, cacheRead: 100 },
      }),
    );
    const bus = new EventBus();
    const events = collect(bus);
    const agent = new Agent({
      name: 'forecaster',
      model,
      tools: new ToolRegistry([weather]),
      events: bus,
      system: 'Answer briefly.',
    });

    const result = await agent.run('Weather in Paris?');

    expect(result).toMatchObject({
      stopReason: 'final',
      final: 'It is 18°C in Paris.',
      usage: { inputTokens: 100, outputTokens: 40, cacheReadTokens: 100, cacheWriteTokens: 100 },
    });
    const thinking = events.flatMap((event) =>
      event.type === 'model.delta' && event.kind === 'thinking' ? [event.text] : [],
    );
    expect(thinking.join('')).toBe('I need the weather for Paris.Done.');
    const responses = events.filter((event) => event.type === 'model.response');
    expect(responses.map((event) => event.thinking)).toEqual([
      'I need the weather for Paris.',
      'Done.',
    ]);
    expect(server.requests).toHaveLength(2);
  });

  it('ends with stopReason error and a message a person can act on when the key is refused', async () => {
    const { model } = await anthropicWorld('sk-ant-not-the-right-key-000000');
    const agent = new Agent({ name: 'forecaster', model, tools: new ToolRegistry([weather]) });

    const result = await agent.run('Weather in Paris?');

    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({
      code: 'model.auth',
      details: { provider: 'anthropic', status: 401 },
    });
    expect(result.error?.message).toContain('authentication failed: check ANTHROPIC_API_KEY');
    expect(result.error?.message).not.toMatch(/\n\s+at /);
    expect(JSON.stringify(result)).not.toContain('not-the-right-key');
  });
});
