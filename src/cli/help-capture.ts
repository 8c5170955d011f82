import type { Command, Help } from 'commander';
import { COMMANDS } from './command-table.js';
import { defaultOutDir } from './default-out.js';
import type { HelpEntry, HelpPart, HelpSnapshot } from './help-snapshot.js';
import { createProgram, runProgram } from './program.js';

/**
 * Takes the help snapshot (`cli/help-snapshot.ts`) from commander itself:
 * every command line of `helpCommandLines()` runs through the real program,
 * with a `Help` that leaves a mark where commander would lay out an item or
 * wrap a paragraph, so the snapshot keeps those as parts to lay out at the
 * terminal's width. `npm run build` calls it (scripts/write-help-snapshot.mjs).
 */

/** The command lines (after `troupe`) `main()` answers from the snapshot. */
export function helpCommandLines(): string[][] {
  const lines: string[][] = [[], ['--help'], ['-h'], ['help'], ['--version'], ['-v']];
  for (const name of Object.keys(COMMANDS)) {
    lines.push([name, '--help'], [name, '-h'], ['help', name]);
  }
  return lines;
}

// A mark commander's output cannot contain (NUL never appears in help text).
const MARK = '\u0000';

function recording(): { write(text: string): void; text: string; isTTY: boolean } {
  return {
    text: '',
    isTTY: false,
    write(text: string) {
      this.text += text;
    },
  };
}

function toParts(text: string, marked: readonly HelpPart[]): HelpPart[] {
  const parts: HelpPart[] = [];
  const pieces = text.split(MARK);
  // Marks come in pairs around an index: text, index, text, index, … text.
  for (const [position, piece] of pieces.entries()) {
    if (position % 2 === 0) {
      if (piece !== '') parts.push(piece);
      continue;
    }
    const part = marked[Number(piece)];
    if (part === undefined) throw new Error(`help capture: no part ${piece}`);
    parts.push(part);
  }
  return parts;
}

/** Gives `command` and its subcommands a Help that marks items and paragraphs instead of laying them out. */
function markLayout(command: Command, marked: HelpPart[]): void {
  const mark = (part: HelpPart): string => {
    marked.push(part);
    return `${MARK}${marked.length - 1}${MARK}`;
  };
  command.configureHelp({
    ...command.configureHelp(),
    formatItem: (term: string, termWidth: number, description: string) =>
      mark({ term, termWidth, description }),
    boxWrap: (paragraph: string) => mark({ paragraph }),
  } satisfies Partial<Help>);
  for (const sub of command.commands) markLayout(sub, marked);
}

/** What `troupe <args>` prints, in parts, and its exit code. */
export async function captureHelpEntry(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<HelpEntry> {
  const stdout = recording();
  const stderr = recording();
  const io = { stdout, stderr, env, cwd: process.cwd() };
  const argv = ['node', 'troupe', ...args];
  const program = await createProgram(io, argv);
  const marked: HelpPart[] = [];
  markLayout(program, marked);
  const exitCode = await runProgram(program, argv, io);
  return {
    exitCode,
    stdout: toParts(stdout.text, marked),
    stderr: toParts(stderr.text, marked),
  };
}

/** The snapshot of every command line of `helpCommandLines()`. */
export async function captureHelpSnapshot(): Promise<HelpSnapshot> {
  // A stand-in state folder: the help shows the default `--out`, which
  // `main()` replaces with the one of the machine it runs on.
  const env = { XDG_STATE_HOME: '/TROUPE_STATE_HOME' };
  const entries: Record<string, number> = {};
  const outputs: HelpEntry[] = [];
  const seen = new Map<string, number>();
  for (const args of helpCommandLines()) {
    const entry = await captureHelpEntry(args, env);
    const text = JSON.stringify(entry);
    let index = seen.get(text);
    if (index === undefined) {
      index = outputs.push(entry) - 1;
      seen.set(text, index);
    }
    entries[args.join(' ')] = index;
  }
  return { outDir: defaultOutDir(env), entries, outputs };
}
