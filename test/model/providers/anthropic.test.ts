import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTroupeError, serializeError, type TroupeError } from '../../../src/errors.js';
import { createModel, type Model, type ModelSpec } from '../../../src/model/model.js';
import {
  addUsage,
  emptyUsage,
  type Message,
  type ModelResponse,
  type ModelStreamPart,
  type ToolSchema,
} from '../../../src/model/types.js';
import {
  anthropicError,
  anthropicReply,
  type MockAnthropicServer,
  mockSignature,
  startMockAnthropicServer,
} from '../../helpers/mock-anthropic-server.js';

const weatherTool: ToolSchema = {
  name: 'get_weather',
  description: 'Current weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

let server: MockAnthropicServer;

beforeEach(async () => {
  server = await startMockAnthropicServer();
});

afterEach(async () => {
  await server.close();
  // A request that broke a provider rule fails the test, whatever it asserted.
  expect(server.violations).toEqual([]);
});

type AnthropicOverrides = Partial<Extract<ModelSpec, { provider: 'anthropic' }>>;

function anthropic(overrides: AnthropicOverrides = {}): Model {
  return createModel(
    {
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      baseURL: server.baseURL,
      maxRetries: 0,
      ...overrides,
    },
    { ANTHROPIC_API_KEY: server.apiKey },
  );
}

async function collect(stream: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

function finishOf(parts: readonly ModelStreamPart[]): ModelResponse {
  const last = parts.at(-1);
  if (last?.type !== 'finish')
    throw new Error(`the stream did not end with finish: ${JSON.stringify(last)}`);
  return last.response;
}

async function failure(promise: Promise<unknown>): Promise<TroupeError> {
  try {
    await promise;
  } catch (error) {
    if (isTroupeError(error)) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

function sentBody(index: number): any {
  return server.requests[index]?.body as Record<string, any>;
}

function continued(response: ModelResponse, results: Array<[string, string]>): Message[] {
  return [
    ...ask,
    {
      role: 'assistant',
      content: response.content,
      toolCalls: response.toolCalls,
      ...(response.thinking === undefined ? {} : { thinking: response.thinking }),
      ...(response.thinkingParts === undefined ? {} : { thinkingParts: response.thinkingParts }),
    },
    ...results.map(
      ([id, content]): Message => ({ role: 'tool', toolCallId: id, name: 'get_weather', content }),
    ),
  ];
}

const ask: Message[] = [
  { role: 'system', content: 'You answer weather questions.' },
  { role: 'user', content: 'Weather in Paris?' },
];

describe('AnthropicModel', () => {
  it('runs a multi-turn tool conversation: system top-level, tool_use, tool_result first in the next user message', async () => {
    server.enqueue(
      anthropicReply({
        blocks: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_paris', name: 'get_weather', input: { city: 'Paris' } },
        ],
      }),
      anthropicReply({ blocks: [{ type: 'text', text: 'It is 18°C in Paris.' }] }),
    );
    const model = anthropic();

    const first = await model.complete({ messages: ask, tools: [weatherTool] });
    const second = await model.complete({
      messages: continued(first, [['toolu_paris', '18°C']]),
      tools: [weatherTool],
    });

    expect(first).toMatchObject({
      content: 'Let me check.',
      stopReason: 'tool_calls',
      toolCalls: [
        {
          id: 'toolu_paris',
          name: 'get_weather',
          arguments: { city: 'Paris' },
          raw: '{"city":"Paris"}',
        },
      ],
    });
    expect(second).toMatchObject({ content: 'It is 18°C in Paris.', stopReason: 'end' });
    expect(sentBody(1)).toEqual({
      model: 'claude-sonnet-4-6',
      max_tokens: 4096,
      stream: false,
      system: 'You answer weather questions.',
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather in a city.',
          input_schema: weatherTool.parameters,
        },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'toolu_paris', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_paris', content: '18°C' }],
        },
      ],
    });
  });

  it('answers parallel tool calls in one user message, results before the text that follows them', async () => {
    server.enqueue(
      anthropicReply({
        blocks: [
          { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: { city: 'Bogotá' } },
        ],
        chunkSize: 3,
      }),
      anthropicReply({ blocks: [{ type: 'text', text: 'Paris 18°C, Bogotá 14°C.' }] }),
    );
    const model = anthropic();

    const response = finishOf(await collect(model.stream({ messages: ask, tools: [weatherTool] })));
    const history: Message[] = [
      ...continued(response, [
        ['toolu_a', '18°C'],
        ['toolu_b', '14°C'],
      ]),
      { role: 'user', content: 'Answer in one line.' },
    ];
    await model.complete({ messages: history, tools: [weatherTool] });

    expect(response.toolCalls.map((call) => [call.id, call.arguments])).toEqual([
      ['toolu_a', { city: 'Paris' }],
      ['toolu_b', { city: 'Bogotá' }],
    ]);
    expect(sentBody(1).messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_a', content: '18°C' },
        { type: 'tool_result', tool_use_id: 'toolu_b', content: '14°C' },
        { type: 'text', text: 'Answer in one line.' },
      ],
    });
  });

  it('joins input_json_delta chunks into the same response as the non-streamed call', async () => {
    const input = { city: 'Paris', days: 3, note: 'with "quotes", \\ and ünïcode' };
    const blocks = [
      { type: 'text' as const, text: 'Checking the forecast for you now.' },
      { type: 'tool_use' as const, id: 'toolu_1', name: 'get_weather', input },
    ];
    server.enqueue(anthropicReply({ blocks, chunkSize: 2 }), anthropicReply({ blocks }));
    const model = anthropic();

    const parts = await collect(model.stream({ messages: ask, tools: [weatherTool] }));
    const whole = await model.complete({ messages: ask, tools: [weatherTool] });

    const deltas = parts.filter((part) => part.type === 'tool-call-delta');
    expect(deltas.length).toBeGreaterThan(20);
    expect(deltas[0]).toEqual({
      type: 'tool-call-delta',
      index: 0,
      id: 'toolu_1',
      name: 'get_weather',
      argumentsDelta: '',
    });
    expect(finishOf(parts)).toEqual(whole);
    expect(whole.toolCalls[0]?.arguments).toEqual(input);
  });

  it('round-trips thinking and redacted thinking with signatures when the turn continues after tool results', async () => {
    const blocks = [
      { type: 'thinking' as const, thinking: 'The user wants Paris. I should call get_weather.' },
      { type: 'redacted_thinking' as const, data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
      {
        type: 'tool_use' as const,
        id: 'toolu_think',
        name: 'get_weather',
        input: { city: 'Paris' },
      },
    ];
    server.enqueue(
      anthropicReply({ blocks, chunkSize: 6 }),
      anthropicReply({
        blocks: [
          { type: 'thinking', thinking: 'Now answer.' },
          { type: 'text', text: '18°C.' },
        ],
      }),
    );
    const model = anthropic({ thinking: { budgetTokens: 2048 } });

    const parts = await collect(model.stream({ messages: ask, tools: [weatherTool] }));
    const response = finishOf(parts);
    const final = await model.complete({
      messages: continued(response, [['toolu_think', '18°C']]),
      tools: [weatherTool],
    });

    expect(response.thinking).toBe(
      'The user wants Paris. I should call get_weather.\n\n[redacted thinking]',
    );
    expect(
      parts.flatMap((part) => (part.type === 'thinking-delta' ? [part.text] : [])).join(''),
    ).toBe(response.thinking);
    expect(response.thinkingParts).toEqual([
      {
        type: 'thinking',
        thinking: 'The user wants Paris. I should call get_weather.',
        signature: mockSignature('The user wants Paris. I should call get_weather.'),
      },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
    ]);
    expect(sentBody(0)).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 2048 },
      max_tokens: 2048 + 4096,
    });
    expect(sentBody(1).thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(sentBody(1).messages[1].content.slice(0, 2)).toEqual([
      {
        type: 'thinking',
        thinking: 'The user wants Paris. I should call get_weather.',
        signature: mockSignature('The user wants Paris. I should call get_weather.'),
      },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4a' },
    ]);
    expect(final).toMatchObject({ content: '18°C.', thinking: 'Now answer.' });
  });

  it('sends the max_tokens a budgeted call was given, thinking less so that the answer keeps room', async () => {
    server.enqueue(
      anthropicReply({ blocks: [{ type: 'text', text: 'a' }] }),
      anthropicReply({ blocks: [{ type: 'text', text: 'b' }] }),
      anthropicReply({ blocks: [{ type: 'text', text: 'c' }] }),
    );
    const model = anthropic({ thinking: { budgetTokens: 4096 } });

    await model.complete({ messages: ask, maxTokens: 3000 });
    await model.complete({ messages: ask, maxTokens: 1100 });
    await model.complete({ messages: ask, maxTokens: 1000 });

    // 3,000 - 256 for the answer; then the API's minimum of 1,024 (below max_tokens); then none.
    expect(sentBody(0)).toMatchObject({
      max_tokens: 3000,
      thinking: { type: 'enabled', budget_tokens: 2744 },
    });
    expect(sentBody(1)).toMatchObject({
      max_tokens: 1100,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(sentBody(2).max_tokens).toBe(1000);
    expect(sentBody(2).thinking).toBeUndefined();
  });

  it('sends adaptive thinking when asked, and turns thinking off for a turn whose history lost its thinking blocks', async () => {
    server.enqueue(
      anthropicReply({
        blocks: [
          { type: 'thinking', thinking: 'Hmm.' },
          { type: 'text', text: 'Hi.' },
        ],
      }),
      anthropicReply({ blocks: [{ type: 'text', text: '18°C.' }] }),
    );
    const model = anthropic({ thinking: { budgetTokens: 1024, adaptive: true } });

    await model.complete({ messages: ask });
    await model.complete({
      messages: [
        ...ask,
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            {
              id: 'call_from_openai',
              name: 'get_weather',
              arguments: { city: 'Paris' },
              raw: '{"city":"Paris"}',
            },
          ],
        },
        { role: 'tool', toolCallId: 'call_from_openai', name: 'get_weather', content: '18°C' },
      ],
      tools: [weatherTool],
    });

    expect(sentBody(0).thinking).toEqual({ type: 'adaptive' });
    expect(sentBody(1).thinking).toBeUndefined();
  });

  it('repairs a conversation: first message user, roles alternate, late system notes and empty messages handled', async () => {
    server.enqueue(anthropicReply({ blocks: [{ type: 'text', text: 'ok' }] }));

    await anthropic().complete({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'assistant', content: 'Hello! How can I help?' },
        { role: 'user', content: 'First question.' },
        { role: 'user', content: '   ' },
        { role: 'system', content: 'Budget is low: wrap up.' },
        { role: 'user', content: 'Second question.' },
        { role: 'assistant', content: '' },
        { role: 'assistant', content: 'Partial thought' },
      ],
    });

    expect(sentBody(0)).toMatchObject({
      system: 'Be brief.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: '(The conversation begins.)' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Hello! How can I help?' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'First question.' },
            { type: 'text', text: '(System) Budget is low: wrap up.' },
            { type: 'text', text: 'Second question.' },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'Partial thought' }] },
        { role: 'user', content: [{ type: 'text', text: 'Continue.' }] },
      ],
    });
  });

  it('answers a tool call cut off by cancellation with an error tool_result', async () => {
    server.enqueue(anthropicReply({ blocks: [{ type: 'text', text: 'Starting over.' }] }));

    await anthropic().complete({
      messages: [
        ...ask,
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            {
              id: 'toolu_lost',
              name: 'get_weather',
              arguments: { city: 'Paris' },
              raw: '{"city":"Paris"}',
            },
          ],
        },
        { role: 'user', content: 'Never mind.' },
      ],
      tools: [weatherTool],
    });

    expect(sentBody(0).messages.at(-1)).toMatchObject({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_lost', is_error: true },
        { type: 'text', text: 'Never mind.' },
      ],
    });
  });

  it('sums usage across calls, including cache read and write tokens, streamed and whole', async () => {
    server.enqueue(
      anthropicReply({
        blocks: [{ type: 'text', text: 'a' }],
        usage: { input: 100, output: 20, cacheRead: 2000, cacheWrite: 500 },
      }),
      anthropicReply({
        blocks: [{ type: 'text', text: 'b' }],
        usage: { input: 40, output: 7, cacheRead: 2500 },
      }),
    );
    const model = anthropic();

    const first = finishOf(await collect(model.stream({ messages: ask })));
    const second = await model.complete({ messages: ask });

    expect(first.usage).toEqual({
      inputTokens: 100,
      outputTokens: 20,
      cacheReadTokens: 2000,
      cacheWriteTokens: 500,
    });
    expect(addUsage(addUsage(emptyUsage(), first.usage), second.usage)).toEqual({
      inputTokens: 140,
      outputTokens: 27,
      cacheReadTokens: 4500,
      cacheWriteTokens: 500,
    });
  });

  it('succeeds after the SDK retries a 429', async () => {
    server.enqueue(
      anthropicError(
        429,
        'rate_limit_error',
        'Number of request tokens has exceeded your per-minute rate limit',
        { 'retry-after-ms': '1' },
      ),
      anthropicReply({ blocks: [{ type: 'text', text: 'finally' }] }),
    );

    const response = await anthropic({ maxRetries: 2 }).complete({ messages: ask });

    expect(response.content).toBe('finally');
    expect(server.requests).toHaveLength(2);
  });

  it('reports model.server when 529 overloaded answers outlast the retries', async () => {
    const overloaded = anthropicError(529, 'overloaded_error', 'Overloaded', {
      'retry-after-ms': '1',
    });
    server.enqueue(overloaded, overloaded, overloaded);

    const error = await failure(anthropic({ maxRetries: 2 }).complete({ messages: ask }));

    expect(error.code).toBe('model.server');
    expect(error.details).toMatchObject({
      provider: 'anthropic',
      status: 529,
      requestId: 'req_mock_3',
      type: 'overloaded_error',
    });
    expect(error.message).toContain('is overloaded (529: "Overloaded"); gave up after 2 retries');
    expect(server.requests).toHaveLength(3);
  });

  it.each(['destroy', 'end'] as const)(
    'fails with model.stream_interrupted, never a short answer, when the stream is cut (%s)',
    async (mode) => {
      server.enqueue(
        anthropicReply({
          blocks: [{ type: 'text', text: 'A long answer that will not arrive whole.' }],
          chunkSize: 4,
          cut: { afterEvents: 6, mode },
        }),
      );
      const parts: ModelStreamPart[] = [];

      const error = await failure(
        (async () => {
          for await (const part of anthropic().stream({ messages: ask })) parts.push(part);
        })(),
      );

      expect(error.code).toBe('model.stream_interrupted');
      expect(parts.some((part) => part.type === 'finish')).toBe(false);
      expect(parts.filter((part) => part.type === 'text-delta').length).toBeGreaterThan(0);
    },
  );

  it('fails with model.stream_interrupted quoting the error event sent mid-stream', async () => {
    server.enqueue(
      anthropicReply({
        blocks: [{ type: 'text', text: 'Half an answer, then trouble.' }],
        chunkSize: 4,
        errorAfter: { events: 5, type: 'overloaded_error', message: 'Overloaded' },
      }),
    );

    const error = await failure(collect(anthropic().stream({ messages: ask })));

    expect(error.code).toBe('model.stream_interrupted');
    expect(error.message).toContain('"Overloaded"');
  });

  it('says authentication failed: check ANTHROPIC_API_KEY on a 401, without the key', async () => {
    const model = createModel(
      { provider: 'anthropic', model: 'claude-sonnet-4-6', baseURL: server.baseURL, maxRetries: 0 },
      { ANTHROPIC_API_KEY: 'sk-ant-wrong-key-abcdefghijklmnop' },
    );

    const error = await failure(model.complete({ messages: ask }));

    expect(error.code).toBe('model.auth');
    expect(error.message).toContain('authentication failed: check ANTHROPIC_API_KEY');
    expect(error.details).toMatchObject({ status: 401 });
    expect(JSON.stringify(serializeError(error))).not.toContain('wrong-key');
  });

  it('quotes the API message on a 400 and names the model on a 404', async () => {
    server.enqueue(
      anthropicError(
        400,
        'invalid_request_error',
        'prompt is too long: 210000 tokens > 200000 maximum',
      ),
      anthropicError(404, 'not_found_error', 'model: claude-sonnet-4-6'),
    );
    const model = anthropic();

    const badRequest = await failure(model.complete({ messages: ask }));
    const notFound = await failure(model.complete({ messages: ask }));

    expect(badRequest.code).toBe('model.bad_request');
    expect(badRequest.message).toContain('"prompt is too long: 210000 tokens > 200000 maximum"');
    expect(notFound.code).toBe('model.not_found');
    expect(notFound.message).toContain('no model "claude-sonnet-4-6"');
  });

  it('refuses options the API would reject before any request', () => {
    expect(() => anthropic({ thinking: { budgetTokens: 4096 }, maxTokens: 4096 })).toThrow(
      /must be greater than thinking.budgetTokens 4096/,
    );
    expect(() => anthropic({ temperature: 0.5 })).toThrow(/rejects temperature/);
  });

  it('fails with usage.missing_key naming the variable, and with cancelled when aborted', async () => {
    const keyless = createModel(
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        baseURL: server.baseURL,
        apiKeyEnv: 'CLAUDE_KEY',
      },
      {},
    );
    const missing = await failure(keyless.complete({ messages: ask }));
    server.enqueue(
      anthropicReply({
        blocks: [{ type: 'text', text: 'This stream will be abandoned half-way.' }],
        chunkSize: 4,
      }),
    );
    const controller = new AbortController();

    const cancelled = await failure(
      (async () => {
        for await (const part of anthropic().stream(
          { messages: ask },
          { signal: controller.signal },
        )) {
          if (part.type === 'text-delta') controller.abort();
        }
      })(),
    );

    expect(missing.code).toBe('usage.missing_key');
    expect(missing.message).toContain('CLAUDE_KEY');
    expect(cancelled.code).toBe('cancelled');
  });

  it('reads the documented Messages shapes (fixtures), whole and streamed', async () => {
    const fixtures = new URL('../../fixtures/providers/anthropic/', import.meta.url);
    server.enqueue(
      {
        kind: 'raw',
        contentType: 'application/json',
        body: readFileSync(new URL('message-thinking-tool-use.json', fixtures), 'utf8'),
      },
      {
        kind: 'raw',
        contentType: 'text/event-stream',
        body: readFileSync(new URL('stream-thinking-tool-use.chunks.txt', fixtures), 'utf8'),
      },
    );
    const model = anthropic();

    const whole = await model.complete({ messages: ask, tools: [weatherTool] });
    const streamed = finishOf(await collect(model.stream({ messages: ask, tools: [weatherTool] })));

    expect(whole).toMatchObject({
      content: "I'll check the current weather in San Francisco for you.",
      thinking:
        'The user wants the weather in San Francisco. I should call get_weather.\n\n[redacted thinking]',
      toolCalls: [
        {
          id: 'toolu_01A09q90qw90lq917835lq9',
          arguments: { location: 'San Francisco, CA', unit: 'celsius' },
        },
      ],
      usage: { inputTokens: 472, outputTokens: 91, cacheReadTokens: 2048, cacheWriteTokens: 1024 },
      stopReason: 'tool_calls',
    });
    expect(whole.thinkingParts).toHaveLength(2);
    expect(streamed).toEqual({
      content: 'Let me check.',
      thinking: 'The user wants the weather in San Francisco.',
      thinkingParts: [
        {
          type: 'thinking',
          thinking: 'The user wants the weather in San Francisco.',
          signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds',
        },
      ],
      toolCalls: [
        {
          id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
          name: 'get_weather',
          arguments: { location: 'San Francisco, CA' },
          raw: '{"location":"San Francisco, CA"}',
        },
      ],
      usage: { inputTokens: 472, outputTokens: 89, cacheReadTokens: 2048 },
      stopReason: 'tool_calls',
      model: 'claude-sonnet-4-6',
    });
  });
});
