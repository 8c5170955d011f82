import { z } from 'zod';
import { ScriptSchema } from './script.js';
import type { ModelCallOptions, ModelRequest, ModelResponse, ModelStreamPart } from './types.js';

const HeadersSchema = z.record(z.string(), z.string());

/** OpenAI Chat Completions, or any OpenAI-compatible server through `baseURL`. */
export const OpenAISpecSchema = z
  .object({
    provider: z.literal('openai'),
    model: z.string().min(1),
    /** Any OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenRouter). */
    baseURL: z.url().optional(),
    /** Name of the environment variable holding the key; default OPENAI_API_KEY. */
    apiKeyEnv: z.string().min(1).optional(),
    organization: z.string().optional(),
    /** Extra HTTP headers. Values are redacted wherever options are logged. */
    headers: HeadersSchema.optional(),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().positive().optional(),
    /** Per-request timeout, in milliseconds. */
    timeoutMs: z.number().int().positive().optional(),
    /** Retries the SDK makes on 429, 5xx and connection errors; default 2. */
    maxRetries: z.number().int().nonnegative().optional(),
    /** `reasoning_effort` for reasoning models (o-series, gpt-5): how much they think before answering. */
    reasoningEffort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
  })
  .strict();

/** Anthropic Messages, with optional extended thinking. */
export const AnthropicSpecSchema = z
  .object({
    provider: z.literal('anthropic'),
    model: z.string().min(1),
    baseURL: z.url().optional(),
    /** Name of the environment variable holding the key; default ANTHROPIC_API_KEY. */
    apiKeyEnv: z.string().min(1).optional(),
    headers: HeadersSchema.optional(),
    /** Extended thinking with this many budget tokens (at least 1024, below maxTokens). */
    thinking: z
      .object({
        budgetTokens: z.number().int().min(1024),
        /** Send `{type: 'adaptive'}` (required by newer Claude models) instead of a fixed budget. */
        adaptive: z.boolean().optional(),
      })
      .optional(),
    temperature: z.number().min(0).max(1).optional(),
    /** `max_tokens`, always sent; default 4096. */
    maxTokens: z.number().int().positive().optional(),
    timeoutMs: z.number().int().positive().optional(),
    maxRetries: z.number().int().nonnegative().optional(),
  })
  .strict();

/** The deterministic data-only model for tests and benchmarks. */
export const ScriptedSpecSchema = z
  .object({ provider: z.literal('scripted'), script: ScriptSchema })
  .strict();

/** The built-in heuristic model: no key, no network. */
export const OfflineSpecSchema = z
  .object({ provider: z.literal('offline'), seed: z.number().int().optional() })
  .strict();

/**
 * A serializable description of a model. Models are rebuilt from their spec
 * inside worker threads; API keys never appear here, only the name of the
 * environment variable that holds one.
 */
export const ModelSpecSchema = z.discriminatedUnion('provider', [
  OpenAISpecSchema,
  AnthropicSpecSchema,
  ScriptedSpecSchema,
  OfflineSpecSchema,
]);
export type ModelSpec = z.input<typeof ModelSpecSchema>;
export type OpenAISpec = z.output<typeof OpenAISpecSchema>;
export type AnthropicSpec = z.output<typeof AnthropicSpecSchema>;
export type ScriptedSpec = z.output<typeof ScriptedSpecSchema>;
export type OfflineSpec = z.output<typeof OfflineSpecSchema>;

/** The provider-neutral model interface every provider implements. */
export interface Model {
  readonly spec: ModelSpec;
  /** One whole reply. Rejects with a TroupeError whose code says what failed. */
  complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse>;
  /** Deltas as they arrive, ending with a `finish` part holding the same shape `complete()` returns. */
  stream(request: ModelRequest, options?: ModelCallOptions): AsyncIterable<ModelStreamPart>;
}

/** A short label for a spec, for events and the live view ("anthropic/claude-…"). */
export function describeModel(spec: ModelSpec): string {
  switch (spec.provider) {
    case 'openai':
    case 'anthropic':
      return `${spec.provider}/${spec.model}`;
    case 'scripted':
      return 'scripted';
    case 'offline':
      return 'offline (heuristic)';
  }
}
