import type { Anthropic } from '@anthropic-ai/sdk';
import { TroupeError } from '../../errors.js';
import { requestSignal } from '../../util/abort.js';
import { createRedactor } from '../../util/redact.js';
import { cappedThinkingBudget } from '../output-tokens.js';
import type { AnthropicSpec, Model } from '../spec.js';
import type { ModelCallOptions, ModelRequest, ModelResponse, ModelStreamPart } from '../types.js';
import type { AnthropicRequestBody } from './anthropic-convert.js';
import {
  cancelledError,
  type ProviderErrorContext,
  readApiKey,
  toProviderError,
} from './provider-error.js';
import { redactSpec } from './redact-spec.js';
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, sdkLogLevel } from './sdk-settings.js';

type AnthropicModule = typeof import('@anthropic-ai/sdk');
type ConvertModule = typeof import('./anthropic-convert.js') &
  typeof import('./anthropic-stream.js');

/** The variable the key is read from unless the spec names another (`apiKeyEnv`). */
export const DEFAULT_ANTHROPIC_KEY_ENV = 'ANTHROPIC_API_KEY';

/** Anthropic's endpoint, used when neither the spec nor `ANTHROPIC_BASE_URL` names one. */
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** `max_tokens` when the spec sets none: this much, plus the thinking budget when thinking is on. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

/**
 * Anthropic Messages through the official `@anthropic-ai/sdk`, with
 * optional extended thinking. The SDK is loaded on the first request and
 * the key read from the environment then. Throws at construction for
 * options the API would refuse on every call.
 *
 * @example
 * const model = new AnthropicModel({
 *   provider: 'anthropic', model: 'claude-sonnet-4-6', thinking: { budgetTokens: 2048 },
 * });
 */
export class AnthropicModel implements Model {
  readonly spec: AnthropicSpec;
  readonly #env: NodeJS.ProcessEnv;
  readonly #baseURL: string;
  readonly #maxTokens: number;
  #client: Anthropic | undefined;
  #sdk: Promise<AnthropicModule> | undefined;
  #convert: Promise<ConvertModule> | undefined;

  constructor(spec: AnthropicSpec, env: NodeJS.ProcessEnv = process.env) {
    if (spec.temperature !== undefined) {
      throw new TroupeError(
        'usage.invalid_option',
        'The anthropic spec sets temperature, but the Anthropic API version the SDK speaks (2026-10-21) rejects temperature on every model. Remove temperature from the spec.',
      );
    }
    const budget = spec.thinking?.budgetTokens;
    const maxTokens =
      spec.maxTokens ??
      DEFAULT_ANTHROPIC_MAX_TOKENS + (spec.thinking === undefined ? 0 : (budget ?? 0));
    if (budget !== undefined && spec.thinking?.adaptive !== true && maxTokens <= budget) {
      throw new TroupeError(
        'usage.invalid_option',
        `The anthropic spec sets maxTokens ${maxTokens}, which must be greater than thinking.budgetTokens ${budget} (max_tokens counts the thinking too). Raise maxTokens or lower the budget.`,
      );
    }
    this.spec = spec;
    this.#env = env;
    this.#baseURL = spec.baseURL ?? env['ANTHROPIC_BASE_URL'] ?? ANTHROPIC_DEFAULT_BASE_URL;
    this.#maxTokens = maxTokens;
  }

  /** The spec with header values redacted, for logs and JSON. */
  toJSON(): AnthropicSpec {
    return redactSpec(this.spec);
  }

  async complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    const { sdk, convert, client, body } = await this.#prepare(request, options.signal);
    const linked = requestSignal(options.signal);
    try {
      const message = await client.messages.create(
        { ...body, stream: false },
        { signal: linked.signal },
      );
      return convert.fromAnthropicMessage(message);
    } catch (error) {
      throw toProviderError(error, this.#context(options.signal, false), sdk);
    } finally {
      linked.release();
    }
  }

  async *stream(
    request: ModelRequest,
    options: ModelCallOptions = {},
  ): AsyncGenerator<ModelStreamPart> {
    const { sdk, convert, client, body } = await this.#prepare(request, options.signal);
    const assembler = new convert.AnthropicStreamAssembler();
    let isStreaming = false;
    const linked = requestSignal(options.signal);
    try {
      const stream = await client.messages.create(
        { ...body, stream: true },
        { signal: linked.signal },
      );
      isStreaming = true;
      for await (const event of stream) {
        yield* assembler.push(event);
      }
    } catch (error) {
      throw toProviderError(error, this.#context(options.signal, isStreaming), sdk);
    } finally {
      linked.release();
    }
    // The SDK ends a stream quietly when its signal aborts; that is a cancellation, not an answer.
    if (options.signal?.aborted === true) throw cancelledError(options.signal, 'anthropic');
    yield { type: 'finish', response: assembler.finish() };
  }

  async #prepare(
    request: ModelRequest,
    signal: AbortSignal | undefined,
  ): Promise<{
    sdk: AnthropicModule;
    convert: ConvertModule;
    client: Anthropic;
    body: AnthropicRequestBody;
  }> {
    if (signal?.aborted === true) throw cancelledError(signal, 'anthropic');
    this.#sdk ??= import('@anthropic-ai/sdk');
    // Loaded with the SDK on the first call, as the SDK is: a thread (or a
    // CLI run) that never calls this provider never compiles its converters.
    this.#convert ??= Promise.all([
      import('./anthropic-convert.js'),
      import('./anthropic-stream.js'),
    ]).then(([convert, stream]) => ({ ...convert, ...stream }));
    const [sdk, convert] = await Promise.all([this.#sdk, this.#convert]);
    const client = this.#clientFor(sdk);
    const body = convert.toAnthropicRequest(request, {
      model: this.spec.model,
      maxTokens: request.maxTokens ?? this.#maxTokens,
      thinking: this.#thinkingFor(request.maxTokens),
    });
    return { sdk, convert, client, body };
  }

  // A call whose max_tokens the budget capped thinks less, so that the answer still has room.
  #thinkingFor(maxTokens: number | undefined): AnthropicSpec['thinking'] {
    const thinking = this.spec.thinking;
    if (thinking === undefined || maxTokens === undefined || thinking.adaptive === true)
      return thinking;
    const budgetTokens = cappedThinkingBudget(thinking.budgetTokens, maxTokens);
    return budgetTokens === undefined ? undefined : { ...thinking, budgetTokens };
  }

  #clientFor(sdk: AnthropicModule): Anthropic {
    if (this.#client !== undefined) return this.#client;
    const apiKey = readApiKey(this.#env, this.#keyEnv(), 'anthropic');
    this.#client = new sdk.Anthropic({
      apiKey,
      baseURL: this.#baseURL,
      defaultHeaders: this.spec.headers,
      maxRetries: this.spec.maxRetries ?? DEFAULT_MAX_RETRIES,
      // Always explicit: without it the SDK refuses non-streamed calls with a large max_tokens.
      timeout: this.spec.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      logLevel: sdkLogLevel(this.#env['ANTHROPIC_LOG']),
    });
    return this.#client;
  }

  #keyEnv(): string {
    return this.spec.apiKeyEnv ?? DEFAULT_ANTHROPIC_KEY_ENV;
  }

  #context(signal: AbortSignal | undefined, isStreaming: boolean): ProviderErrorContext {
    const isAnthropicItself = this.#baseURL === ANTHROPIC_DEFAULT_BASE_URL;
    return {
      provider: 'anthropic',
      label: isAnthropicItself ? 'Anthropic' : `Anthropic (at ${originOf(this.#baseURL)})`,
      model: this.spec.model,
      keyEnv: this.#keyEnv(),
      maxRetries: this.spec.maxRetries ?? DEFAULT_MAX_RETRIES,
      timeoutMs: this.spec.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      isStreaming,
      signal,
      redact: createRedactor(this.#env),
    };
  }
}

// The origin drops any user:password in the URL, so it is safe to show.
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the configured baseURL';
  }
}
