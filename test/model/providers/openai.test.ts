import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTroupeError, serializeError, type TroupeError } from '../../../src/errors.js';
import { createModel, type Model, type ModelSpec } from '../../../src/model/model.js';
import {
  addUsage,
  emptyUsage,
  type Message,
  type ModelStreamPart,
  type ToolSchema,
} from '../../../src/model/types.js';
import {
  type MockOpenAIServer,
  openaiError,
  openaiReply,
  startMockOpenAIServer,
} from '../../helpers/mock-openai-server.js';

const weatherTool: ToolSchema = {
  name: 'get_weather',
  description: 'Current weather in a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

let server: MockOpenAIServer;

beforeEach(async () => {
  server = await startMockOpenAIServer();
});

afterEach(async () => {
  await server.close();
  // A request that broke a provider rule fails the test, whatever it asserted.
  expect(server.violations).toEqual([]);
});

function openai(overrides: Partial<Extract<ModelSpec, { provider: 'openai' }>> = {}): Model {
  return createModel(
    { provider: 'openai', model: 'gpt-test', baseURL: server.baseURL, maxRetries: 0, ...overrides },
    { OPENAI_API_KEY: server.apiKey },
  );
}

async function collect(stream: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

function finishOf(parts: readonly ModelStreamPart[]) {
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

const ask: Message[] = [
  { role: 'system', content: 'You answer weather questions.' },
  { role: 'user', content: 'Weather in Paris?' },
];

describe('OpenAIModel', () => {
  it('runs a multi-turn tool conversation with ids kept and results paired by tool_call_id', async () => {
    server.enqueue(
      openaiReply({
        toolCalls: [{ id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } }],
      }),
      openaiReply({ content: 'It is 18°C in Paris.' }),
    );
    const model = openai();

    const first = await model.complete({ messages: ask, tools: [weatherTool] });
    expect(first).toMatchObject({
      content: '',
      stopReason: 'tool_calls',
      toolCalls: [{ id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris' } }],
    });
    const history: Message[] = [
      ...ask,
      { role: 'assistant', content: first.content, toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: 'call_paris', name: 'get_weather', content: '18°C, clear' },
    ];
    const second = await model.complete({ messages: history, tools: [weatherTool] });

    expect(second).toMatchObject({
      content: 'It is 18°C in Paris.',
      stopReason: 'end',
      toolCalls: [],
    });
    expect(server.requests[1]?.body).toMatchObject({
      model: 'gpt-test',
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: weatherTool.parameters } },
      ],
      messages: [
        { role: 'system', content: 'You answer weather questions.' },
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_paris',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_paris', content: '18°C, clear' },
      ],
    });
  });

  it('assembles parallel tool calls by index when their fragments interleave in a stream', async () => {
    server.enqueue(
      openaiReply({
        content: 'Checking both.',
        toolCalls: [
          { id: 'call_a', name: 'get_weather', arguments: { city: 'Paris' } },
          { id: 'call_b', name: 'get_weather', arguments: { city: 'Bogotá' } },
        ],
        interleaveToolCalls: true,
        chunkSize: 4,
      }),
      openaiReply({ content: 'Paris 18°C, Bogotá 14°C.' }),
    );
    const model = openai();

    const response = finishOf(await collect(model.stream({ messages: ask, tools: [weatherTool] })));
    expect(response.toolCalls).toEqual([
      { id: 'call_a', name: 'get_weather', arguments: { city: 'Paris' }, raw: '{"city":"Paris"}' },
      {
        id: 'call_b',
        name: 'get_weather',
        arguments: { city: 'Bogotá' },
        raw: '{"city":"Bogotá"}',
      },
    ]);
    const parts = await collect(
      model.stream({
        messages: [
          ...ask,
          { role: 'assistant', content: response.content, toolCalls: response.toolCalls },
          { role: 'tool', toolCallId: 'call_a', name: 'get_weather', content: '18°C' },
          { role: 'tool', toolCallId: 'call_b', name: 'get_weather', content: '14°C' },
        ],
        tools: [weatherTool],
      }),
    );

    expect(finishOf(parts).content).toBe('Paris 18°C, Bogotá 14°C.');
    const sent = server.requests[1]?.body as { messages: Array<Record<string, unknown>> };
    expect(sent.messages.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: '18°C' },
      { role: 'tool', tool_call_id: 'call_b', content: '14°C' },
    ]);
  });

  it('joins tool-call arguments split across many stream chunks into the same response as complete()', async () => {
    const input = { city: 'Paris', days: 3, units: 'metric', note: 'with "quotes" and \\ slashes' };
    server.enqueue(
      openaiReply({
        toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: input }],
        chunkSize: 2,
      }),
      openaiReply({ toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: input }] }),
    );
    const model = openai();

    const parts = await collect(model.stream({ messages: ask, tools: [weatherTool] }));
    const whole = await model.complete({ messages: ask, tools: [weatherTool] });

    const deltas = parts.filter((part) => part.type === 'tool-call-delta');
    expect(deltas.length).toBeGreaterThan(20);
    expect(deltas.map((part) => part.argumentsDelta).join('')).toBe(JSON.stringify(input));
    expect(finishOf(parts)).toEqual(whole);
    expect(whole.toolCalls[0]?.arguments).toEqual(input);
  });

  it('turns reasoning_content into thinking, streamed as thinking deltas and whole', async () => {
    server.enqueue(
      openaiReply({
        reasoning: 'The user wants Paris. Call the tool.',
        content: 'Let me look.',
        chunkSize: 5,
      }),
      openaiReply({ reasoning: 'The user wants Paris. Call the tool.', content: 'Let me look.' }),
      openaiReply({
        reasoning: 'OpenRouter style.',
        reasoningField: 'reasoning',
        content: 'Done.',
      }),
    );
    const model = openai();

    const parts = await collect(model.stream({ messages: ask }));
    const whole = await model.complete({ messages: ask });
    const openRouter = await model.complete({ messages: ask });

    const thinkingDeltas = parts.filter((part) => part.type === 'thinking-delta');
    expect(thinkingDeltas.map((part) => part.text).join('')).toBe(
      'The user wants Paris. Call the tool.',
    );
    expect(finishOf(parts)).toEqual(whole);
    expect(whole).toMatchObject({
      content: 'Let me look.',
      thinking: 'The user wants Paris. Call the tool.',
    });
    expect(openRouter).toMatchObject({ content: 'Done.', thinking: 'OpenRouter style.' });
  });

  it('moves <think>…</think> out of the answer, also when the tags are split across chunks', async () => {
    const content = '<think>\nParis is in France.\n</think>\n\nIt is sunny in Paris.';
    server.enqueue(openaiReply({ content, chunkSize: 3 }), openaiReply({ content }));
    const model = openai();

    const parts = await collect(model.stream({ messages: ask }));
    const whole = await model.complete({ messages: ask });

    const text = parts.flatMap((part) => (part.type === 'text-delta' ? [part.text] : [])).join('');
    expect(text).toBe('It is sunny in Paris.');
    expect(parts.some((part) => part.type === 'text-delta' && part.text.includes('<'))).toBe(false);
    expect(whole).toMatchObject({
      content: 'It is sunny in Paris.',
      thinking: 'Paris is in France.',
    });
    expect(finishOf(parts)).toEqual(whole);
    // The thinking never goes back to the server.
    server.enqueue(openaiReply({ content: 'ok' }));
    await model.complete({
      messages: [
        ...ask,
        { role: 'assistant', content: whole.content, thinking: whole.thinking },
        { role: 'user', content: 'And tomorrow?' },
      ],
    });
    expect(JSON.stringify(server.requests[2]?.body)).not.toContain('Paris is in France');
  });

  it('sums usage across calls, counting cached prompt tokens apart', async () => {
    server.enqueue(
      openaiReply({ content: 'a', usage: { prompt: 100, completion: 20, cached: 60 } }),
      openaiReply({ content: 'b', usage: { prompt: 50, completion: 5 } }),
    );
    const model = openai();

    const first = await model.complete({ messages: ask });
    const second = finishOf(await collect(model.stream({ messages: ask })));

    expect(first.usage).toEqual({ inputTokens: 40, outputTokens: 20, cacheReadTokens: 60 });
    expect(addUsage(addUsage(emptyUsage(), first.usage), second.usage)).toEqual({
      inputTokens: 90,
      outputTokens: 25,
      cacheReadTokens: 60,
    });
  });

  it('succeeds after the SDK retries a 429', async () => {
    server.enqueue(
      openaiError(429, 'Rate limit reached for requests', { 'retry-after-ms': '1' }),
      openaiReply({ content: 'finally' }),
    );

    const response = await openai({ maxRetries: 2 }).complete({ messages: ask });

    expect(response.content).toBe('finally');
    expect(server.requests).toHaveLength(2);
  });

  it('reports model.rate_limited with the retry-after when 429s outlast the retries', async () => {
    const limited = openaiError(429, 'Rate limit reached for requests', {
      'retry-after-ms': '1',
      'retry-after': '1',
    });
    server.enqueue(limited, limited);

    const error = await failure(openai({ maxRetries: 1 }).complete({ messages: ask }));

    expect(error.code).toBe('model.rate_limited');
    expect(error.details).toMatchObject({
      provider: 'openai',
      status: 429,
      retryAfter: 0.001,
      requestId: 'req_mock_2',
    });
    expect(error.message).toContain('Rate limit reached for requests');
    expect(server.requests).toHaveLength(2);
  });

  it('reports model.server after 5xx answers use up every retry', async () => {
    const broken = openaiError(503, 'The server is overloaded', { 'retry-after-ms': '1' });
    server.enqueue(broken, broken, broken);

    const error = await failure(openai({ maxRetries: 2 }).complete({ messages: ask }));

    expect(error.code).toBe('model.server');
    expect(error.details).toMatchObject({ status: 503 });
    expect(error.message).toMatch(
      /server error \(503: "The server is overloaded"\); gave up after 2 retries/,
    );
    expect(server.requests).toHaveLength(3);
  });

  it.each(['destroy', 'end'] as const)(
    'fails with model.stream_interrupted, never a short answer, when the stream is cut (%s)',
    async (mode) => {
      server.enqueue(
        openaiReply({
          content: 'A long answer that will not arrive whole.',
          chunkSize: 4,
          cut: { afterEvents: 4, mode },
        }),
      );
      const parts: ModelStreamPart[] = [];

      const error = await failure(
        (async () => {
          for await (const part of openai().stream({ messages: ask })) parts.push(part);
        })(),
      );

      expect(error.code).toBe('model.stream_interrupted');
      expect(parts.some((part) => part.type === 'finish')).toBe(false);
      expect(parts.filter((part) => part.type === 'text-delta').length).toBeGreaterThan(0);
    },
  );

  it('says which variable to check on a 401, without the key', async () => {
    const model = createModel(
      {
        provider: 'openai',
        model: 'gpt-test',
        baseURL: server.baseURL,
        maxRetries: 0,
        apiKeyEnv: 'MY_LLM_KEY',
      },
      { MY_LLM_KEY: 'sk-wrong-key-1234567890abcdef' },
    );

    const error = await failure(model.complete({ messages: ask }));

    expect(error.code).toBe('model.auth');
    expect(error.message).toContain('authentication failed: check MY_LLM_KEY');
    expect(JSON.stringify(serializeError(error))).not.toContain('sk-wr');
    expect(JSON.stringify(serializeError(error))).not.toContain('wrong-key');
  });

  it('quotes the API message on a 400 and names the model on a 404', async () => {
    server.enqueue(
      openaiError(400, "Invalid value for 'temperature': must be 1 for this model."),
      openaiError(404, 'The model `gpt-test` does not exist or you do not have access to it.'),
    );
    const model = openai();

    const badRequest = await failure(model.complete({ messages: ask }));
    const notFound = await failure(model.complete({ messages: ask }));

    expect(badRequest.code).toBe('model.bad_request');
    expect(badRequest.message).toContain(
      `"Invalid value for 'temperature': must be 1 for this model."`,
    );
    expect(notFound.code).toBe('model.not_found');
    expect(notFound.message).toContain('no model "gpt-test"');
  });

  it('fails with usage.missing_key naming the variable when OpenAI itself has no key', async () => {
    const model = createModel({ provider: 'openai', model: 'gpt-test' }, {});

    const error = await failure(model.complete({ messages: ask }));

    expect(error.code).toBe('usage.missing_key');
    expect(error.message).toContain('OPENAI_API_KEY');
  });

  it('calls a custom baseURL without a key, and names the variable if that server wants one', async () => {
    const model = createModel(
      { provider: 'openai', model: 'gpt-test', baseURL: server.baseURL },
      {},
    );

    const error = await failure(model.complete({ messages: ask }));

    expect(server.requests[0]?.headers.authorization).toBe('Bearer no-key');
    expect(error.code).toBe('model.auth');
    expect(error.message).toContain('authentication failed: check OPENAI_API_KEY');
  });

  it('rejects with cancelled when the signal aborts before or during a stream', async () => {
    const model = openai();
    const before = new AbortController();
    before.abort();
    expect((await failure(model.complete({ messages: ask }, { signal: before.signal }))).code).toBe(
      'cancelled',
    );

    server.enqueue(
      openaiReply({ content: 'This stream will be abandoned half-way through.', chunkSize: 4 }),
    );
    const during = new AbortController();
    const error = await failure(
      (async () => {
        for await (const part of model.stream({ messages: ask }, { signal: during.signal })) {
          if (part.type === 'text-delta') during.abort();
        }
      })(),
    );

    expect(error.code).toBe('cancelled');
  });

  it('reports model.connection when nothing listens at the baseURL', async () => {
    const closed = await startMockOpenAIServer();
    await closed.close();
    const model = createModel(
      { provider: 'openai', model: 'gpt-test', baseURL: closed.baseURL, maxRetries: 0 },
      { OPENAI_API_KEY: 'sk-anything-at-all-123456' },
    );

    const error = await failure(model.complete({ messages: ask }));

    expect(error.code).toBe('model.connection');
    expect(error.message).toContain(
      'Could not reach the OpenAI-compatible server at http://127.0.0.1',
    );
  });

  it('sends a valid conversation when a tool call was cut off by cancellation', async () => {
    server.enqueue(openaiReply({ content: 'Starting over.' }));

    await openai().complete({
      messages: [
        ...ask,
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            {
              id: 'call_done',
              name: 'get_weather',
              arguments: { city: 'Paris' },
              raw: '{"city":"Paris"}',
            },
            { id: 'call_lost', name: 'get_weather', arguments: 'not json', raw: 'not json' },
          ],
        },
        { role: 'tool', toolCallId: 'call_done', name: 'get_weather', content: '18°C' },
        { role: 'user', content: 'Never mind.' },
      ],
      tools: [weatherTool],
    });

    const sent = (server.requests[0]!.body as { messages: Array<{ role: string }> }).messages;
    expect(sent.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'user',
    ]);
    expect(sent[4]).toMatchObject({ tool_call_id: 'call_lost' });
  });

  it('sends the options: headers, organization, temperature, max_tokens for compatible servers', async () => {
    server.enqueue(openaiReply({ content: 'ok' }));
    const model = openai({
      organization: 'org-troupe',
      headers: { 'HTTP-Referer': 'https://example.org', 'X-Title': 'troupe' },
      temperature: 0.2,
      maxTokens: 256,
      timeoutMs: 5_000,
    });

    await model.complete({ messages: ask });

    const request = server.requests[0];
    expect(request?.headers).toMatchObject({
      'http-referer': 'https://example.org',
      'x-title': 'troupe',
      'openai-organization': 'org-troupe',
    });
    expect(request?.body).toMatchObject({ temperature: 0.2, max_tokens: 256 });
    expect(JSON.parse(JSON.stringify(model))).toMatchObject({
      headers: { 'HTTP-Referer': '[redacted]', 'X-Title': '[redacted]' },
    });
  });

  it('reads the documented Chat Completions shapes (fixtures), whole and streamed', async () => {
    const fixtures = new URL('../../fixtures/providers/openai/', import.meta.url);
    server.enqueue(
      {
        kind: 'raw',
        contentType: 'application/json',
        body: readFileSync(new URL('chat-completion-tool-calls.json', fixtures), 'utf8'),
      },
      {
        kind: 'raw',
        contentType: 'text/event-stream',
        body: readFileSync(new URL('stream-tool-calls.chunks.txt', fixtures), 'utf8'),
      },
    );
    const model = openai();

    const whole = await model.complete({ messages: ask, tools: [weatherTool] });
    const streamed = finishOf(await collect(model.stream({ messages: ask, tools: [weatherTool] })));

    expect(whole).toEqual({
      content: '',
      toolCalls: [
        {
          id: 'call_abc123',
          name: 'get_weather',
          arguments: { location: 'Paris, France' },
          raw: '{"location":"Paris, France"}',
        },
        {
          id: 'call_def456',
          name: 'get_weather',
          arguments: { location: 'Bogotá, Colombia' },
          raw: '{"location":"Bogotá, Colombia"}',
        },
      ],
      usage: { inputTokens: 18, outputTokens: 51, cacheReadTokens: 64 },
      stopReason: 'tool_calls',
      model: 'gpt-5.4-mini-2026-03-17',
    });
    expect(streamed).toMatchObject({
      content: 'Checking both cities.',
      toolCalls: [
        { id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', arguments: { location: 'Paris' } },
        { id: 'call_s9CqL2Qvt1tnk3tGnJ2AhzTc', arguments: { location: 'Bogotá' } },
      ],
      usage: { inputTokens: 82, outputTokens: 51 },
      stopReason: 'tool_calls',
    });
  });
});

describe('the abort signal of a long-lived agent', () => {
  it('keeps no listener per request (no MaxListenersExceededWarning after ten calls)', async () => {
    const model = openai();
    const agentSignal = new AbortController().signal;
    const request = { messages: [{ role: 'user' as const, content: 'hi' }] };
    for (let call = 0; call < 12; call += 1) {
      server.enqueue(openaiReply({ content: `reply ${call}` }), openaiReply({ content: 'again' }));
      await model.complete(request, { signal: agentSignal });
      await collect(model.stream(request, { signal: agentSignal }));
    }
    expect(getEventListeners(agentSignal, 'abort')).toHaveLength(0);
  });

  it('still cancels the request when the agent signal aborts', async () => {
    const model = openai();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(
      model.complete(
        { messages: [{ role: 'user', content: 'hi' }] },
        { signal: controller.signal },
      ),
    ).rejects.toMatchObject({ code: 'cancelled' });
  });
});
