import { createTerminalOutput } from '../render/terminal-output.js';
import { requestedCommand } from './command-table.js';
import type { CliIo } from './context.js';
import { EXIT } from './exit-codes.js';
import { helpEntryFor, mayBeHelp, readHelpSnapshot, renderHelpParts } from './help-snapshot.js';
import { prestartAgentThreads } from './prestart.js';

export type { CliIo } from './context.js';

/**
 * `troupe --help`, `troupe run --help`, `--version` and the like from the
 * help snapshot `npm run build` wrote (`cli/help-snapshot.ts`), laid out at
 * the width commander would use; undefined when the command line is not one
 * of them or there is no snapshot.
 */
function printSnapshotHelp(args: readonly string[], io: CliIo): number | undefined {
  if (!mayBeHelp(args)) return undefined;
  const snapshot = readHelpSnapshot();
  const entry = snapshot === undefined ? undefined : helpEntryFor(snapshot, args, io.env);
  if (entry === undefined) return undefined;
  // Commander's width: the terminal's columns, else 80.
  const width = (stream: NodeJS.WriteStream): number | undefined =>
    stream.isTTY ? stream.columns : undefined;
  const out = renderHelpParts(entry.stdout, width(process.stdout));
  const err = renderHelpParts(entry.stderr, width(process.stderr));
  if (out !== '') io.stdout.write(out);
  if (err !== '') io.stderr.write(err);
  return entry.exitCode;
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
  const fast = printSnapshotHelp(argv.slice(2), io);
  if (fast !== undefined) return fast;
  // A run's agent threads start now, while the command's modules load.
  prestartAgentThreads(requestedCommand(argv), argv.slice(2));
  try {
    // Loaded here, not at the top: the help above needs neither commander nor the commands.
    const { runCli } = await import('./program.js');
    return await runCli(argv, io);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
