import { z } from 'zod';

/**
 * Every error code troupe produces. Codes are stable: check identity with
 * `isTroupeError(error, code)`, never by message text.
 */
export const ERROR_CODES = [
  'usage.invalid_option',
  'usage.invalid_role',
  'usage.unknown_tool',
  'usage.missing_key',
  'model.bad_request',
  'model.bad_response',
  'model.auth',
  'model.not_found',
  'model.rate_limited',
  'model.server',
  'model.http',
  'model.connection',
  'model.stream_interrupted',
  'model.script_exhausted',
  'tool.unknown',
  'tool.not_allowed',
  'tool.invalid_json',
  'tool.invalid_input',
  'tool.failed',
  'tool.refused',
  'tool.timeout',
  'sandbox.escape',
  'sandbox.unavailable',
  'permission.denied',
  'mcp.unavailable',
  'channel.invalid_payload',
  'channel.unknown',
  'mailbox.full',
  'runtime.protocol',
  'runtime.worker_exit',
  'runtime.closed',
  'runtime.spawn_refused',
  'runtime.unplaced',
  'run.partial',
  'io.write_failed',
  'cancelled',
  'timeout',
  'budget.exceeded',
  'internal',
] as const;

export const ErrorCodeSchema = z.enum(ERROR_CODES);
export type ErrorCode = z.infer<typeof ErrorCodeSchema>;

const MARKER = Symbol.for('troupe.error');

/** The error class for every failure troupe reports. `code` is stable; `details` is plain data. */
export class TroupeError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  readonly [MARKER] = true;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TroupeError';
    this.code = code;
    this.details = options.details;
  }
}

/** True when `error` is a TroupeError (from any copy of this module), optionally with `code`. */
export function isTroupeError(error: unknown, code?: ErrorCode): error is TroupeError {
  if (typeof error !== 'object' || error === null || !(MARKER in error)) return false;
  return code === undefined || (error as TroupeError).code === code;
}

/** An error as plain data, safe to send across a thread, write to a trace or print as JSON. */
export interface SerializedError {
  name: string;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown> | undefined;
  stack?: string | undefined;
  cause?: SerializedError | undefined;
}

export const SerializedErrorSchema: z.ZodType<SerializedError> = z.lazy(() =>
  z.object({
    name: z.string(),
    // Unknown codes from a newer peer degrade to 'internal' rather than failing the parse.
    code: ErrorCodeSchema.catch('internal'),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
    stack: z.string().optional(),
    cause: SerializedErrorSchema.optional(),
  }),
);

/** Turns anything thrown into plain data. Total: non-Error throws become code 'internal'. */
export function serializeError(error: unknown, depth = 0): SerializedError {
  if (isTroupeError(error)) {
    return withCause(
      {
        name: error.name,
        code: error.code,
        message: error.message,
        details: error.details === undefined ? undefined : plainDetails(error.details),
        stack: error.stack,
      },
      error.cause,
      depth,
    );
  }
  if (error instanceof Error) {
    const code: ErrorCode = error.name === 'AbortError' ? 'cancelled' : 'internal';
    return withCause(
      { name: error.name, code, message: error.message, stack: error.stack },
      error.cause,
      depth,
    );
  }
  return { name: 'Error', code: 'internal', message: describeThrown(error) };
}

function withCause(base: SerializedError, cause: unknown, depth: number): SerializedError {
  if (cause === undefined || depth >= 4) return base;
  return { ...base, cause: serializeError(cause, depth + 1) };
}

function plainDetails(details: Readonly<Record<string, unknown>>): Record<string, unknown> {
  try {
    return structuredClone({ ...details });
  } catch {
    return JSON.parse(JSON.stringify(details)) as Record<string, unknown>;
  }
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return `Non-error thrown: ${JSON.stringify(value)}`;
  } catch {
    return `Non-error thrown: ${String(value)}`;
  }
}

/** Rebuilds a TroupeError from plain data (the inverse of serializeError, as far as data allows). */
export function deserializeError(data: SerializedError): TroupeError {
  const error = new TroupeError(data.code, data.message, {
    ...(data.details === undefined ? {} : { details: data.details }),
    ...(data.cause === undefined ? {} : { cause: deserializeError(data.cause) }),
  });
  if (data.stack !== undefined) error.stack = data.stack;
  return error;
}

/** The message of anything thrown, for text that a person or a model reads. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return describeThrown(error);
}

/**
 * An error as data for results and events: code, message, details and
 * cause, without stacks (results go to parents and models, events to
 * traces; neither needs a stack trace).
 */
export function plainError(error: unknown): SerializedError {
  return strip(serializeError(error));
}

function strip(error: SerializedError): SerializedError {
  const out: SerializedError = { name: error.name, code: error.code, message: error.message };
  if (error.details !== undefined) out.details = error.details;
  if (error.cause !== undefined) out.cause = strip(error.cause);
  return out;
}
