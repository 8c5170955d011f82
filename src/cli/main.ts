import { Command, CommanderError } from 'commander';
import { errorMessage, isTroupeError } from '../errors.js';
import { createTerminalOutput } from '../render/terminal.js';
import { registerChatCommand } from './commands/chat.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerMcpCommand } from './commands/mcp.js';
import { registerNodesCommand } from './commands/nodes.js';
import { registerRunCommand } from './commands/run.js';
import { registerRunsCommand } from './commands/runs.js';
import { registerTraceCommand } from './commands/trace.js';
import { registerWorkerCommand } from './commands/worker.js';
import { type CliIo, EXIT } from './context.js';
import { packageRoot } from './package-root.js';

export type { CliIo } from './context.js';

/**
 * The troupe command line as a commander program writing to `io`. Commander
 * never exits the process: errors come back through `exitOverride()` and
 * `runCli` turns them into exit codes (0 ok, 1 run failed, 2 usage, 130 interrupted).
 *
 * @example
 * const code = await runCli(['node', 'troupe', 'demo', '--quiet'], io);
 */
export function createProgram(io: CliIo): Command {
  const program = new Command('troupe');
  program
    .description(
      'Multi-agent work: a coordinator splits a task among sub-agents running in parallel; watch every agent live and keep the trace.',
    )
    .version(packageRoot().version, '-v, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
    .showHelpAfterError('(troupe --help shows the commands and options)');
  registerRunCommand(program, io);
  registerChatCommand(program, io);
  registerTraceCommand(program, io);
  registerRunsCommand(program, io);
  registerDemoCommand(program, io);
  registerWorkerCommand(program, io);
  registerNodesCommand(program, io);
  registerMcpCommand(program, io);
  return program;
}

/** Runs the CLI on `argv` (node, script, args…) and returns the exit code. Never exits the process. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = createProgram(io);
  try {
    await program.parseAsync([...argv]);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'troupe.exit') return error.exitCode;
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') {
        return EXIT.ok;
      }
      // Commander already printed the message (unknown option, missing argument, …).
      return EXIT.usage;
    }
    if (isTroupeError(error) && error.code.startsWith('usage.')) {
      io.stderr.write(`error: ${error.message}\n`);
      return EXIT.usage;
    }
    io.stderr.write(`error: ${errorMessage(error)}\n`);
    return EXIT.failed;
  }
}

/**
 * The `troupe` binary: runs the CLI on the real terminal. The first Ctrl-C
 * cancels the run cleanly (trace flushed, exit 130); a second one exits at once.
 */
export async function main(argv: readonly string[] = process.argv): Promise<number> {
  const interrupt = new AbortController();
  let interrupts = 0;
  const onSignal = (): void => {
    interrupts += 1;
    if (interrupts > 1) {
      // The live view hides the cursor; give it back before leaving mid-frame.
      if (process.stdout.isTTY) process.stdout.write('\u001b[?25h');
      process.stderr.write('\nInterrupted twice: exiting now.\n');
      process.exit(EXIT.interrupted);
    }
    interrupt.abort(new Error('interrupted'));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // `troupe … | head` closes the pipe early: stop writing quietly instead of
  // crashing. The listener stays for the life of the process: the error of a
  // write arrives a tick later, possibly after the command returned.
  const onPipeError = (error: NodeJS.ErrnoException): void => {
    if (error.code === 'EPIPE') interrupt.abort(new Error('output closed'));
  };
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.listenerCount('error') === 0) stream.on('error', onPipeError);
  }
  const io: CliIo = {
    stdout: createTerminalOutput(process.stdout),
    stderr: createTerminalOutput(process.stderr),
    env: process.env,
    // Lazy: touching process.stdin opens it, which only chat and --approve need.
    get stdin() {
      return process.stdin;
    },
    cwd: process.cwd(),
    signal: interrupt.signal,
  };
  try {
    return await runCli(argv, io);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
