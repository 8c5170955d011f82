import { isSecretName } from '../util/redact.js';

/**
 * The environment a child process of an exec tool gets: an allowlist of
 * harmless variables, minus anything whose name looks like a secret. An
 * allowlist, not a denylist, because secrets hide in names no pattern
 * catches (`DATABASE_URL=postgres://user:password@…`).
 */

/** Variables passed to child processes by default (exact names; `LC_*` by prefix). */
export const DEFAULT_PASS_ENV: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TERM',
  'TZ',
  'NO_COLOR',
  'PYENV_ROOT',
  'PYENV_VERSION',
  'VIRTUAL_ENV',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
];

/** Options for scrubEnv. */
export interface ScrubEnvOptions {
  /** More variable names to pass through (secret-looking names are still dropped). */
  passEnv?: readonly string[];
  /** Variables to set after scrubbing (secret-looking names are still dropped). */
  set?: Readonly<Record<string, string>>;
}

/**
 * Returns the environment for a child process: only allowlisted variables
 * from `env`, never one whose name looks like a secret (see `isSecretName`),
 * plus `options.set`.
 *
 * @example
 * scrubEnv({ PATH: '/usr/bin', OPENAI_API_KEY: 'sk-…', AWS_PROFILE: 'x' }); // → { PATH: '/usr/bin' }
 */
export function scrubEnv(
  env: NodeJS.ProcessEnv,
  options: ScrubEnvOptions = {},
): Record<string, string> {
  const allowed = new Set([...DEFAULT_PASS_ENV, ...(options.passEnv ?? [])]);
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || isSecretName(name)) continue;
    if (allowed.has(name) || name.startsWith('LC_')) result[name] = value;
  }
  for (const [name, value] of Object.entries(options.set ?? {})) {
    if (!isSecretName(name)) result[name] = value;
  }
  return result;
}
