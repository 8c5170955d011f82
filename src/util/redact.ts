/**
 * Secret redaction for anything that leaves the process as text: traces,
 * `--json` output, logged request options.
 */

const SECRET_NAME =
  /(?:^|[_-])(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|AUTHORIZATION)(?:[_-]|$)|API_?KEY|SECRET/i;

// Well-known key shapes, caught even when the value never was in our environment.
const SECRET_SHAPES: readonly RegExp[] = [
  /sk-ant-[A-Za-z0-9_-]{8,}/g,
  /sk-(?:proj-)?[A-Za-z0-9_-]{16,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/=-]{16,}/g,
];

/** Minimum length of an environment value to be treated as a secret (short values cause false hits). */
const MIN_SECRET_LENGTH = 8;

export const REDACTED = '[redacted]';

/** True for environment variable names that usually hold secrets (API keys, tokens, passwords). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** The values of secret-looking variables in `env`, longest first. */
export function secretValues(env: NodeJS.ProcessEnv = process.env): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value.length >= MIN_SECRET_LENGTH && isSecretName(name)) {
      values.add(value);
    }
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/** A function that replaces every known secret in a string with `[redacted]`. */
export function createRedactor(env: NodeJS.ProcessEnv = process.env): (text: string) => string {
  const values = secretValues(env);
  return (text: string): string => {
    let result = text;
    for (const value of values) {
      if (result.includes(value)) result = result.split(value).join(REDACTED);
    }
    for (const shape of SECRET_SHAPES) result = result.replace(shape, REDACTED);
    return result;
  };
}

/** Deep-copies JSON-like data with every string redacted and secret-named keys blanked. */
export function redactValue(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((item) => redactValue(item, redact));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] =
        isSecretName(key) && typeof item === 'string' ? REDACTED : redactValue(item, redact);
    }
    return out;
  }
  return value;
}

// Literal text every SECRET_SHAPES match contains: text without them cannot match one.
const SHAPE_MARKERS: readonly string[] = ['sk-', 'Bearer'];

// SECRET_NAME as it can show in JSON text: a key's start and end are quotes there.
const SECRET_NAME_IN_JSON =
  /["_-](?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|AUTHORIZATION)["_-]|API_?KEY|SECRET/i;

/**
 * JSON text of `value` as `JSON.stringify(redactValue(value, createRedactor(env)))`
 * would write it, for a trace or `--json` line per event, without the deep
 * copy and the pattern replacements for text that cannot hold a secret
 * (nearly every event). JSON escapes strings character by character and
 * leaves letters, digits, `_` and `-` alone, so a secret value (escaped), a
 * shape's marker or a secret-named key in `value` shows in the serialized
 * text; text that shows none of them is what redaction would have written.
 *
 * `made`, when the caller has it, is `JSON.stringify(value)` already made
 * (an event's text from the thread that produced it): it is checked instead
 * of serializing `value` again.
 */
export function createJsonRedactor(
  env: NodeJS.ProcessEnv = process.env,
): (value: unknown, made?: string) => string {
  const escaped = secretValues(env).map((secret) => JSON.stringify(secret).slice(1, -1));
  const redact = createRedactor(env);
  return (value, made) => {
    const text = made ?? JSON.stringify(value);
    if (text === undefined) return text as unknown as string;
    let suspect = SECRET_NAME_IN_JSON.test(text);
    for (let index = 0; !suspect && index < SHAPE_MARKERS.length; index += 1)
      suspect = text.includes(SHAPE_MARKERS[index] as string);
    for (let index = 0; !suspect && index < escaped.length; index += 1)
      suspect = text.includes(escaped[index] as string);
    return suspect ? JSON.stringify(redactValue(value, redact)) : text;
  };
}

/**
 * Deep-copies JSON-like data with every string value redacted, keys kept as
 * they are (for records whose field names are not secrets, such as a
 * stored result's `key`).
 */
export function redactStrings(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((item) => redactStrings(item, redact));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = redactStrings(item, redact);
    return out;
  }
  return value;
}
