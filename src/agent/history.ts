import type { AssistantMessage, Message } from '../model/types.js';

/** How an agent compresses its history when it grows too long. */
export interface CompressionOptions {
  /** Compress when the estimated size of the conversation passes this many tokens. */
  maxTokens: number;
  /** Assistant turns kept verbatim at the end (default 4). */
  keepTurns?: number;
  /** Writes the summary of the dropped middle; by default the agent's own model does. */
  summarize?: (messages: Message[], signal: AbortSignal) => Promise<string>;
}

/** Marks the message that replaces a compressed middle. */
export const SUMMARY_PREFIX = '[Summary of the earlier conversation]';

/**
 * A rough token estimate (four characters a token), used only to decide when
 * to compress; budgets use the usage providers report.
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
  /** Messages kept at the start (the system prompt). */
  head: Message[];
  /** Messages to summarize. */
  middle: Message[];
  /** Messages kept verbatim at the end. */
  tail: Message[];
}

/**
 * Splits a conversation into head, middle and tail. The tail starts at a user
 * or assistant message, never at a tool result, so an assistant's tool calls
 * stay with their results. Returns undefined when there is nothing worth
 * summarizing.
 */
export function planCompression(
  messages: readonly Message[],
  keepTurns: number,
): CompressionPlan | undefined {
  const headLength = messages[0]?.role === 'system' ? 1 : 0;
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
  if (middle.length < 2) return undefined;
  return {
    head: messages.slice(0, headLength),
    middle,
    tail: messages.slice(cut),
  };
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
