/** Settings both SDK adapters share. */

/** Per-request timeout when the spec sets none, in milliseconds (the SDKs' own default). */
export const DEFAULT_TIMEOUT_MS = 600_000;

/** Retries of 429, 5xx and connection errors when the spec sets none (the SDKs' own default). */
export const DEFAULT_MAX_RETRIES = 2;

type SdkLogLevel = 'off' | 'error' | 'warn' | 'info' | 'debug';
const LOG_LEVELS: ReadonlySet<string> = new Set<SdkLogLevel>([
  'off',
  'error',
  'warn',
  'info',
  'debug',
]);

/**
 * The SDK's log level from an environment value (`OPENAI_LOG`, `ANTHROPIC_LOG`).
 * The SDKs log to the console by default; a library must not, unless asked to.
 */
export function sdkLogLevel(value: string | undefined): SdkLogLevel {
  return value !== undefined && LOG_LEVELS.has(value) ? (value as SdkLogLevel) : 'off';
}
