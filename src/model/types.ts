import { z } from 'zod';

/**
 * Provider-neutral conversation types. Everything here is plain,
 * structured-cloneable data: it crosses threads, is written to traces and is
 * rebuilt into each provider's wire format by the provider adapters.
 */

/** One tool call the model asked for. `arguments` is parsed JSON when `raw` parsed, else the raw string. */
export const ToolCallSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.unknown(),
  raw: z.string(),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

/**
 * Provider-opaque reasoning that must go back unchanged when a turn continues
 * (Anthropic thinking blocks with their signatures, redacted thinking data).
 */
export const ThinkingPartSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string() }),
]);
export type ThinkingPart = z.infer<typeof ThinkingPartSchema>;

export const SystemMessageSchema = z.object({ role: z.literal('system'), content: z.string() });
export const UserMessageSchema = z.object({ role: z.literal('user'), content: z.string() });
export const AssistantMessageSchema = z.object({
  role: z.literal('assistant'),
  content: z.string(),
  toolCalls: z.array(ToolCallSchema).optional(),
  /** Readable reasoning text, for people; never sent back as text. */
  thinking: z.string().optional(),
  /** What the provider needs to continue this turn; sent back unchanged. */
  thinkingParts: z.array(ThinkingPartSchema).optional(),
});
export const ToolMessageSchema = z.object({
  role: z.literal('tool'),
  toolCallId: z.string(),
  name: z.string(),
  content: z.string(),
  isError: z.boolean().optional(),
});
export const MessageSchema = z.discriminatedUnion('role', [
  SystemMessageSchema,
  UserMessageSchema,
  AssistantMessageSchema,
  ToolMessageSchema,
]);
export type SystemMessage = z.infer<typeof SystemMessageSchema>;
export type UserMessage = z.infer<typeof UserMessageSchema>;
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
export type ToolMessage = z.infer<typeof ToolMessageSchema>;
export type Message = z.infer<typeof MessageSchema>;

/** Token counts of one call or a sum of calls. Cache counts are Anthropic's prompt-cache tokens. */
export const UsageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative().optional(),
  cacheWriteTokens: z.number().int().nonnegative().optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/** A tool as the model sees it: name, description and a JSON Schema of type object. */
export const ToolSchemaSchema = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});
export type ToolSchema = z.infer<typeof ToolSchemaSchema>;

/** Why the model stopped producing output. */
export const StopReasonSchema = z.enum([
  'end',
  'tool_calls',
  'max_tokens',
  'content_filter',
  'refusal',
  'other',
]);
export type ModelStopReason = z.infer<typeof StopReasonSchema>;

/** One complete model reply, whether it came from `complete()` or the end of `stream()`. */
export const ModelResponseSchema = z.object({
  content: z.string(),
  toolCalls: z.array(ToolCallSchema),
  thinking: z.string().optional(),
  thinkingParts: z.array(ThinkingPartSchema).optional(),
  usage: UsageSchema,
  stopReason: StopReasonSchema,
  /** The model name the provider reports, when it does. */
  model: z.string().optional(),
});
export type ModelResponse = z.infer<typeof ModelResponseSchema>;

/** What an agent sends to a model. */
export interface ModelRequest {
  messages: readonly Message[];
  tools?: readonly ToolSchema[];
  /**
   * The most output tokens this one call may produce (the provider's
   * `max_tokens`); overrides the spec's `maxTokens`. The tree budget sets it
   * to what the run has left (see outputTokenLimits).
   */
  maxTokens?: number | undefined;
  /** Who is asking; the scripted model matches on it, real providers ignore it. */
  caller?: { name: string; role?: string | undefined };
}

/** Parts of a streamed reply. The last part is always `finish` with the whole response. */
export type ModelStreamPart =
  | { type: 'text-delta'; text: string }
  | { type: 'thinking-delta'; text: string }
  | { type: 'tool-call-delta'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'finish'; response: ModelResponse };

/** Options for one model call. */
export interface ModelCallOptions {
  signal?: AbortSignal | undefined;
}

/** Adds two usages; cache counts stay absent unless either side has them. */
export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
  if (a.cacheReadTokens !== undefined || b.cacheReadTokens !== undefined) {
    sum.cacheReadTokens = (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0);
  }
  if (a.cacheWriteTokens !== undefined || b.cacheWriteTokens !== undefined) {
    sum.cacheWriteTokens = (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0);
  }
  return sum;
}

/** A usage of zero tokens. */
export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0 };
}

/** Total tokens of a usage, as budgets count them. */
export function totalTokens(usage: Usage): number {
  return usage.inputTokens + usage.outputTokens;
}
