import type { OpenAI } from 'openai';
import { requestSignal } from '../../util/abort.js';
import { createRedactor } from '../../util/redact.js';
import type { Model, OpenAISpec } from '../spec.js';
import type { ModelCallOptions, ModelRequest, ModelResponse, ModelStreamPart } from '../types.js';
import type { OpenAIRequestBody } from './openai-convert.js';
import {
  cancelledError,
  type ProviderErrorContext,
  readApiKey,
  toProviderError,
} from './provider-error.js';
import { redactSpec } from './redact-spec.js';
import { DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, sdkLogLevel } from './sdk-settings.js';

type OpenAIModule = typeof import('openai');
type ConvertModule = typeof import('./openai-convert.js');

/** The variable the key is read from unless the spec names another (`apiKeyEnv`). */
export const DEFAULT_OPENAI_KEY_ENV = 'OPENAI_API_KEY';

/** OpenAI's own endpoint, used when neither the spec nor `OPENAI_BASE_URL` names one. */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

// Sent to a custom baseURL when the key variable is unset; the SDK requires some key.
const NO_KEY = 'no-key';

/**
 * OpenAI Chat Completions through the official `openai` SDK, or any
 * OpenAI-compatible server (Ollama, vLLM, LM Studio, OpenRouter) through
 * `baseURL`. The SDK is loaded on the first request, and the key is read
 * from the environment then, so building a model is cheap and never fails
 * for a missing key. A missing key is `usage.missing_key` for OpenAI itself;
 * a custom `baseURL` may run without one. Failures reject with TroupeErrors
 * (see provider-error.ts).
 *
 * @example
 * const model = new OpenAIModel({ provider: 'openai', model: 'gpt-5.4-mini' });
 * const response = await model.complete({ messages: [{ role: 'user', content: 'Hi' }] });
 */
export class OpenAIModel implements Model {
  readonly spec: OpenAISpec;
  readonly #env: NodeJS.ProcessEnv;
  readonly #baseURL: string;
  #client: OpenAI | undefined;
  #sdk: Promise<OpenAIModule> | undefined;
  #convert: Promise<ConvertModule> | undefined;

  constructor(spec: OpenAISpec, env: NodeJS.ProcessEnv = process.env) {
    this.spec = spec;
    this.#env = env;
    this.#baseURL = spec.baseURL ?? env['OPENAI_BASE_URL'] ?? OPENAI_DEFAULT_BASE_URL;
  }

  /** The spec with header values redacted, for logs and JSON. */
  toJSON(): OpenAISpec {
    return redactSpec(this.spec);
  }

  async complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    const { sdk, convert, client, body } = await this.#prepare(request, options.signal);
    const linked = requestSignal(options.signal);
    try {
      const completion = await client.chat.completions.create(
        { ...body, stream: false },
        { signal: linked.signal },
      );
      return convert.fromOpenAICompletion(completion);
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
    const assembler = new convert.OpenAIStreamAssembler();
    let isStreaming = false;
    const linked = requestSignal(options.signal);
    try {
      const stream = await client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } },
        { signal: linked.signal },
      );
      isStreaming = true;
      for await (const chunk of stream) {
        yield* assembler.push(chunk);
      }
    } catch (error) {
      throw toProviderError(error, this.#context(options.signal, isStreaming), sdk);
    } finally {
      linked.release();
    }
    // The SDK ends a stream quietly when its signal aborts; that is a cancellation, not an answer.
    if (options.signal?.aborted === true) throw cancelledError(options.signal, 'openai');
    yield* assembler.flush();
    yield { type: 'finish', response: assembler.finish() };
  }

  async #prepare(
    request: ModelRequest,
    signal: AbortSignal | undefined,
  ): Promise<{
    sdk: OpenAIModule;
    convert: ConvertModule;
    client: OpenAI;
    body: OpenAIRequestBody;
  }> {
    if (signal?.aborted === true) throw cancelledError(signal, 'openai');
    this.#sdk ??= import('openai');
    // Loaded with the SDK on the first call, as the SDK is: a thread (or a
    // CLI run) that never calls this provider never compiles its converter.
    this.#convert ??= import('./openai-convert.js');
    const [sdk, convert] = await Promise.all([this.#sdk, this.#convert]);
    const client = this.#clientFor(sdk);
    const body = convert.toOpenAIRequest(request, {
      model: this.spec.model,
      temperature: this.spec.temperature,
      maxTokens: request.maxTokens ?? this.spec.maxTokens,
      maxTokensField: this.#isOpenAIItself() ? 'max_completion_tokens' : 'max_tokens',
      reasoningEffort: this.spec.reasoningEffort,
    });
    return { sdk, convert, client, body };
  }

  #clientFor(sdk: OpenAIModule): OpenAI {
    if (this.#client !== undefined) return this.#client;
    // Local OpenAI-compatible servers (Ollama, vLLM, LM Studio) usually need no key; one that
    // does answers 401, and that error names the variable to set.
    const apiKey = this.#isOpenAIItself()
      ? readApiKey(this.#env, this.#keyEnv(), 'openai')
      : this.#env[this.#keyEnv()]?.trim() || NO_KEY;
    this.#client = new sdk.OpenAI({
      apiKey,
      baseURL: this.#baseURL,
      organization: this.spec.organization ?? null,
      // Explicit nulls stop the SDK from reading process.env behind the env we were given.
      project: null,
      adminAPIKey: null,
      webhookSecret: null,
      defaultHeaders: this.spec.headers,
      maxRetries: this.spec.maxRetries ?? DEFAULT_MAX_RETRIES,
      timeout: this.spec.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      logLevel: sdkLogLevel(this.#env['OPENAI_LOG']),
    });
    return this.#client;
  }

  #keyEnv(): string {
    return this.spec.apiKeyEnv ?? DEFAULT_OPENAI_KEY_ENV;
  }

  #isOpenAIItself(): boolean {
    return hostOf(this.#baseURL) === 'api.openai.com';
  }

  #context(signal: AbortSignal | undefined, isStreaming: boolean): ProviderErrorContext {
    return {
      provider: 'openai',
      label: this.#isOpenAIItself()
        ? 'OpenAI'
        : `the OpenAI-compatible server at ${originOf(this.#baseURL)}`,
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

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
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
