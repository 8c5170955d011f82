import { REDACTED } from '../../util/redact.js';
import type { ModelSpec } from '../spec.js';

/**
 * A copy of a model spec that is safe to log or show: every extra header
 * value is replaced by `[redacted]` (a header may carry a token). Specs
 * never hold keys themselves, only the name of the variable that does.
 *
 * @example
 * redactSpec({ provider: 'openai', model: 'm', headers: { 'X-Token': 't' } });
 * // → { provider: 'openai', model: 'm', headers: { 'X-Token': '[redacted]' } }
 */
export function redactSpec<TSpec extends ModelSpec>(spec: TSpec): TSpec {
  if (!('headers' in spec) || spec.headers === undefined) return spec;
  const headers = Object.fromEntries(Object.keys(spec.headers).map((name) => [name, REDACTED]));
  return { ...spec, headers };
}
