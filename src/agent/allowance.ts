import type { Message, ToolSchema, Usage } from '../model/types.js';

/** What one model call asks of a budget before it is sent. */
export interface CallAsk {
  /** The prompt's size, estimated on the generous side (estimatePromptTokens). */
  promptTokens: number;
  /** The output tokens the call wants (its `max_tokens` when there is room). */
  maxTokens: number;
  /** The fewest output tokens worth sending the call for. */
  minTokens: number;
}

/** How a reserved call ended. */
export type CallOutcome = Usage | 'aborted' | 'failed';

/** A budget's answer: room for the call, with its capped `max_tokens`, or a refusal that says why. */
export type CallGrant =
  | {
      ok: true;
      /** The call's `max_tokens`: at most what was asked, at least `minTokens`. */
      maxTokens: number;
      /**
       * The call ended: its usage; `aborted` when it was cancelled in flight
       * (the provider may have billed its prompt); `failed` when it got an
       * error answer (nothing billed). Call once.
       */
      settle(outcome: CallOutcome): void;
    }
  | { ok: false; reason: string };

/**
 * Where an agent reserves room for each model call before sending it: the
 * run's tree budget (the runtime gives one to every agent of a budgeted run).
 * The answer may wait while other calls hold the room it needs; it must
 * settle when `signal` aborts (a refusal, or a rejection with the signal's reason).
 */
export interface CallAllowance {
  reserve(ask: CallAsk, signal: AbortSignal): Promise<CallGrant>;
}

// Per message: role, separators and the JSON a provider wraps it in.
const MESSAGE_OVERHEAD_CHARS = 24;
// Three characters a token: tokenizers average about four on English prose,
// fewer on JSON and code, so this errs on the side of the budget.
const CHARS_PER_TOKEN = 3;

/**
 * A generous estimate of a request's prompt tokens (messages, tool calls
 * and tool schemas), for reserving budget before the provider counts it.
 */
export function estimatePromptTokens(
  messages: readonly Message[],
  tools: readonly ToolSchema[] = [],
): number {
  let chars = 0;
  for (const message of messages) {
    chars += message.content.length + MESSAGE_OVERHEAD_CHARS;
    if (message.role === 'assistant' && message.toolCalls !== undefined) {
      for (const call of message.toolCalls)
        chars += call.name.length + call.raw.length + MESSAGE_OVERHEAD_CHARS;
    }
    if (message.role === 'tool') chars += message.toolCallId.length;
  }
  if (tools.length > 0) chars += JSON.stringify(tools).length;
  return Math.ceil(chars / CHARS_PER_TOKEN);
}
