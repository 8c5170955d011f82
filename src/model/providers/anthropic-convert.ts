import type {
  Message as AnthropicMessage,
  Tool as AnthropicTool,
  Usage as AnthropicUsage,
  ContentBlock,
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageDeltaUsage,
  MessageParam,
  StopReason,
} from '@anthropic-ai/sdk/resources/messages';
import type {
  Message,
  ModelRequest,
  ModelResponse,
  ModelStopReason,
  ThinkingPart,
  ToolCall,
  ToolSchema,
  Usage,
} from '../types.js';
import { prepareRequest } from './prepare-request.js';

/**
 * Pure conversions between troupe's neutral types and the Anthropic
 * Messages API (https://docs.anthropic.com/en/api/messages), repairing the
 * conversation so it keeps the API's rules: `system` top-level, a user
 * message first, alternating roles, every `tool_use` answered by a
 * `tool_result` at the start of the very next user message, and thinking
 * blocks sent back unchanged. Streams are assembled in anthropic-stream.ts.
 */

/** A Messages request body without the `stream` flag. */
export type AnthropicRequestBody = Omit<MessageCreateParamsNonStreaming, 'stream'>;

/** Settings that shape the request body besides the conversation. */
export interface AnthropicRequestSettings {
  model: string;
  /** `max_tokens`, always sent; must exceed `thinkingBudgetTokens`. */
  maxTokens: number;
  /**
   * Extended thinking: a fixed budget (`{type: 'enabled', budget_tokens}`),
   * or `adaptive` (`{type: 'adaptive'}`, which newer models require); absent means off.
   */
  thinking?: { budgetTokens: number; adaptive?: boolean | undefined } | undefined;
}

/** What a readable thinking summary shows for a `redacted_thinking` block. */
export const REDACTED_THINKING_TEXT = '[redacted thinking]';

/** The text of the user message inserted when a conversation would not start with one. */
export const OPENING_USER_TEXT = '(The conversation begins.)';

/** The text of the user message appended when a conversation would end with the assistant. */
export const CONTINUE_USER_TEXT = 'Continue.';

/** Builds the request body; see the module comment for the rules it keeps. */
export function toAnthropicRequest(
  request: ModelRequest,
  settings: AnthropicRequestSettings,
): AnthropicRequestBody {
  const prepared = prepareRequest(request);
  const messages = toAnthropicMessages(prepared.messages);
  const body: AnthropicRequestBody = {
    model: settings.model,
    max_tokens: settings.maxTokens,
    messages,
  };
  if (prepared.system.length > 0) body.system = prepared.system.join('\n\n');
  if (prepared.tools.length > 0) body.tools = toAnthropicTools(prepared.tools);
  const thinking = settings.thinking;
  if (thinking !== undefined && canEnableThinking(messages)) {
    body.thinking =
      thinking.adaptive === true
        ? { type: 'adaptive' }
        : { type: 'enabled', budget_tokens: thinking.budgetTokens };
  }
  return body;
}

/**
 * Neutral messages (tool calls already paired, leading system messages
 * removed) to Messages API messages. Later system messages become user
 * text, empty messages are dropped, same-role neighbours are merged, and a
 * user message is added at the start or end when needed.
 */
export function toAnthropicMessages(messages: readonly Message[]): MessageParam[] {
  const out: Array<{ role: 'user' | 'assistant'; content: ContentBlockParam[] }> = [];
  for (const message of messages) {
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const blocks = toBlocks(message);
    if (blocks.length === 0) continue;
    const last = out.at(-1);
    if (last !== undefined && last.role === role) {
      last.content =
        role === 'assistant'
          ? thinkingFirst([...last.content, ...blocks])
          : [...last.content, ...blocks];
    } else {
      out.push({ role, content: blocks });
    }
  }
  if (out[0]?.role !== 'user') {
    out.unshift({ role: 'user', content: [{ type: 'text', text: OPENING_USER_TEXT }] });
  }
  // A final assistant message would be read as a prefill to continue, which no neutral message means.
  if (out.at(-1)?.role === 'assistant') {
    out.push({ role: 'user', content: [{ type: 'text', text: CONTINUE_USER_TEXT }] });
  }
  return out;
}

/** Neutral tool schemas to Messages API tools. */
export function toAnthropicTools(tools: readonly ToolSchema[]): AnthropicTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.parameters as AnthropicTool.InputSchema,
  }));
}

/** A tool-use id the API accepts (`^[a-zA-Z0-9_-]+$`); ids from other providers may hold other characters. */
export function toAnthropicToolId(id: string): string {
  const cleaned = id.replace(/[^a-zA-Z0-9_-]/g, '_');
  return cleaned.length > 0 ? cleaned : 'toolu_missing';
}

function toBlocks(message: Message): ContentBlockParam[] {
  switch (message.role) {
    case 'system':
      return hasText(message.content)
        ? [{ type: 'text', text: `(System) ${message.content}` }]
        : [];
    case 'user':
      return hasText(message.content) ? [{ type: 'text', text: message.content }] : [];
    case 'tool': {
      const block: ContentBlockParam = {
        type: 'tool_result',
        tool_use_id: toAnthropicToolId(message.toolCallId),
        content: hasText(message.content) ? message.content : '(empty result)',
      };
      if (message.isError === true) block.is_error = true;
      return [block];
    }
    case 'assistant': {
      const blocks: ContentBlockParam[] = (message.thinkingParts ?? []).map(
        (part): ContentBlockParam =>
          part.type === 'thinking'
            ? { type: 'thinking', thinking: part.thinking, signature: part.signature }
            : { type: 'redacted_thinking', data: part.data },
      );
      if (hasText(message.content)) blocks.push({ type: 'text', text: message.content });
      for (const call of message.toolCalls ?? []) {
        blocks.push({
          type: 'tool_use',
          id: toAnthropicToolId(call.id),
          name: call.name,
          input: toolInput(call),
        });
      }
      return blocks;
    }
  }
}

function hasText(text: string): boolean {
  // The API rejects text blocks that are empty or only whitespace.
  return text.trim().length > 0;
}

function isThinkingBlock(block: ContentBlockParam): boolean {
  return block.type === 'thinking' || block.type === 'redacted_thinking';
}

function thinkingFirst(blocks: ContentBlockParam[]): ContentBlockParam[] {
  return [...blocks.filter(isThinkingBlock), ...blocks.filter((block) => !isThinkingBlock(block))];
}

function toolInput(call: ToolCall): Record<string, unknown> {
  if (isRecord(call.arguments)) return call.arguments;
  try {
    const parsed: unknown = JSON.parse(call.raw);
    if (isRecord(parsed)) return parsed;
  } catch {
    // Not JSON: the API needs an object, and the call's result already told the model it failed.
  }
  return {};
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Extended thinking may be on for a request only if the assistant turn it
 * continues (the last assistant message, when tool results follow it)
 * starts with a thinking block; a history without the blocks (from another
 * provider, or thinking switched on mid-turn) is sent with thinking off.
 */
export function canEnableThinking(messages: readonly MessageParam[]): boolean {
  const last = messages.at(-1);
  const previous = messages.at(-2);
  if (last === undefined || previous === undefined || previous.role !== 'assistant') return true;
  const lastFirst = Array.isArray(last.content) ? last.content[0] : undefined;
  if (lastFirst?.type !== 'tool_result') return true;
  const first = Array.isArray(previous.content) ? previous.content[0] : undefined;
  return first !== undefined && isThinkingBlock(first);
}

/** A non-streamed message to a neutral response. */
export function fromAnthropicMessage(message: AnthropicMessage): ModelResponse {
  return fromContentBlocks(message.content ?? [], {
    usage: fromAnthropicUsage(message.usage),
    stopReason: message.stop_reason,
    model: message.model,
  });
}

/** Token usage in troupe's shape; cache counts appear when non-zero. */
export function fromAnthropicUsage(
  usage: Partial<AnthropicUsage> | Partial<MessageDeltaUsage> | null | undefined,
): Usage {
  const result: Usage = {
    inputTokens: usage?.input_tokens ?? 0,
    outputTokens: usage?.output_tokens ?? 0,
  };
  const cacheRead = usage?.cache_read_input_tokens ?? 0;
  const cacheWrite = usage?.cache_creation_input_tokens ?? 0;
  if (cacheRead > 0) result.cacheReadTokens = cacheRead;
  if (cacheWrite > 0) result.cacheWriteTokens = cacheWrite;
  return result;
}

/** Maps the API's `stop_reason` to troupe's. */
export function fromAnthropicStopReason(
  reason: StopReason | string | null | undefined,
): ModelStopReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'end';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'refusal':
      return 'refusal';
    default:
      return 'other';
  }
}

/** A content block as far as a response needs it: from a whole message, or assembled from a stream. */
export type ResponseBlock =
  | ContentBlock
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'other' };

/** The neutral response for a message's content blocks (shared by whole and streamed replies). */
export function fromContentBlocks(
  blocks: readonly ResponseBlock[],
  meta: { usage: Usage; stopReason: string | null | undefined; model: string | undefined },
): ModelResponse {
  let content = '';
  const thinkingTexts: string[] = [];
  const thinkingParts: ThinkingPart[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of blocks) {
    if (block.type === 'text') {
      content += block.text;
    } else if (block.type === 'thinking') {
      thinkingTexts.push(block.thinking);
      thinkingParts.push({
        type: 'thinking',
        thinking: block.thinking,
        signature: block.signature,
      });
    } else if (block.type === 'redacted_thinking') {
      thinkingTexts.push(REDACTED_THINKING_TEXT);
      thinkingParts.push({ type: 'redacted_thinking', data: block.data });
    } else if (block.type === 'tool_use') {
      const input = block.input ?? {};
      toolCalls.push({
        id: block.id,
        name: block.name,
        arguments: input,
        raw: JSON.stringify(input),
      });
    }
  }
  const response: ModelResponse = {
    content,
    toolCalls,
    usage: meta.usage,
    stopReason: fromAnthropicStopReason(meta.stopReason),
  };
  const thinking = thinkingTexts.filter((text) => text.length > 0).join('\n\n');
  if (thinking.length > 0) response.thinking = thinking;
  if (thinkingParts.length > 0) response.thinkingParts = thinkingParts;
  if (meta.model !== undefined && meta.model.length > 0) response.model = meta.model;
  return response;
}
