import { type ErrorCode, errorMessage, isTroupeError, TroupeError } from '../../errors.js';

/**
 * Turns what the OpenAI and Anthropic SDKs throw into TroupeErrors a person
 * can act on: a stable code, a message naming the fix, and plain-data
 * details `{provider, status?, retryAfter?, requestId?}`. Messages never
 * carry a stack trace or a key; the SDK error is not attached as a cause,
 * because its text can quote a (masked) key and its headers.
 */

/** The SDK error classes a mapping needs; both SDKs export them under these names. */
export interface SdkErrorClasses {
  APIError: abstract new (...args: never[]) => Error;
  APIUserAbortError: abstract new (...args: never[]) => Error;
  APIConnectionError: abstract new (...args: never[]) => Error;
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
}

/** Where an error happened, for the message. */
export interface ProviderErrorContext {
  provider: 'openai' | 'anthropic';
  /** A name for people, as it reads mid-sentence: "OpenAI", "the OpenAI-compatible server at http://…". */
  label: string;
  model: string;
  /** The environment variable the key came from. */
  keyEnv: string;
  maxRetries: number;
  timeoutMs: number;
  /** True once the response started streaming: a failure now cuts an answer short. */
  isStreaming: boolean;
  signal?: AbortSignal | undefined;
  /** Replaces secrets in text (see util/redact.ts). */
  redact: (text: string) => string;
}

interface ApiErrorShape {
  status?: number | undefined;
  headers?: { get(name: string): string | null } | undefined;
  requestID?: string | null | undefined;
  apiMessage?: string | null | undefined;
  type?: string | null | undefined;
  error?: unknown;
  message: string;
}

/** The error a failed model call rejects with. */
export function toProviderError(
  error: unknown,
  context: ProviderErrorContext,
  sdk: SdkErrorClasses,
): TroupeError {
  if (isTroupeError(error)) return error;
  const details: Record<string, unknown> = { provider: context.provider, model: context.model };
  const label = context.label.charAt(0).toUpperCase() + context.label.slice(1);
  const fail = (code: ErrorCode, message: string): TroupeError =>
    new TroupeError(code, context.redact(message), { details });

  if (
    context.signal?.aborted === true ||
    error instanceof sdk.APIUserAbortError ||
    (error instanceof Error && error.name === 'AbortError')
  ) {
    return new TroupeError('cancelled', 'The model call was cancelled.', {
      details,
      cause: context.signal?.reason,
    });
  }
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return fail(
      'model.connection',
      `${label} did not answer within ${context.timeoutMs} ms (timeoutMs), after ${retries(context.maxRetries)}.`,
    );
  }
  if (error instanceof sdk.APIConnectionError) {
    const cause = error.cause instanceof Error ? `: ${causeText(error.cause)}` : '';
    return fail(
      'model.connection',
      `Could not reach ${context.label}${cause}, after ${retries(context.maxRetries)}. Check the network and the baseURL.`,
    );
  }
  if (!(error instanceof sdk.APIError)) {
    if (context.isStreaming) {
      return fail(
        'model.stream_interrupted',
        `The stream from ${context.label} broke off before the reply was complete (${errorMessage(error)}); the partial answer is not used.`,
      );
    }
    return fail(
      'model.bad_response',
      `${label} gave a response the SDK could not read: ${errorMessage(error)}`,
    );
  }

  const api = error as unknown as ApiErrorShape;
  const said = quote(apiMessageOf(api));
  if (typeof api.requestID === 'string' && api.requestID.length > 0) {
    details['requestId'] = api.requestID;
  }
  if (typeof api.type === 'string' && api.type.length > 0) details['type'] = api.type;
  const status = api.status;
  if (status === undefined) {
    // An error event inside a stream that had already started.
    return fail(
      'model.stream_interrupted',
      `${label} stopped the stream with an error${said}; the partial answer is not used.`,
    );
  }
  details['status'] = status;
  const retryAfter = retryAfterSeconds(api.headers);
  if (retryAfter !== undefined) details['retryAfter'] = retryAfter;

  if (status === 401 || status === 403) {
    // A 401 body can quote a masked key; only a 403 says something the key's owner can use.
    const reason = status === 403 ? ` (403 permission denied${said})` : ' (401)';
    return fail('model.auth', `${label} authentication failed: check ${context.keyEnv}${reason}.`);
  }
  if (status === 404) {
    return fail(
      'model.not_found',
      `${label} has no model "${context.model}" (404${said}). Check the model name${context.provider === 'openai' ? ' and the baseURL' : ''}.`,
    );
  }
  if (status === 429) {
    const wait = retryAfter === undefined ? '' : ` Retry after ${retryAfter} s.`;
    return fail(
      'model.rate_limited',
      `${label} rate limit reached (429${said}); gave up after ${retries(context.maxRetries)}.${wait}`,
    );
  }
  if (status >= 500) {
    const what = status === 529 ? 'is overloaded' : 'had a server error';
    return fail(
      'model.server',
      `${label} ${what} (${status}${said}); gave up after ${retries(context.maxRetries)}.`,
    );
  }
  if (status === 400 || status === 413 || status === 422) {
    return fail('model.bad_request', `${label} rejected the request (${status}${said}).`);
  }
  return fail('model.http', `${label} answered HTTP ${status}${said}.`);
}

/** The `Retry-After` wait in seconds, from `retry-after-ms` or `retry-after` (seconds or a date). */
export function retryAfterSeconds(
  headers: { get(name: string): string | null } | undefined,
  now: number = Date.now(),
): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds / 1000;
  const value = headers?.get('retry-after');
  if (value === null || value === undefined || value.length === 0) return undefined;
  const seconds = Number.parseFloat(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  if (Number.isFinite(date)) return Math.max(0, Math.round((date - now) / 1000));
  return undefined;
}

function apiMessageOf(error: ApiErrorShape): string | undefined {
  if (typeof error.apiMessage === 'string' && error.apiMessage.length > 0) return error.apiMessage;
  const body = error.error;
  if (typeof body === 'object' && body !== null) {
    const record = body as Record<string, unknown>;
    if (typeof record['message'] === 'string') return record['message'];
    const nested = record['error'];
    if (typeof nested === 'object' && nested !== null) {
      const message = (nested as Record<string, unknown>)['message'];
      if (typeof message === 'string') return message;
    }
  }
  // The SDK's own message starts with the status ("429 Rate limit…").
  const text = error.message.replace(/^\d{3}\s+/, '');
  return /status code \(no body\)/.test(text) ? undefined : text;
}

function quote(message: string | undefined): string {
  if (message === undefined || message.trim().length === 0) return '';
  const oneLine = message.replace(/\s+/g, ' ').trim();
  return `: "${oneLine.length > 500 ? `${oneLine.slice(0, 499)}…` : oneLine}"`;
}

function retries(count: number): string {
  return count === 1 ? '1 retry' : `${count} retries`;
}

function causeText(cause: Error): string {
  // undici wraps the useful part ("connect ECONNREFUSED 127.0.0.1:8080") one level down.
  const inner = cause.cause instanceof Error ? cause.cause : cause;
  return inner.message.length > 0 ? inner.message : cause.message;
}

/** The error a call rejects with when its signal aborted. */
export function cancelledError(signal: AbortSignal | undefined, provider: string): TroupeError {
  return new TroupeError('cancelled', 'The model call was cancelled.', {
    details: { provider },
    cause: signal?.reason,
  });
}

/**
 * The API key from `env[keyEnv]`. Throws `usage.missing_key` naming the
 * variable when it is unset or empty; the key itself is never in a message.
 */
export function readApiKey(env: NodeJS.ProcessEnv, keyEnv: string, provider: string): string {
  const key = env[keyEnv];
  if (key !== undefined && key.trim().length > 0) return key.trim();
  throw new TroupeError(
    'usage.missing_key',
    `The ${provider} provider needs an API key in the environment variable ${keyEnv}, which is not set. Set ${keyEnv}, or name another variable with the apiKeyEnv option (a local server that needs no key accepts any value, e.g. ${keyEnv}=local).`,
    { details: { provider, keyEnv } },
  );
}
