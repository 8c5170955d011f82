import { z } from 'zod';
import { isTroupeError, TroupeError } from '../../errors.js';
import type { OsSandboxOptions } from '../os-sandbox.js';
import { resolveInScope } from '../sandbox.js';
import { defineTool, type Tool } from '../tool.js';
import { requireApproval } from './approval.js';
import { DEFAULT_EXEC_TIMEOUT_MS, ExecTimeoutSchema } from './exec-params.js';
import type { ProcessResult } from './run-process.js';

/** Options for the python tool. */
export interface PythonToolOptions {
  /** The interpreter, looked up on PATH (default "python3"). */
  interpreter?: string;
  /** Timeout when the model gives none, in milliseconds (default 30,000). */
  defaultTimeoutMs?: number;
  /** stdout plus stderr kept, in bytes; the process is stopped past it (default 200,000). */
  maxOutputBytes?: number;
  /** More environment variable names passed to the child (secret-looking names never are). */
  passEnv?: readonly string[];
  /** Where bwrap is. */
  sandbox?: OsSandboxOptions;
}

/** The python tool's parameters. */
export const PythonInputSchema = z.object({
  code: z
    .string()
    .min(1)
    .max(100_000)
    .describe(
      'A Python 3 program. Print what you want to see; the working directory is the workspace.',
    ),
  timeoutMs: ExecTimeoutSchema,
});
export type PythonInput = z.infer<typeof PythonInputSchema>;

/**
 * Creates the `python` tool (tier exec): runs a snippet with python3 in a
 * subprocess, code on stdin, working directory the workspace, under the OS
 * sandbox, with a timeout, an output cap and a scrubbed environment.
 */
export function createPythonTool(options: PythonToolOptions = {}): Tool<PythonInput, string> {
  const interpreter = options.interpreter ?? 'python3';
  const defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  const maxOutputBytes = options.maxOutputBytes ?? 200_000;
  return defineTool({
    name: 'python',
    description:
      'Runs a Python 3 snippet in the workspace and returns what it printed (stdout and stderr). Only the workspace is writable; the network is off unless granted. An exception or non-zero exit is reported as an error with the output.',
    parameters: PythonInputSchema,
    tiers: ['exec'],
    execute: async (input, context) => {
      const workspace = await resolveInScope({ root: context.workspace }, '.');
      const lines = input.code.split('\n').length;
      const timeoutMs = input.timeoutMs ?? defaultTimeoutMs;
      let run: () => Promise<ProcessResult>;
      // Loaded on the first call: a thread whose actors run no program never needs it.
      const { describeProcessResult, execLimitsOf, prepareExec } = await import('./run-process.js');
      try {
        run = await prepareExec(
          {
            tool: 'python',
            program: interpreter,
            // Code on stdin: no argument length limit, and it never shows in `ps`.
            args: ['-B', '-'],
            cwd: workspace.absolute,
            workspace: workspace.root,
            timeoutMs,
            maxOutputBytes,
            input: input.code,
            setEnv: {
              PYTHONIOENCODING: 'utf-8',
              PYTHONDONTWRITEBYTECODE: '1',
              PYTHONUNBUFFERED: '1',
            },
            ...(options.passEnv === undefined ? {} : { passEnv: options.passEnv }),
            ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
          },
          context,
        );
      } catch (error) {
        if (isTroupeError(error, 'tool.failed') && error.details?.['notFound'] === true) {
          throw new TroupeError(
            'tool.failed',
            `${interpreter} is not installed on this machine, so the python tool cannot run. Do the task without Python (the user can install it, e.g. \`apt-get install python3\`).`,
            { cause: error },
          );
        }
        throw error;
      }
      await requireApproval(
        context,
        'python',
        `run a ${lines}-line Python snippet in the workspace`,
        input.code,
      );
      context.progress?.(`python (${lines} lines)`);
      return describeProcessResult('python', await run(), timeoutMs, execLimitsOf(context));
    },
  });
}

/** The `python` tool with default options. */
export const pythonTool: Tool<PythonInput, string> = createPythonTool();
