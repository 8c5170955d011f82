import type { ServerResponse } from 'node:http';
import { checkOpenAIRequest } from './mock-openai-rules.js';
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
} from './mock-provider-server.js';

/**
 * A local stand-in for OpenAI Chat Completions (POST /v1/chat/completions),
 * driven by the real `openai` SDK over HTTP. It enforces the request rules
 * DESIGN.md lists (OPENAI_RULES in mock-openai-rules.ts): a request that breaks one is recorded in
 * `violations` and answered 400 with the rule in the error message, so a
 * test fails on its answer and on `violations`. Good requests get the next
 * queued reply, as JSON or as an SSE stream shaped like the documented
 * chunk format, depending on the request's `stream` flag.
 */

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
  /** Wait this long before answering (a slow provider); a client that hangs up ends the wait. */
  delayMs?: number;
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
      /** Wait this long before the error, as a reply's `delayMs`. */
      delayMs?: number;
    }
  | { kind: 'raw'; contentType: string; body: string };

// What a reply reports when it states no usage.
const DEFAULT_USAGE = { prompt: 10, completion: 5 };

/** A normal reply. */
export function openaiReply(spec: OpenAIReplySpec): OpenAIReply {
  return { kind: 'reply', ...spec };
}

/** An HTTP error with an OpenAI-shaped body. */
export function openaiError(
  status: number,
  message: string,
  headers: Record<string, string> = {},
  delayMs?: number,
): OpenAIReply {
  return { kind: 'error', status, message, headers, ...(delayMs === undefined ? {} : { delayMs }) };
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
  /** Completion requests being answered now (received, not yet finished or hung up). */
  readonly inFlight: number;
  /** Completion requests the client closed before the answer was complete. */
  readonly abandoned: number;
  /** When each of those was closed (Date.now()), in order. */
  readonly hangUps: readonly number[];
  /**
   * Tokens a provider would bill: the usage (prompt + completion) of every
   * reply sent whole, plus the prompt of every request the client closed first.
   */
  readonly billedTokens: number;
  /** Resolves once `predicate` holds, checked after every request starts and ends. */
  until(predicate: () => boolean): Promise<void>;
  close(): Promise<void>;
}

/**
 * Decides the reply from the request itself, for runs whose requests arrive
 * in no fixed order (parallel sub-agents): it replaces the queue.
 */
export type OpenAIResponder = (body: Record<string, unknown>, count: number) => OpenAIReply;

/** Starts the mock on 127.0.0.1 with a random port. */
export async function startMockOpenAIServer(
  options: { apiKey?: string; respond?: OpenAIResponder } = {},
): Promise<MockOpenAIServer> {
  const apiKey = options.apiKey ?? 'sk-test-openai-mock-key-0000';
  const queue: OpenAIReply[] = [];
  const requests: RecordedRequest[] = [];
  const violations: string[] = [];
  let completionCount = 0;
  let inFlight = 0;
  let abandoned = 0;
  const hangUps: number[] = [];
  let billedTokens = 0;
  const waiters = new Set<{ predicate: () => boolean; resolve: () => void }>();
  const changed = (): void => {
    for (const waiter of waiters) {
      if (!waiter.predicate()) continue;
      waiters.delete(waiter);
      waiter.resolve();
    }
  };

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
    const reply =
      options.respond === undefined
        ? queue.shift()
        : options.respond(request.body as Record<string, unknown>, completionCount + 1);
    if (reply === undefined) {
      violations.push(`request ${number}: no reply was queued for this request`);
      sendJson(response, 400, {
        error: { message: 'The mock has no reply queued.', type: 'invalid_request_error' },
      });
      return;
    }
    completionCount += 1;
    inFlight += 1;
    const usage = reply.kind === 'reply' ? (reply.usage ?? DEFAULT_USAGE) : undefined;
    const hungUp = new Promise<void>((resolve) => {
      response.once('close', () => {
        inFlight -= 1;
        if (!response.writableFinished) {
          abandoned += 1;
          hangUps.push(Date.now());
          billedTokens += usage?.prompt ?? 0;
        } else if (usage !== undefined) billedTokens += usage.prompt + usage.completion;
        resolve();
        changed();
      });
    });
    changed();
    const delayMs = reply.kind === 'raw' ? 0 : (reply.delayMs ?? 0);
    if (delayMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        hungUp,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, delayMs);
        }),
      ]);
      clearTimeout(timer);
      if (response.destroyed || response.writableEnded) return;
    }
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
    get inFlight() {
      return inFlight;
    },
    get abandoned() {
      return abandoned;
    },
    get billedTokens() {
      return billedTokens;
    },
    hangUps,
    until: (predicate) =>
      predicate()
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            waiters.add({ predicate, resolve });
          }),
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
  const usage = wireUsage(reply.usage ?? DEFAULT_USAGE);
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

export { checkOpenAIRequest, OPENAI_RULES } from './mock-openai-rules.js';
