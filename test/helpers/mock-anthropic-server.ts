import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
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
 * A local stand-in for the Anthropic Messages API (POST /v1/messages),
 * driven by the real `@anthropic-ai/sdk` over HTTP. It enforces the request
 * rules DESIGN.md lists (ANTHROPIC_RULES): a request that breaks one is
 * recorded in `violations` and answered 400 with the rule in the message.
 * It signs every thinking block it sends (the signature is a hash of the
 * text), so it can tell when a block comes back changed, unsigned or not
 * at all.
 */

/** Every rule the mock enforces, by id. docs/PROVIDERS.md lists the same texts. */
export const ANTHROPIC_RULES = {
  body: 'The body is a JSON object with a non-empty string `model` and a non-empty `messages` array.',
  maxTokens: '`max_tokens` is always sent, as a positive integer.',
  systemTopLevel:
    '`system` is a top-level string (or text blocks); no message has the role `system`.',
  firstUser: 'The first message is from the user.',
  alternate: 'Roles alternate: no two consecutive messages have the same role.',
  lastUser:
    "The last message is from the user (troupe never prefills an assistant reply; this one is our rule, not the API's).",
  content: 'Every message has non-empty content, and every text block has non-whitespace text.',
  toolUseAnswered:
    'Every `tool_use` is answered by a `tool_result` with its id in the very next message, which is from the user.',
  toolResultsFirst:
    '`tool_result` blocks come at the start of the user message, before any other block.',
  orphanResults:
    'Every `tool_result` answers a `tool_use` of the assistant message right before it, and only once.',
  toolUseShape:
    '`tool_use` blocks have a unique id matching `^[a-zA-Z0-9_-]+$`, a valid name and an object `input`.',
  toolNames: 'Tool names match `^[a-zA-Z0-9_-]{1,64}$`.',
  toolDefinitions: 'Tools have a name and an `input_schema` that is a JSON Schema of type object.',
  thinkingConfig:
    '`thinking` is `{type: "enabled", budget_tokens}` with 1024 ≤ budget_tokens < max_tokens, or `{type: "adaptive"}`.',
  noSampling:
    '`temperature`, `top_p` and `top_k` are not sent (API version 2026-10-21 rejects them).',
  versionHeader: 'The `anthropic-version` header is sent.',
  thinkingUnchanged:
    'Thinking and redacted_thinking blocks sent back are exactly as the API returned them, signatures included.',
  thinkingKept:
    'When an assistant turn that called tools continues (its tool results are the last message), its thinking blocks go back unchanged, first in the message.',
  thinkingFirst:
    'With thinking on, the assistant message that the tool results continue starts with a thinking or redacted_thinking block.',
} as const;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const TOOL_ID = /^[a-zA-Z0-9_-]+$/;

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

/** The signature the mock gives a thinking text. */
export function mockSignature(thinking: string): string {
  return `sig-${createHash('sha256').update(thinking).digest('base64')}`;
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

interface IssuedTurn {
  /** The thinking blocks of the reply, as sent. */
  thinking: Array<Record<string, unknown>>;
}

/** Starts the mock on 127.0.0.1 with a random port. */
export async function startMockAnthropicServer(
  options: { apiKey?: string } = {},
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
    const reply = queue.shift();
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

interface Issued {
  issuedTurns: Map<string, IssuedTurn>;
  issuedRedacted: Set<string>;
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

/** Every rule a request breaks, as "<rule> (<detail>)"; empty when it keeps them all. */
export function checkAnthropicRequest(
  body: unknown,
  versionHeader: string | string[] | undefined,
  issued: Issued = { issuedTurns: new Map(), issuedRedacted: new Set() },
): string[] {
  const out: string[] = [];
  const broke = (rule: string, detail: string): void => {
    out.push(`${rule} (${detail})`);
  };
  if (typeof versionHeader !== 'string' || versionHeader.length === 0) {
    broke(ANTHROPIC_RULES.versionHeader, 'anthropic-version is missing');
  }
  if (!isObject(body)) {
    broke(ANTHROPIC_RULES.body, `body is ${typeName(body)}`);
    return out;
  }
  if (typeof body['model'] !== 'string' || body['model'].length === 0)
    broke(ANTHROPIC_RULES.body, 'model is missing');
  const maxTokens = body['max_tokens'];
  if (!(Number.isInteger(maxTokens) && (maxTokens as number) > 0)) {
    broke(ANTHROPIC_RULES.maxTokens, `max_tokens is ${JSON.stringify(maxTokens)}`);
  }
  for (const field of ['temperature', 'top_p', 'top_k']) {
    if (field in body) broke(ANTHROPIC_RULES.noSampling, `${field} is sent`);
  }
  const system = body['system'];
  if (
    system !== undefined &&
    typeof system !== 'string' &&
    !(Array.isArray(system) && system.every((block) => isObject(block) && block['type'] === 'text'))
  ) {
    broke(ANTHROPIC_RULES.systemTopLevel, `system is ${typeName(system)}`);
  }
  const thinking = body['thinking'];
  const isThinkingOn = isObject(thinking) && thinking['type'] !== 'disabled';
  if (thinking !== undefined) checkThinkingConfig(thinking, maxTokens, broke);
  checkTools(body['tools'], broke);

  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) {
    broke(ANTHROPIC_RULES.body, 'messages is missing or empty');
    return out;
  }
  let previous: Record<string, unknown> | undefined;
  for (const [index, message] of messages.entries()) {
    const where = `messages[${index}]`;
    if (!isObject(message)) {
      broke(ANTHROPIC_RULES.body, `${where} is ${typeName(message)}`);
      continue;
    }
    const role = message['role'];
    if (role === 'system') broke(ANTHROPIC_RULES.systemTopLevel, `${where} has role system`);
    else if (role !== 'user' && role !== 'assistant')
      broke(ANTHROPIC_RULES.body, `${where} has role ${JSON.stringify(role)}`);
    if (index === 0 && role !== 'user')
      broke(ANTHROPIC_RULES.firstUser, `messages[0] is ${JSON.stringify(role)}`);
    if (previous !== undefined && previous['role'] === role) {
      broke(
        ANTHROPIC_RULES.alternate,
        `${where} and the message before it are both ${String(role)}`,
      );
    }
    const blocks = blocksOf(message['content']);
    if (blocks.length === 0) broke(ANTHROPIC_RULES.content, `${where} has no content`);
    for (const [position, block] of blocks.entries()) {
      if (
        block['type'] === 'text' &&
        (typeof block['text'] !== 'string' || block['text'].trim().length === 0)
      ) {
        broke(ANTHROPIC_RULES.content, `${where}.content[${position}] is an empty text block`);
      }
    }
    const wanted =
      previous?.['role'] === 'assistant' ? toolUseIds(blocksOf(previous['content'])) : [];
    if (role === 'user') checkToolResults(where, blocks, wanted, broke);
    else if (wanted.length > 0) {
      broke(
        ANTHROPIC_RULES.toolUseAnswered,
        `${where} is not a user message answering ${wanted.join(', ')}`,
      );
    }
    if (role === 'assistant') checkAssistant(where, blocks, issued, broke);
    previous = message;
  }
  const last = messages.at(-1);
  if (isObject(last) && last['role'] !== 'user')
    broke(ANTHROPIC_RULES.lastUser, `the last message is ${String(last['role'])}`);
  if (isObject(last) && last['role'] === 'assistant') {
    const open = toolUseIds(blocksOf(last['content']));
    if (open.length > 0)
      broke(
        ANTHROPIC_RULES.toolUseAnswered,
        `the conversation ends before results for ${open.join(', ')}`,
      );
  }
  checkContinuation(messages, isThinkingOn, issued, broke);
  return out;
}

function blocksOf(content: unknown): Array<Record<string, unknown>> {
  if (typeof content === 'string')
    return content.length > 0 ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) return [];
  return content.map((block) => (isObject(block) ? block : { type: typeName(block) }));
}

function toolUseIds(blocks: ReadonlyArray<Record<string, unknown>>): string[] {
  return blocks.filter((block) => block['type'] === 'tool_use').map((block) => String(block['id']));
}

function checkToolResults(
  where: string,
  blocks: ReadonlyArray<Record<string, unknown>>,
  wanted: readonly string[],
  broke: (rule: string, detail: string) => void,
): void {
  const seen = new Set<string>();
  let isLeading = true;
  for (const [position, block] of blocks.entries()) {
    if (block['type'] !== 'tool_result') {
      isLeading = false;
      continue;
    }
    if (!isLeading)
      broke(
        ANTHROPIC_RULES.toolResultsFirst,
        `${where}.content[${position}] follows another block`,
      );
    const id = String(block['tool_use_id']);
    if (!wanted.includes(id) || seen.has(id)) {
      broke(
        ANTHROPIC_RULES.orphanResults,
        `${where}.content[${position}] answers ${id}${seen.has(id) ? ' again' : ', which the assistant message before it did not call'}`,
      );
    }
    seen.add(id);
  }
  const missing = wanted.filter((id) => !seen.has(id));
  if (missing.length > 0)
    broke(ANTHROPIC_RULES.toolUseAnswered, `${where} has no result for ${missing.join(', ')}`);
}

function checkAssistant(
  where: string,
  blocks: ReadonlyArray<Record<string, unknown>>,
  issued: Issued,
  broke: (rule: string, detail: string) => void,
): void {
  const ids = new Set<string>();
  for (const [position, block] of blocks.entries()) {
    const at = `${where}.content[${position}]`;
    if (block['type'] === 'tool_use') {
      const id = block['id'];
      if (typeof id !== 'string' || !TOOL_ID.test(id) || ids.has(id)) {
        broke(ANTHROPIC_RULES.toolUseShape, `${at} has id ${JSON.stringify(id)}`);
      }
      ids.add(String(id));
      if (typeof block['name'] !== 'string' || !TOOL_NAME.test(block['name'])) {
        broke(ANTHROPIC_RULES.toolNames, `${at} calls ${JSON.stringify(block['name'])}`);
      }
      if (!isObject(block['input']))
        broke(ANTHROPIC_RULES.toolUseShape, `${at} input is ${typeName(block['input'])}`);
    }
    if (block['type'] === 'tool_result')
      broke(ANTHROPIC_RULES.orphanResults, `${at} is a tool_result in an assistant message`);
    if (block['type'] === 'thinking') {
      if (
        typeof block['thinking'] !== 'string' ||
        block['signature'] !== mockSignature(block['thinking'])
      ) {
        broke(
          ANTHROPIC_RULES.thinkingUnchanged,
          `${at} has a thinking block whose text or signature changed`,
        );
      }
    }
    if (
      block['type'] === 'redacted_thinking' &&
      !issued.issuedRedacted.has(String(block['data']))
    ) {
      broke(
        ANTHROPIC_RULES.thinkingUnchanged,
        `${at} has redacted_thinking data the API never sent`,
      );
    }
  }
}

function checkContinuation(
  messages: readonly unknown[],
  isThinkingOn: boolean,
  issued: Issued,
  broke: (rule: string, detail: string) => void,
): void {
  const last = messages.at(-1);
  const assistant = messages.at(-2);
  if (!isObject(last) || !isObject(assistant) || assistant['role'] !== 'assistant') return;
  if (blocksOf(last['content'])[0]?.['type'] !== 'tool_result') return;
  const blocks = blocksOf(assistant['content']);
  const where = `messages[${messages.length - 2}]`;
  for (const id of toolUseIds(blocks)) {
    const turn = issued.issuedTurns.get(id);
    if (turn === undefined || turn.thinking.length === 0) continue;
    const sent = blocks.slice(0, turn.thinking.length);
    if (!isDeepStrictEqual(sent, turn.thinking)) {
      broke(
        ANTHROPIC_RULES.thinkingKept,
        `${where} does not start with the ${turn.thinking.length} thinking block(s) of the turn that called ${id}`,
      );
    }
    break;
  }
  const first = blocks[0]?.['type'];
  if (isThinkingOn && first !== 'thinking' && first !== 'redacted_thinking') {
    broke(ANTHROPIC_RULES.thinkingFirst, `${where} starts with ${String(first)}`);
  }
}

function checkThinkingConfig(
  thinking: unknown,
  maxTokens: unknown,
  broke: (rule: string, detail: string) => void,
): void {
  if (!isObject(thinking)) {
    broke(ANTHROPIC_RULES.thinkingConfig, `thinking is ${typeName(thinking)}`);
    return;
  }
  if (thinking['type'] === 'adaptive' || thinking['type'] === 'disabled') return;
  const budget = thinking['budget_tokens'];
  if (
    thinking['type'] !== 'enabled' ||
    !Number.isInteger(budget) ||
    (budget as number) < 1024 ||
    typeof maxTokens !== 'number' ||
    (budget as number) >= maxTokens
  ) {
    broke(
      ANTHROPIC_RULES.thinkingConfig,
      `thinking is ${JSON.stringify(thinking)} with max_tokens ${String(maxTokens)}`,
    );
  }
}

function checkTools(tools: unknown, broke: (rule: string, detail: string) => void): void {
  if (tools === undefined) return;
  if (!Array.isArray(tools)) {
    broke(ANTHROPIC_RULES.toolDefinitions, `tools is ${typeName(tools)}`);
    return;
  }
  for (const [index, tool] of tools.entries()) {
    if (!isObject(tool)) {
      broke(ANTHROPIC_RULES.toolDefinitions, `tools[${index}] is ${typeName(tool)}`);
      continue;
    }
    if (typeof tool['name'] !== 'string' || !TOOL_NAME.test(tool['name'])) {
      broke(ANTHROPIC_RULES.toolNames, `tools[${index}] is named ${JSON.stringify(tool['name'])}`);
    }
    const schema = tool['input_schema'];
    if (!isObject(schema) || schema['type'] !== 'object') {
      broke(
        ANTHROPIC_RULES.toolDefinitions,
        `tools[${index}].input_schema is ${JSON.stringify(schema)}`,
      );
    }
  }
}
