import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { TroupeError } from '../../errors.js';
import type { OsSandboxOptions } from '../os-sandbox.js';
import { resolveInScope, showPath } from '../sandbox.js';
import { defineTool, type Tool, type ToolContext } from '../tool.js';
import { requireApproval, showCommand } from './approval.js';
import { DEFAULT_EXEC_TIMEOUT_MS, ExecTimeoutSchema } from './exec-params.js';
import {
  checkShellCommand,
  DEFAULT_SHELL_POLICY,
  type ShellPolicy,
  safeGitArgs,
} from './shell-policy.js';

/** Options for the shell tool. */
export interface ShellToolOptions {
  /** Allowed programs and git subcommands (default `DEFAULT_SHELL_POLICY`). */
  policy?: Partial<ShellPolicy>;
  /** Timeout when the model gives none, in milliseconds (default 30,000). */
  defaultTimeoutMs?: number;
  /** stdout plus stderr kept, in bytes; the process is stopped past it (default 200,000). */
  maxOutputBytes?: number;
  /** More environment variable names passed to the child (secret-looking names never are). */
  passEnv?: readonly string[];
  /** Where bwrap is. */
  sandbox?: OsSandboxOptions;
}

/** The shell tool's parameters. */
export const ShellInputSchema = z.object({
  program: z
    .string()
    .min(1)
    .max(200)
    .describe(
      'One program name from the allowlist, e.g. "ls", "grep" or "git". No paths, no shell syntax.',
    ),
  args: z
    .array(z.string().max(8_000))
    .max(200)
    .default([])
    .describe(
      'Arguments, one per item, passed as they are (no shell: no pipes, globs, ;, && or $()).',
    ),
  cwd: z
    .string()
    .max(4_096)
    .optional()
    .describe('Working directory relative to the workspace (default: the workspace root).'),
  timeoutMs: ExecTimeoutSchema,
});
export type ShellInput = z.infer<typeof ShellInputSchema>;

/**
 * Creates the `shell` tool (tier exec): runs one allowlisted program with
 * parsed arguments through `spawn` without a shell, inside the workspace,
 * under the OS sandbox, with a timeout, an output cap and a scrubbed
 * environment. Refuses dangerous patterns with the reason. A non-zero exit
 * is a failed result that carries the output.
 */
export function createShellTool(options: ShellToolOptions = {}): Tool<ShellInput, string> {
  const policy: ShellPolicy = { ...DEFAULT_SHELL_POLICY, ...options.policy };
  const defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  const maxOutputBytes = options.maxOutputBytes ?? 200_000;
  return defineTool({
    name: 'shell',
    description: `Runs one program with arguments in the workspace, without a shell (no pipes, redirects, globs or ;). Allowed programs: ${policy.programs.join(', ')}. git runs only read subcommands. Returns stdout and stderr; a non-zero exit is reported as an error with the output.`,
    parameters: ShellInputSchema,
    tiers: ['exec'],
    execute: async (input, context) => {
      checkShellCommand(input.program, input.args, policy);
      const cwd = await resolveWorkingDirectory(context, input.cwd);
      const commandLine = showCommand(input.program, input.args);
      const timeoutMs = input.timeoutMs ?? defaultTimeoutMs;
      // Loaded on the first call: a thread whose actors run no program never needs it.
      const { describeProcessResult, execLimitsOf, prepareExec } = await import('./run-process.js');
      const run = await prepareExec(
        {
          tool: 'shell',
          program: input.program,
          args: input.program === 'git' ? safeGitArgs(input.args) : input.args,
          cwd: cwd.absolute,
          workspace: cwd.root,
          timeoutMs,
          maxOutputBytes,
          ...(options.passEnv === undefined ? {} : { passEnv: options.passEnv }),
          ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
        },
        context,
      );
      await requireApproval(
        context,
        'shell',
        `run \`${commandLine}\` in ${cwd.relative}`,
        `${showCommand(input.program, input.args, Number.POSITIVE_INFINITY)}\n(working directory: ${cwd.relative})`,
      );
      context.progress?.(`$ ${commandLine}`);
      const result = await run();
      return describeProcessResult(commandLine, result, timeoutMs, execLimitsOf(context));
    },
  });
}

async function resolveWorkingDirectory(
  context: ToolContext,
  cwd: string | undefined,
): Promise<{ absolute: string; relative: string; root: string }> {
  const resolved = await resolveInScope({ root: context.workspace }, cwd ?? '.');
  const stats = resolved.exists ? await stat(resolved.absolute) : undefined;
  if (stats?.isDirectory() !== true) {
    throw new TroupeError(
      'tool.failed',
      `Working directory ${showPath(cwd ?? '.')} is not a folder in the workspace. Use list_dir to see what exists.`,
    );
  }
  return resolved;
}

/** The `shell` tool with default options. */
export const shellTool: Tool<ShellInput, string> = createShellTool();
