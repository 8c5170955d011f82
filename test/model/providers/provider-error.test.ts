import * as openaiSdk from 'openai';
import { describe, expect, it } from 'vitest';
import { TroupeError } from '../../../src/errors.js';
import {
  type ProviderErrorContext,
  readApiKey,
  retryAfterSeconds,
  toProviderError,
} from '../../../src/model/providers/provider-error.js';
import { createRedactor } from '../../../src/util/redact.js';

// The real SDK error classes: the mapping is tested on what the SDK throws, not look-alikes.
const { APIError, APIConnectionError, APIConnectionTimeoutError, APIUserAbortError } = openaiSdk;

const env = { OPENAI_API_KEY: 'sk-proj-abcdefghijklmnopqrstuvwx' };

function context(overrides: Partial<ProviderErrorContext> = {}): ProviderErrorContext {
  return {
    provider: 'openai',
    label: 'OpenAI',
    model: 'gpt-test',
    keyEnv: 'OPENAI_API_KEY',
    maxRetries: 2,
    timeoutMs: 1000,
    isStreaming: false,
    redact: createRedactor(env),
    ...overrides,
  };
}

function apiError(
  status: number | undefined,
  message: string,
  headers: Record<string, string> = {},
) {
  return APIError.generate(
    status,
    { error: { message, type: 'x' } },
    undefined,
    new Headers(headers),
  );
}

describe('toProviderError', () => {
  it.each([
    [400, 'model.bad_request'],
    [401, 'model.auth'],
    [402, 'model.http'],
    [403, 'model.auth'],
    [404, 'model.not_found'],
    [413, 'model.bad_request'],
    [422, 'model.bad_request'],
    [429, 'model.rate_limited'],
    [500, 'model.server'],
    [529, 'model.server'],
  ] as const)('maps HTTP %i to %s', (status, code) => {
    const error = toProviderError(apiError(status, 'details here'), context(), openaiSdk);

    expect(error.code).toBe(code);
    expect(error.details).toMatchObject({ provider: 'openai', status });
  });

  it('quotes a 403 reason but never a 401 body, which can echo a masked key', () => {
    const forbidden = toProviderError(
      apiError(403, 'Project lacks access to model gpt-test'),
      context(),
      openaiSdk,
    );
    const unauthorized = toProviderError(
      apiError(401, 'Incorrect API key provided: sk-proj-****uvwx'),
      context(),
      openaiSdk,
    );

    expect(forbidden.message).toBe(
      'OpenAI authentication failed: check OPENAI_API_KEY (403 permission denied: "Project lacks access to model gpt-test").',
    );
    expect(unauthorized.message).toBe('OpenAI authentication failed: check OPENAI_API_KEY (401).');
  });

  it('redacts a key that a server echoes in its message', () => {
    const error = toProviderError(
      apiError(400, `bad header ${env.OPENAI_API_KEY}`),
      context(),
      openaiSdk,
    );

    expect(error.message).not.toContain(env.OPENAI_API_KEY);
    expect(error.message).toContain('[redacted]');
  });

  it('maps aborts to cancelled, timeouts and connection failures to model.connection', () => {
    const controller = new AbortController();
    controller.abort();

    expect(toProviderError(new APIUserAbortError(), context(), openaiSdk).code).toBe('cancelled');
    expect(
      toProviderError(new Error('x'), context({ signal: controller.signal }), openaiSdk).code,
    ).toBe('cancelled');
    expect(toProviderError(new APIConnectionTimeoutError(), context(), openaiSdk).message).toBe(
      'OpenAI did not answer within 1000 ms (timeoutMs), after 2 retries.',
    );
    const refused = new APIConnectionError({
      cause: new TypeError('fetch failed', {
        cause: new Error('connect ECONNREFUSED 127.0.0.1:9'),
      }),
    });
    expect(toProviderError(refused, context(), openaiSdk).message).toBe(
      'Could not reach OpenAI: connect ECONNREFUSED 127.0.0.1:9, after 2 retries. Check the network and the baseURL.',
    );
  });

  it('calls any failure once the stream started a stream interruption', () => {
    const midStream = toProviderError(
      new TypeError('terminated'),
      context({ isStreaming: true }),
      openaiSdk,
    );
    // What the SDK throws for an `error` event inside a stream.
    const event = new APIError(undefined, { message: 'server exploded' }, undefined, new Headers());
    const errorEvent = toProviderError(event, context({ isStreaming: true }), openaiSdk);

    expect(midStream.code).toBe('model.stream_interrupted');
    expect(errorEvent.code).toBe('model.stream_interrupted');
    expect(errorEvent.message).toContain('"server exploded"');
  });

  it('passes TroupeErrors through unchanged', () => {
    const original = new TroupeError('usage.missing_key', 'no key');

    expect(toProviderError(original, context(), openaiSdk)).toBe(original);
  });
});

describe('retryAfterSeconds', () => {
  const now = Date.parse('2026-11-01T00:00:00Z');
  it.each<[Record<string, string>, number | undefined]>([
    [{}, undefined],
    [{ 'retry-after-ms': '250' }, 0.25],
    [{ 'retry-after': '7' }, 7],
    [{ 'retry-after-ms': '1', 'retry-after': '7' }, 0.001],
    [{ 'retry-after': 'Sun, 01 Nov 2026 00:00:30 GMT' }, 30],
    [{ 'retry-after': 'soon' }, undefined],
  ])('reads %j as %s seconds', (headers, expected) => {
    expect(retryAfterSeconds(new Headers(headers), now)).toBe(expected);
  });
});

describe('readApiKey', () => {
  it('returns the key, or names the missing variable without any value', () => {
    expect(readApiKey({ K: ' sk-1 ' }, 'K', 'openai')).toBe('sk-1');
    expect(() => readApiKey({ K: '' }, 'K', 'openai')).toThrow(
      expect.objectContaining({
        code: 'usage.missing_key',
        message: expect.stringContaining('environment variable K'),
      }),
    );
  });
});
