import { z } from 'zod';
import { knownContextWindow } from '../model/context-window.js';
import type { ModelSpec } from '../model/spec.js';
import type { AssistantMessage, Message } from '../model/types.js';

/** How an agent compresses its history when it grows too long. */
export interface CompressionOptions {
  /** Compress when the estimated prompt (messages and tool schemas) passes this many tokens. */
  maxTokens: number;
  /** Assistant turns kept verbatim at the end, when they fit (default 4). */
  keepTurns?: number;
  /** The longest summary asked of the model, in tokens (default a quarter of maxTokens, at most 2,048). */
  summaryTokens?: number;
  /** Writes the summary of the dropped middle; by default the agent's own model does (journaled). */
  summarize?: (messages: Message[], signal: AbortSignal) => Promise<string>;
}

/** Share of the context window past which a history is compressed, by default. */
export const DEFAULT_COMPRESS_AT = 0.75;

/**
 * Compression as plain data, for roles, runtime options and the CLI: `false`
 * turns it off; otherwise the model's context window (default: the known
 * window of its model, see knownContextWindow), the share of it past which
 * the history is compressed (default DEFAULT_COMPRESS_AT) and the assistant
 * turns kept verbatim.
 */
export const CompressionSettingSchema = z.union([
  z.literal(false),
  z
    .object({
      /** The model's context window, in tokens. */
      contextWindow: z.number().int().min(1024).optional(),
      /** Compress when the prompt passes this share of the window (more than 0, less than 1). */
      at: z.number().gt(0).lt(1).optional(),
      /** Assistant turns kept verbatim at the end (default 4). */
      keepTurns: z.number().int().nonnegative().optional(),
    })
    .strict(),
]);
export type CompressionSetting = z.infer<typeof CompressionSettingSchema>;

/**
 * A role's setting over the run's: `false` on either side turns compression
 * off (the run's `--no-compress`, a role that must see its whole history);
 * otherwise the role's fields win over the run's.
 */
export function mergeCompression(
  run: CompressionSetting | undefined,
  role: CompressionSetting | undefined,
): CompressionSetting | undefined {
  if (run === false || role === false) return false;
  if (run === undefined) return role;
  if (role === undefined) return run;
  return { ...run, ...role };
}

/**
 * The compression of an agent on `spec`'s model: on by default when the
 * window is known (given, or in KNOWN_CONTEXT_WINDOWS); undefined (off) for
 * `false` and for a model whose window is unknown.
 */
export function compressionFor(
  setting: CompressionSetting | undefined,
  spec: ModelSpec,
): CompressionOptions | undefined {
  if (setting === false) return undefined;
  const window = setting?.contextWindow ?? knownContextWindow(spec);
  if (window === undefined) return undefined;
  const options: CompressionOptions = {
    maxTokens: Math.floor(window * (setting?.at ?? DEFAULT_COMPRESS_AT)),
  };
  if (setting?.keepTurns !== undefined) options.keepTurns = setting.keepTurns;
  return options;
}

/** The longest summary asked of the model, in tokens: a quarter of the limit, at most 2,048. */
export function summaryTokensOf(options: CompressionOptions): number {
  return options.summaryTokens ?? Math.max(64, Math.min(2048, Math.floor(options.maxTokens / 4)));
}

/**
 * The longest transcript a summarizer gets, in characters: its prompt must
 * fit under the compression limit with room for the summary (three
 * characters a token, as estimatePromptTokens counts).
 */
export function summaryInputChars(
  summaryTokens: number,
  options: CompressionOptions | undefined,
): number {
  const limit = options?.maxTokens ?? summaryTokens * 4;
  return Math.max(2000, (limit - summaryTokens - 200) * 3);
}

/** Marks the message that replaces a compressed middle. */
export const SUMMARY_PREFIX = '[Summary of the earlier conversation]';

/**
 * A rough token estimate (four characters a token), for a quick look at a
 * history's size; compression and budgets use the generous
 * estimatePromptTokens, and budgets the usage providers report.
 */
export function estimateTokens(messages: readonly Message[]): number {
  let chars = 0;
  for (const message of messages) {
    chars += message.content.length + 4;
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      for (const call of message.toolCalls) chars += call.name.length + call.raw.length;
    }
  }
  return Math.ceil(chars / 4);
}

/** Where a conversation can be cut for compression. */
export interface CompressionPlan {
  /** Messages kept verbatim at the start: the system prompt and the original task. */
  head: Message[];
  /** Messages to summarize. */
  middle: Message[];
  /** Messages kept verbatim at the end. */
  tail: Message[];
}

/**
 * Splits a conversation into head, middle and tail. The head is the system
 * prompt and the first user message (the original task): both stay
 * verbatim, whatever is folded. The tail holds the last `keepTurns`
 * assistant turns and starts at a user or assistant message, never at a
 * tool result, so an assistant's tool calls stay with their results (0
 * folds everything after the head). Returns undefined when there is
 * nothing worth summarizing (no middle, or only an earlier summary).
 */
export function planCompression(
  messages: readonly Message[],
  keepTurns: number,
): CompressionPlan | undefined {
  let headLength = messages[0]?.role === 'system' ? 1 : 0;
  if (messages[headLength]?.role === 'user') headLength += 1;
  let assistants = 0;
  let cut = messages.length;
  for (let index = messages.length - 1; index >= headLength; index -= 1) {
    const message = messages[index] as Message;
    if (message.role === 'assistant') assistants += 1;
    if (assistants > keepTurns) break;
    if (message.role !== 'tool') cut = index;
  }
  // The kept tail must begin at a message that is not a tool result (see above);
  // `cut` only ever moves to such messages.
  const middle = messages.slice(headLength, cut);
  if (middle.length === 0) return undefined;
  if (middle.length === 1 && isSummary(middle[0] as Message)) return undefined;
  return {
    head: messages.slice(0, headLength),
    middle,
    tail: messages.slice(cut),
  };
}

/** True for the message that holds the summary of a compressed middle. */
export function isSummary(message: Message): boolean {
  return message.role === 'user' && message.content.startsWith(SUMMARY_PREFIX);
}

/** A plain-text transcript of messages, for a summarizer model. */
export function transcript(messages: readonly Message[]): string {
  return messages
    .map((message) => {
      switch (message.role) {
        case 'assistant': {
          const calls = (message.toolCalls ?? [])
            .map((call) => `\n  -> called ${call.name}(${call.raw})`)
            .join('');
          return `assistant: ${message.content}${calls}`;
        }
        case 'tool':
          return `tool ${message.name}${message.isError ? ' (error)' : ''}: ${message.content}`;
        default:
          return `${message.role}: ${message.content}`;
      }
    })
    .join('\n');
}

/**
 * Answers every tool call that has no result yet with a synthetic error
 * result, so the conversation stays valid for every provider after a run was
 * interrupted mid-tool-call (cancel, timeout, crash).
 */
export function closePendingToolCalls(messages: readonly Message[], reason: string): Message[] {
  const out: Message[] = [];
  for (let index = 0; index < messages.length; ) {
    const message = messages[index] as Message;
    out.push(message);
    index += 1;
    if (message.role !== 'assistant' || message.toolCalls === undefined) continue;
    // The results that arrived follow the assistant message; synthetic ones go
    // after them, before the next turn.
    const first = index;
    while (index < messages.length && (messages[index] as Message).role === 'tool') {
      out.push(messages[index] as Message);
      index += 1;
    }
    for (const call of message.toolCalls) {
      if (answered(messages, first, index, call.id)) continue;
      out.push({
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: `Error: ${reason}`,
        isError: true,
      });
    }
  }
  return out;
}

function answered(messages: readonly Message[], from: number, to: number, id: string): boolean {
  for (let index = from; index < to; index += 1) {
    const message = messages[index] as Message;
    if (message.role === 'tool' && message.toolCallId === id) return true;
  }
  return false;
}

/** The last assistant message's text, or '' when there is none. */
export function lastAssistantText(messages: readonly Message[]): string {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role === 'assistant') return (message as AssistantMessage).content;
  }
  return '';
}
