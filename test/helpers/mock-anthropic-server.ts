import type { ServerResponse } from 'node:http';
import {
  checkAnthropicRequest,
  type Issued,
  type IssuedTurn,
  mockSignature,
} from './mock-anthropic-rules.js';
import {
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
 * A local stand-in for the Anthropic Messages API (POST /v1/messages),
 * driven by the real `@anthropic-ai/sdk` over HTTP. It enforces the request
 * rules DESIGN.md lists (ANTHROPIC_RULES in mock-anthropic-rules.ts): a request that breaks one is
 * recorded in `violations` and answered 400 with the rule in the message.
 * It signs every thinking block it sends (the signature is a hash of the
 * text), so it can tell when a block comes back changed, unsigned or not
 * at all.
 */

/** A content block the mock sends; thinking signatures are made by the mock. */
export type AnthropicBlockSpec =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id?: string; name: string; input: Record<string, unknown> };

/** A reply the mock renders as a message or as events. */
export interface AnthropicReplySpec {
  blocks: AnthropicBlockSpec[];
  /** Default: `tool_use` when a block is a tool call, else `end_turn`. */
  stopReason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'refusal' | 'pause_turn';
  usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
  /** Streamed: characters per text, thinking and input_json delta (default 8). */
  chunkSize?: number;
  /** Streamed: end the stream early. */
  cut?: StreamCut;
  /** Streamed: send an `error` event (e.g. overloaded_error) after this many events. */
  errorAfter?: { events: number; type: string; message: string };
}

/** What the next good request gets. */
export type AnthropicReply =
  | ({ kind: 'reply' } & AnthropicReplySpec)
  | {
      kind: 'error';
      status: number;
      type: string;
      message: string;
      headers?: Record<string, string>;
    }
  | { kind: 'raw'; contentType: string; body: string };

/** A normal reply. */
export function anthropicReply(spec: AnthropicReplySpec): AnthropicReply {
  return { kind: 'reply', ...spec };
}

/** An HTTP error with an Anthropic-shaped body. */
export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): AnthropicReply {
  return { kind: 'error', status, type, message, headers };
}

/** A running Anthropic mock. */
export interface MockAnthropicServer {
  /** The baseURL to give the SDK. */
  baseURL: string;
  /** The key the mock accepts (as `Authorization: Bearer` or `x-api-key`). */
  apiKey: string;
  requests: RecordedRequest[];
  violations: string[];
  enqueue(...replies: AnthropicReply[]): void;
  readonly pending: number;
  close(): Promise<void>;
}

/** Answers a good request from its body (and its number among good requests, from 1) instead of the queue. */
export type AnthropicResponder = (body: Record<string, unknown>, count: number) => AnthropicReply;

/** Starts the mock on 127.0.0.1 with a random port. */
export async function startMockAnthropicServer(
  options: { apiKey?: string; respond?: AnthropicResponder } = {},
): Promise<MockAnthropicServer> {
  const apiKey = options.apiKey ?? 'sk-ant-test-mock-key-0000';
  const queue: AnthropicReply[] = [];
  const requests: RecordedRequest[] = [];
  const violations: string[] = [];
  // tool_use id → the thinking blocks of the reply that made the call.
  const issuedTurns = new Map<string, IssuedTurn>();
  const issuedRedacted = new Set<string>();
  let messageCount = 0;

  const http: MockHttpServer = await startMockHttpServer(async (request, response) => {
    requests.push(request);
    const number = requests.length;
    if (request.method !== 'POST' || request.path !== '/v1/messages') {
      sendJson(
        response,
        404,
        errorBody('not_found_error', `Unknown route ${request.method} ${request.path}`),
      );
      return;
    }
    const bearer = request.headers.authorization;
    if (bearer !== `Bearer ${apiKey}` && request.headers['x-api-key'] !== apiKey) {
      sendJson(response, 401, errorBody('authentication_error', 'invalid x-api-key'), {
        'request-id': `req_mock_auth_${number}`,
      });
      return;
    }
    request.violations = checkAnthropicRequest(request.body, request.headers['anthropic-version'], {
      issuedTurns,
      issuedRedacted,
    });
    if (request.violations.length > 0) {
      for (const violation of request.violations)
        violations.push(`request ${number}: ${violation}`);
      sendJson(response, 400, errorBody('invalid_request_error', request.violations.join(' | ')));
      return;
    }
    const reply =
      options.respond === undefined
        ? queue.shift()
        : options.respond(request.body as Record<string, unknown>, messageCount + 1);
    if (reply === undefined) {
      violations.push(`request ${number}: no reply was queued for this request`);
      sendJson(response, 400, errorBody('invalid_request_error', 'The mock has no reply queued.'));
      return;
    }
    messageCount += 1;
    await answer(response, request.body as Record<string, unknown>, reply, messageCount, {
      issuedTurns,
      issuedRedacted,
    });
  });

  return {
    baseURL: http.origin,
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

function errorBody(type: string, message: string): Record<string, unknown> {
  return { type: 'error', error: { type, message } };
}

async function answer(
  response: ServerResponse,
  body: Record<string, unknown>,
  reply: AnthropicReply,
  count: number,
  issued: Issued,
): Promise<void> {
  if (reply.kind === 'error') {
    sendJson(response, reply.status, errorBody(reply.type, reply.message), {
      'request-id': `req_mock_${count}`,
      ...reply.headers,
    });
    return;
  }
  if (reply.kind === 'raw') {
    sendRaw(response, 200, reply.contentType, reply.body);
    return;
  }
  const blocks = reply.blocks.map((block, index): Record<string, unknown> => {
    switch (block.type) {
      case 'thinking':
        return {
          type: 'thinking',
          thinking: block.thinking,
          signature: mockSignature(block.thinking),
        };
      case 'tool_use':
        return {
          type: 'tool_use',
          id: block.id ?? `toolu_mock_${count}_${index}`,
          name: block.name,
          input: block.input,
          caller: { type: 'direct' },
        };
      default:
        return { ...block };
    }
  });
  const thinking = blocks.filter(
    (block) => block['type'] === 'thinking' || block['type'] === 'redacted_thinking',
  );
  for (const block of blocks) {
    if (block['type'] === 'tool_use') issued.issuedTurns.set(String(block['id']), { thinking });
    if (block['type'] === 'redacted_thinking') issued.issuedRedacted.add(String(block['data']));
  }
  const stopReason =
    reply.stopReason ??
    (blocks.some((block) => block['type'] === 'tool_use') ? 'tool_use' : 'end_turn');
  const usage = reply.usage ?? { input: 12, output: 6 };
  const wireUsage = {
    input_tokens: usage.input,
    output_tokens: usage.output,
    cache_creation_input_tokens: usage.cacheWrite ?? 0,
    cache_read_input_tokens: usage.cacheRead ?? 0,
    cache_creation: null,
    inference_geo: null,
    server_tool_use: null,
    service_tier: 'standard',
  };
  const message = {
    id: `msg_mock_${count}`,
    type: 'message',
    role: 'assistant',
    model: String(body['model']),
    content: blocks,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: wireUsage,
  };
  if (body['stream'] !== true) {
    sendJson(response, 200, message, { 'request-id': `req_mock_${count}` });
    return;
  }

  const size = reply.chunkSize ?? 8;
  const event = (type: string, data: Record<string, unknown>): SseEvent => ({
    event: type,
    data: JSON.stringify({ type, ...data }),
  });
  const events: SseEvent[] = [
    event('message_start', {
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { ...wireUsage, output_tokens: 1 },
      },
    }),
    { event: 'ping', data: JSON.stringify({ type: 'ping' }) },
  ];
  for (const [index, block] of blocks.entries()) {
    const deltas: Array<Record<string, unknown>> = [];
    let start: Record<string, unknown>;
    switch (block['type']) {
      case 'text':
        start = { type: 'text', text: '' };
        for (const piece of pieces(String(block['text']), size))
          deltas.push({ type: 'text_delta', text: piece });
        break;
      case 'thinking':
        start = { type: 'thinking', thinking: '', signature: '' };
        for (const piece of pieces(String(block['thinking']), size)) {
          deltas.push({ type: 'thinking_delta', thinking: piece });
        }
        deltas.push({ type: 'signature_delta', signature: block['signature'] });
        break;
      case 'tool_use':
        start = { ...block, input: {} };
        deltas.push({ type: 'input_json_delta', partial_json: '' });
        for (const piece of pieces(JSON.stringify(block['input']), size)) {
          deltas.push({ type: 'input_json_delta', partial_json: piece });
        }
        break;
      default:
        start = block;
    }
    events.push(event('content_block_start', { index, content_block: start }));
    for (const delta of deltas) events.push(event('content_block_delta', { index, delta }));
    events.push(event('content_block_stop', { index }));
  }
  events.push(
    event('message_delta', {
      delta: { stop_reason: stopReason, stop_sequence: null, stop_details: null, container: null },
      usage: { output_tokens: usage.output },
    }),
    event('message_stop', {}),
  );
  if (reply.errorAfter !== undefined) {
    events.splice(reply.errorAfter.events, events.length, {
      event: 'error',
      data: JSON.stringify(errorBody(reply.errorAfter.type, reply.errorAfter.message)),
    });
  }
  await sendSse(response, events, reply.cut);
}

export { ANTHROPIC_RULES, checkAnthropicRequest, mockSignature } from './mock-anthropic-rules.js';
