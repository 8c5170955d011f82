import { Command, CommanderError, Help } from 'commander';
import { createTerminalOutput } from '../render/terminal-output.js';
import type { CliIo } from './context.js';
import { EXIT } from './exit-codes.js';
import { helpAfter } from './help-text.js';
import { packageRoot } from './package-root.js';
import { prestartAgentThreads } from './prestart.js';

export type { CliIo } from './context.js';

type Register = (program: Command, io: CliIo) => void;

/**
 * The subcommands, loaded on demand: a command's module (and what it imports:
 * the runtime, zod schemas, renderers, SDKs) is only loaded when that command
 * runs or shows its help, so `troupe --help` loads none of them. `term` and
 * `description` are what the top-level help lists (a test compares them with
 * the commands' own).
 */
export const COMMANDS: Readonly<
  Record<string, { term: string; description: string; load: () => Promise<Register> }>
> = {
  run: {
    term: 'run [options] [task]',
    description: 'run a task: a coordinator splits it among sub-agents that work in parallel',
    load: async () => (await import('./commands/run.js')).registerRunCommand,
  },
  chat: {
    term: 'chat [options]',
    description:
      'talk to one agent with the built-in tools the granted tiers allow; exit, quit, end of input or Ctrl-C leave',
    load: async () => (await import('./commands/chat.js')).registerChatCommand,
  },
  trace: {
    term: 'trace [options] <file|runId>',
    description:
      'replay a saved trace (a trace.jsonl file, a run folder or a run id) through the same renderers as a run',
    load: async () => (await import('./commands/trace.js')).registerTraceCommand,
  },
  runs: {
    term: 'runs [options]',
    description:
      'list the runs in the output folder, newest first (replay one with troupe trace <id>)',
    load: async () => (await import('./commands/runs.js')).registerRunsCommand,
  },
  demo: {
    term: 'demo [options]',
    description:
      'research → analysis → report over the bundled example corpus on the offline heuristic model (no key, no network)',
    load: async () => (await import('./commands/demo.js')).registerDemoCommand,
  },
  worker: {
    term: 'worker [options]',
    description: 'run a worker node: host sub-agents of runs started with troupe run --nats',
    load: async () => (await import('./commands/worker.js')).registerWorkerCommand,
  },
  nodes: {
    term: 'nodes [options]',
    description: 'list the live worker nodes on a NATS server',
    load: async () => (await import('./commands/nodes.js')).registerNodesCommand,
  },
  mcp: {
    term: 'mcp [options]',
    description:
      'serve troupe to MCP clients (Claude Code, Cursor, …) over stdio, or Streamable HTTP with --port: run_job, run_status, cancel_run, list_roles',
    load: async () => (await import('./commands/mcp.js')).registerMcpCommand,
  },
};

/** The subcommand `argv` (node, script, args…) names, if any: `troupe run …`, `troupe help run`. */
export function requestedCommand(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((word) => !word.startsWith('-'));
  const name = words[0] === 'help' ? words[1] : words[0];
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? name : undefined;
}

/**
 * The troupe command line as a commander program writing to `io`. Commander
 * never exits the process: errors come back through `exitOverride()` and
 * `runCli` turns them into exit codes (0 ok, 1 run failed, 2 usage, 130 interrupted).
 *
 * With `argv`, only the command it names is loaded; when it names none (the
 * top-level help, `--version`, an unknown command) every command is listed
 * from `COMMANDS` without loading any. Without `argv`, every command is loaded.
 */
export async function createProgram(io: CliIo, argv?: readonly string[]): Promise<Command> {
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
  const names = Object.keys(COMMANDS);
  const named = argv === undefined ? undefined : requestedCommand(argv);
  if (argv !== undefined && named === undefined) {
    program.configureHelp({
      subcommandTerm: (command) =>
        COMMANDS[command.name()]?.term ?? Help.prototype.subcommandTerm.call(undefined, command),
    });
    for (const name of names) program.command(name).description(COMMANDS[name]?.description ?? '');
    program.addHelpText('after', helpAfter(''));
    return program;
  }
  const load = named === undefined ? names : [named];
  const registers = await Promise.all(load.map((name) => COMMANDS[name]?.load()));
  for (const register of registers) register?.(program, io);
  // Examples and exit codes under each command's options.
  for (const command of program.commands) command.addHelpText('after', helpAfter(command.name()));
  program.addHelpText('after', helpAfter(''));
  return program;
}

/** Runs the CLI on `argv` (node, script, args…) and returns the exit code. Never exits the process. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const program = await createProgram(io, argv);
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
    // Loaded here: errors.ts builds zod schemas, which `troupe --help` never needs.
    const { errorMessage, isTroupeError } = await import('../errors.js');
    if (isTroupeError(error) && error.code.startsWith('usage.')) {
      io.stderr.write(`error: ${error.message}\n`);
      return EXIT.usage;
    }
    if (isTroupeError(error, 'io.write_failed')) {
      io.stderr.write(`error: ${error.message}\n`);
      return EXIT.storage;
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
    stdoutStream: process.stdout,
    env: process.env,
    // Lazy: touching process.stdin opens it, which only chat and --approve need.
    get stdin() {
      return process.stdin;
    },
    cwd: process.cwd(),
    signal: interrupt.signal,
    interrupt: onSignal,
  };
  // A run's agent threads start now, while the command's modules load.
  prestartAgentThreads(requestedCommand(argv), argv.slice(2));
  try {
    return await runCli(argv, io);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
