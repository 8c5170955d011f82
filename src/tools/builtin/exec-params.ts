import { z } from 'zod';

/**
 * The parameters the exec tools (shell, python) share, apart from
 * run-process.ts: the tools' definitions need them when a thread starts,
 * the process machinery (sandbox, cgroups, egress proxy) only on the first
 * call that runs a program.
 */

/** How long an exec tool lets its program run when the call names no time, in milliseconds. */
export const DEFAULT_EXEC_TIMEOUT_MS = 30_000;

/** The `timeoutMs` parameter the exec tools (shell, python) share. */
export const ExecTimeoutSchema = z
  .number()
  .int()
  .min(100)
  .max(600_000)
  .optional()
  .describe(`Kill the program after this many milliseconds (default ${DEFAULT_EXEC_TIMEOUT_MS}).`);
