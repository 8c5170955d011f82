import { describe, expect, it } from 'vitest';
import {
  deserializeError,
  isTroupeError,
  SerializedErrorSchema,
  serializeError,
  TroupeError,
} from '../src/errors.js';

describe('serializeError', () => {
  it('round-trips a TroupeError with code, details and cause through structured clone', () => {
    const error = new TroupeError('model.rate_limited', 'Slow down', {
      details: { status: 429, retryAfter: 2 },
      cause: new Error('socket said no'),
    });
    const copy = structuredClone(serializeError(error));
    const back = deserializeError(SerializedErrorSchema.parse(copy));

    expect(isTroupeError(back, 'model.rate_limited')).toBe(true);
    expect(back.message).toBe('Slow down');
    expect(back.details).toEqual({ status: 429, retryAfter: 2 });
    expect((back.cause as Error).message).toBe('socket said no');
  });

  it('is total: strings, objects and undefined become internal errors', () => {
    expect(serializeError('plain')).toMatchObject({ code: 'internal', message: 'plain' });
    expect(serializeError({ a: 1 })).toMatchObject({
      code: 'internal',
      message: 'Non-error thrown: {"a":1}',
    });
    expect(serializeError(undefined)).toMatchObject({ code: 'internal' });
  });

  it('maps AbortError to cancelled', () => {
    const abort = new DOMException('aborted', 'AbortError');
    expect(serializeError(abort).code).toBe('cancelled');
  });

  it('degrades an unknown code from a newer peer to internal', () => {
    const parsed = SerializedErrorSchema.parse({ name: 'E', code: 'future.code', message: 'm' });
    expect(parsed.code).toBe('internal');
  });
});

describe('isTroupeError', () => {
  it('checks the code when given one', () => {
    const error = new TroupeError('timeout', 't');
    expect(isTroupeError(error)).toBe(true);
    expect(isTroupeError(error, 'timeout')).toBe(true);
    expect(isTroupeError(error, 'cancelled')).toBe(false);
    expect(isTroupeError(new Error('x'))).toBe(false);
  });
});
