import { Command, CommanderError, Help } from 'commander';
import { troupePackage } from '../util/package-files.js';
import { COMMANDS, requestedCommand } from './command-table.js';
import type { CliIo } from './context.js';
import { EXIT } from './exit-codes.js';
import { helpAfter } from './help-text.js';

export { COMMANDS, requestedCommand } from './command-table.js';

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
    .version(troupePackage().version, '-v, --version')
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
  return runProgram(await createProgram(io, argv), argv, io);
}

/** Parses `argv` with `program` (made by `createProgram`) and returns the exit code. */
export async function runProgram(
  program: Command,
  argv: readonly string[],
  io: CliIo,
): Promise<number> {
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
