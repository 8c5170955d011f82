import type { ServerResponse } from 'node:http';
import {
  isObject,
  type MockHttpServer,
  pieces,
  type RecordedRequest,
  type SseEvent,
  type StreamCut,
  sendJson,
  sendRaw,
  sendSse,
  startMockHttpServer,
  typeName,
} from './mock-provider-server.js';

/**
 * A local stand-in for OpenAI Chat Completions (POST /v1/chat/completions),
 * driven by the real `openai` SDK over HTTP. It enforces the request rules
 * DESIGN.md lists (OPENAI_RULES): a request that breaks one is recorded in
 * `violations` and answered 400 with the rule in the error message, so a
 * test fails on its answer and on `violations`. Good requests get the next
 * queued reply, as JSON or as an SSE stream shaped like the documented
 * chunk format, depending on the request's `stream` flag.
 */

/** Every rule the mock enforces, by id. docs/PROVIDERS.md lists the same texts. */
export const OPENAI_RULES = {
  body: 'The body is a JSON object with a non-empty string `model` and a non-empty `messages` array.',
  roles: 'Every message has the role `system`, `developer`, `user`, `assistant` or `tool`.',
  toolResults:
    'Every assistant `tool_calls[].id` is answered by a `tool` message with that `tool_call_id` before the next assistant or user message.',
  orphanResults:
    'Every `tool` message answers a tool call of the assistant message before it, and only once.',
  toolCallShape:
    'Every tool call has a non-empty `id`, `type: "function"` and a `function.name`; ids are unique within a message.',
  argumentsJson: 'Tool-call `arguments` travel as a string holding valid JSON.',
  toolNames: 'Tool names, in definitions and in calls, match `^[a-zA-Z0-9_-]{1,64}$`.',
  toolDefinitions:
    'Tools are `{type: "function", function: {name, description?, parameters}}` and `parameters` is a JSON Schema of type object.',
  toolsNotEmpty: '`tools`, when present, is a non-empty array.',
  content:
    'User, system and tool messages have string content (or text parts); assistant content is a string, or null only alongside tool calls.',
  noReasoningBack:
    'Assistant messages do not carry `reasoning_content` or `reasoning` back (servers that return it reject it in requests).',
  streamUsage:
    'A streamed request asks for usage with `stream_options: {include_usage: true}`, and `stream_options` is sent only with `stream: true`.',
  maxTokens:
    '`max_tokens` or `max_completion_tokens` (never both) is a positive integer when present.',
  temperature: '`temperature`, when present, is a number from 0 to 2.',
} as const;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** A reply the mock renders as JSON or as chunks. */
export interface OpenAIReplySpec {
  content?: string;
  toolCalls?: Array<{ id?: string; name: string; arguments: string | Record<string, unknown> }>;
  /** Reasoning text, sent in `reasoningField`. */
  reasoning?: string;
  reasoningField?: 'reasoning_content' | 'reasoning';
  /** Default: `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: 'stop' | 'length' | 'tool_calls' | 'content_filter';
  usage?: { prompt: number; completion: number; cached?: number };
  /** Streamed: characters per content, reasoning and arguments chunk (default 8). */
  chunkSize?: number;
  /** Streamed: alternate the fragments of parallel tool calls instead of one call after another. */
  interleaveToolCalls?: boolean;
  /** Streamed: end the stream early. */
  cut?: StreamCut;
  model?: string;
}

/** What the next good request gets. */
export type OpenAIReply =
  | ({ kind: 'reply' } & OpenAIReplySpec)
  | {
      kind: 'error';
      status: number;
      message: string;
      type?: string;
      headers?: Record<string, string>;
    }
  | { kind: 'raw'; contentType: string; body: string };

/** A normal reply. */
export function openaiReply(spec: OpenAIReplySpec): OpenAIReply {
  return { kind: 'reply', ...spec };
}

/** An HTTP error with an OpenAI-shaped body. */
export function openaiError(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): OpenAIReply {
  return { kind: 'error', status, message, headers };
}

/** A running OpenAI mock. */
export interface MockOpenAIServer {
  /** The baseURL to give the SDK (…/v1). */
  baseURL: string;
  /** The key the mock accepts as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  requests: RecordedRequest[];
  /** Every rule broken by any request, as "request N: <rule> (<detail>)". */
  violations: string[];
  /** Queues replies for the next good requests, in order. */
  enqueue(...replies: OpenAIReply[]): void;
  /** Replies not yet used. */
  readonly pending: number;
  close(): Promise<void>;
}

/** Starts the mock on 127.0.0.1 with a random port. */
export async function startMockOpenAIServer(
  options: { apiKey?: string } = {},
): Promise<MockOpenAIServer> {
  const apiKey = options.apiKey ?? 'sk-test-openai-mock-key-0000';
  const queue: OpenAIReply[] = [];
  const requests: RecordedRequest[] = [];
  const violations: string[] = [];
  let completionCount = 0;

  const http: MockHttpServer = await startMockHttpServer(async (request, response) => {
    requests.push(request);
    const number = requests.length;
    if (request.method !== 'POST' || request.path !== '/v1/chat/completions') {
      sendJson(response, 404, {
        error: {
          message: `Unknown route ${request.method} ${request.path}`,
          type: 'invalid_request_error',
        },
      });
      return;
    }
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      sendJson(response, 401, {
        error: {
          message:
            'Incorrect API key provided: sk-wron*****0000. You can find your API key at https://platform.openai.com/account/api-keys.',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      });
      return;
    }
    request.violations = checkOpenAIRequest(request.body);
    if (request.violations.length > 0) {
      for (const violation of request.violations)
        violations.push(`request ${number}: ${violation}`);
      sendJson(response, 400, {
        error: {
          message: request.violations.join(' | '),
          type: 'invalid_request_error',
          param: null,
          code: null,
        },
      });
      return;
    }
    const reply = queue.shift();
    if (reply === undefined) {
      violations.push(`request ${number}: no reply was queued for this request`);
      sendJson(response, 400, {
        error: { message: 'The mock has no reply queued.', type: 'invalid_request_error' },
      });
      return;
    }
    completionCount += 1;
    await answer(response, request.body as Record<string, unknown>, reply, completionCount);
  });

  return {
    baseURL: `${http.origin}/v1`,
    apiKey,
    requests,
    violations,
    enqueue: (...replies) => queue.push(...replies),
    get pending() {
      return queue.length;
    },
    close: () => http.close(),
  };
}

async function answer(
  response: ServerResponse,
  body: Record<string, unknown>,
  reply: OpenAIReply,
  count: number,
): Promise<void> {
  if (reply.kind === 'error') {
    sendJson(
      response,
      reply.status,
      {
        error: { message: reply.message, type: reply.type ?? 'api_error', param: null, code: null },
      },
      { 'x-request-id': `req_mock_${count}`, ...reply.headers },
    );
    return;
  }
  if (reply.kind === 'raw') {
    sendRaw(response, 200, reply.contentType, reply.body);
    return;
  }
  const id = `chatcmpl-mock-${count}`;
  const model = reply.model ?? String(body['model']);
  const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_mock_${count}_${index}`,
    type: 'function' as const,
    function: {
      name: call.name,
      arguments:
        typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const finishReason = reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
  const usage = wireUsage(reply.usage ?? { prompt: 10, completion: 5 });
  const reasoningField = reply.reasoningField ?? 'reasoning_content';

  if (body['stream'] !== true) {
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: reply.content ?? (toolCalls.length > 0 ? null : ''),
      refusal: null,
    };
    if (toolCalls.length > 0) message['tool_calls'] = toolCalls;
    if (reply.reasoning !== undefined) message[reasoningField] = reply.reasoning;
    sendJson(response, 200, {
      id,
      object: 'chat.completion',
      created: 1_760_000_000,
      model,
      system_fingerprint: 'fp_mock',
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
      usage,
    });
    return;
  }

  const size = reply.chunkSize ?? 8;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
    data: JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: 1_760_000_000,
      model,
      system_fingerprint: 'fp_mock',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }),
  });
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '' })];
  if (reply.reasoning !== undefined) {
    for (const piece of pieces(reply.reasoning, size))
      events.push(chunk({ [reasoningField]: piece }));
  }
  if (reply.content !== undefined && reply.content.length > 0) {
    for (const piece of pieces(reply.content, size)) events.push(chunk({ content: piece }));
  }
  const fragments = toolCalls.map((call, index) => [
    { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
    ...pieces(call.function.arguments, size).map((piece) => ({
      index,
      function: { arguments: piece },
    })),
  ]);
  if (reply.interleaveToolCalls === true) {
    const longest = Math.max(0, ...fragments.map((list) => list.length));
    for (let step = 0; step < longest; step += 1) {
      for (const list of fragments) {
        const fragment = list[step];
        if (fragment !== undefined) events.push(chunk({ tool_calls: [fragment] }));
      }
    }
  } else {
    for (const list of fragments)
      for (const fragment of list) events.push(chunk({ tool_calls: [fragment] }));
  }
  events.push(chunk({}, finishReason));
  const streamOptions = body['stream_options'];
  if (isObject(streamOptions) && streamOptions['include_usage'] === true) {
    events.push({
      data: JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created: 1_760_000_000,
        model,
        system_fingerprint: 'fp_mock',
        choices: [],
        usage,
      }),
    });
  }
  events.push({ data: '[DONE]' });
  await sendSse(response, events, reply.cut);
}

function wireUsage(usage: {
  prompt: number;
  completion: number;
  cached?: number;
}): Record<string, unknown> {
  return {
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
    prompt_tokens_details: { cached_tokens: usage.cached ?? 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
  };
}

/** Every rule a request body breaks, as "<rule> (<detail>)"; empty when it keeps them all. */
export function checkOpenAIRequest(body: unknown): string[] {
  const out: string[] = [];
  const broke = (rule: string, detail: string): void => {
    out.push(`${rule} (${detail})`);
  };
  if (!isObject(body)) {
    broke(OPENAI_RULES.body, `body is ${typeName(body)}`);
    return out;
  }
  if (typeof body['model'] !== 'string' || body['model'].length === 0) {
    broke(OPENAI_RULES.body, 'model is missing');
  }
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) {
    broke(OPENAI_RULES.body, 'messages is missing or empty');
    return out;
  }
  checkTools(body, broke);
  checkSettings(body, broke);

  // Ids of the latest assistant message's tool calls still waiting for a result.
  let open = new Set<string>();
  let answered = new Set<string>();
  for (const [index, message] of messages.entries()) {
    const where = `messages[${index}]`;
    if (!isObject(message) || typeof message['role'] !== 'string' || !ROLES.has(message['role'])) {
      broke(
        OPENAI_RULES.roles,
        `${where} has role ${JSON.stringify(isObject(message) ? message['role'] : message)}`,
      );
      continue;
    }
    const role = message['role'];
    if ((role === 'assistant' || role === 'user') && open.size > 0) {
      broke(
        OPENAI_RULES.toolResults,
        `${where} (${role}) comes before results for ${[...open].join(', ')}`,
      );
      open = new Set();
    }
    if (role === 'tool') {
      const id = message['tool_call_id'];
      if (typeof id !== 'string' || !open.has(id)) {
        broke(
          OPENAI_RULES.orphanResults,
          `${where} answers ${JSON.stringify(id)}${typeof id === 'string' && answered.has(id) ? ' a second time' : ', which the assistant message before it did not call'}`,
        );
      } else {
        open.delete(id);
        answered.add(id);
      }
      if (!isTextContent(message['content']))
        broke(OPENAI_RULES.content, `${where} content is ${typeName(message['content'])}`);
      continue;
    }
    if (role !== 'assistant') {
      if (!isTextContent(message['content']))
        broke(OPENAI_RULES.content, `${where} content is ${typeName(message['content'])}`);
      continue;
    }
    if ('reasoning_content' in message || 'reasoning' in message) {
      broke(OPENAI_RULES.noReasoningBack, `${where} carries reasoning`);
    }
    const toolCalls = message['tool_calls'];
    const hasCalls = Array.isArray(toolCalls) && toolCalls.length > 0;
    const content = message['content'];
    if (!(isTextContent(content) || (content === null && hasCalls))) {
      broke(
        OPENAI_RULES.content,
        `${where} content is ${typeName(content)}${hasCalls ? '' : ' without tool calls'}`,
      );
    }
    open = new Set();
    answered = new Set();
    if (toolCalls === undefined) continue;
    if (!Array.isArray(toolCalls)) {
      broke(OPENAI_RULES.toolCallShape, `${where}.tool_calls is ${typeName(toolCalls)}`);
      continue;
    }
    for (const [position, call] of toolCalls.entries()) {
      const at = `${where}.tool_calls[${position}]`;
      if (
        !isObject(call) ||
        typeof call['id'] !== 'string' ||
        call['id'].length === 0 ||
        call['type'] !== 'function' ||
        !isObject(call['function'])
      ) {
        broke(OPENAI_RULES.toolCallShape, `${at} is ${JSON.stringify(call)}`);
        continue;
      }
      if (open.has(call['id'])) broke(OPENAI_RULES.toolCallShape, `${at} repeats id ${call['id']}`);
      open.add(call['id']);
      const fn = call['function'];
      if (typeof fn['name'] !== 'string' || !TOOL_NAME.test(fn['name'])) {
        broke(OPENAI_RULES.toolNames, `${at} calls ${JSON.stringify(fn['name'])}`);
      }
      if (typeof fn['arguments'] !== 'string' || !isJson(fn['arguments'])) {
        broke(
          OPENAI_RULES.argumentsJson,
          `${at}.function.arguments is ${JSON.stringify(fn['arguments'])}`,
        );
      }
    }
  }
  if (open.size > 0) {
    broke(
      OPENAI_RULES.toolResults,
      `the conversation ends before results for ${[...open].join(', ')}`,
    );
  }
  return out;
}

function checkTools(
  body: Record<string, unknown>,
  broke: (rule: string, detail: string) => void,
): void {
  const tools = body['tools'];
  if (tools === undefined) return;
  if (!Array.isArray(tools) || tools.length === 0) {
    broke(OPENAI_RULES.toolsNotEmpty, `tools is ${JSON.stringify(tools)}`);
    return;
  }
  for (const [index, tool] of tools.entries()) {
    const fn = isObject(tool) ? tool['function'] : undefined;
    if (!isObject(tool) || tool['type'] !== 'function' || !isObject(fn)) {
      broke(OPENAI_RULES.toolDefinitions, `tools[${index}] is ${JSON.stringify(tool)}`);
      continue;
    }
    if (typeof fn['name'] !== 'string' || !TOOL_NAME.test(fn['name'])) {
      broke(OPENAI_RULES.toolNames, `tools[${index}] is named ${JSON.stringify(fn['name'])}`);
    }
    const parameters = fn['parameters'];
    if (!isObject(parameters) || parameters['type'] !== 'object') {
      broke(
        OPENAI_RULES.toolDefinitions,
        `tools[${index}].function.parameters is ${JSON.stringify(parameters)}`,
      );
    }
  }
}

function checkSettings(
  body: Record<string, unknown>,
  broke: (rule: string, detail: string) => void,
): void {
  const streamOptions = body['stream_options'];
  if (body['stream'] === true) {
    if (!isObject(streamOptions) || streamOptions['include_usage'] !== true) {
      broke(OPENAI_RULES.streamUsage, `stream_options is ${JSON.stringify(streamOptions)}`);
    }
  } else if (streamOptions !== undefined && streamOptions !== null) {
    broke(OPENAI_RULES.streamUsage, 'stream_options without stream: true');
  }
  const hasMax = body['max_tokens'] !== undefined;
  const hasMaxCompletion = body['max_completion_tokens'] !== undefined;
  if (hasMax && hasMaxCompletion) broke(OPENAI_RULES.maxTokens, 'both are set');
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    const value = body[field];
    if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0)) {
      broke(OPENAI_RULES.maxTokens, `${field} is ${JSON.stringify(value)}`);
    }
  }
  const temperature = body['temperature'];
  if (
    temperature !== undefined &&
    !(typeof temperature === 'number' && temperature >= 0 && temperature <= 2)
  ) {
    broke(OPENAI_RULES.temperature, `temperature is ${JSON.stringify(temperature)}`);
  }
}

function isTextContent(content: unknown): boolean {
  if (typeof content === 'string') return true;
  return (
    Array.isArray(content) &&
    content.every(
      (part) => isObject(part) && part['type'] === 'text' && typeof part['text'] === 'string',
    )
  );
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
