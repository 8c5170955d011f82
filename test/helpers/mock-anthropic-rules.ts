import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { isObject, typeName } from './mock-provider-server.js';

/**
 * The request rules of the Anthropic Messages API that the mock server
 * enforces (DESIGN.md, "The provider rules a client must keep"), as data
 * and as a pure check. Thinking checks need what the mock issued: the
 * thinking of each turn that called a tool, and redacted data it sent.
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

/** The signature the mock gives a thinking text. */
export function mockSignature(thinking: string): string {
  return `sig-${createHash('sha256').update(thinking).digest('base64')}`;
}

/** The thinking blocks of one reply that called tools, as sent. */
export interface IssuedTurn {
  thinking: Array<Record<string, unknown>>;
}

/** What the mock has sent that later requests must return unchanged. */
export interface Issued {
  issuedTurns: Map<string, IssuedTurn>;
  issuedRedacted: Set<string>;
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
