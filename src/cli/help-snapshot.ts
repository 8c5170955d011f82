import { readFileSync } from 'node:fs';
import { troupeFileUrl } from '../util/package-files.js';
import { defaultOutDir } from './default-out.js';

/**
 * The help texts of `troupe --help`, `troupe run --help`, `troupe --version`
 * and the like, written at build time from commander's own output
 * (`cli/help-capture.ts`, run by `npm run build`) and printed by `main()`
 * without loading commander or the command's modules: `troupe --help` costs
 * little more than starting node, `troupe run --help` no longer loads the
 * runtime. A test renders every text at many widths and compares it with
 * what commander prints now, so the two cannot drift apart.
 *
 * Commander wraps help to the terminal's width, so a text is kept in parts:
 * literal text, items (an option or command: term, padded term width,
 * description) and wrapped paragraphs, laid out at the width of the
 * terminal it is printed on, the way commander's `Help` lays them out.
 */

/** One piece of a help text. */
export type HelpPart =
  | string
  | { term: string; termWidth: number; description: string }
  | { paragraph: string };

/** What one command line prints and its exit code. */
export interface HelpEntry {
  exitCode: number;
  stdout: HelpPart[];
  stderr: HelpPart[];
}

/** The file `npm run build` writes beside this module. */
export interface HelpSnapshot {
  /**
   * The default `--out` folder as it appeared when the texts were taken
   * (the help shows it); replaced by this machine's on printing.
   */
  outDir: string;
  /** The index in `outputs` by the command line after `troupe`, words joined by one space. */
  entries: Record<string, number>;
  /** What the command lines print (`run --help`, `run -h` and `help run` share one). */
  outputs: HelpEntry[];
}

/**
 * Where `npm run build` writes the snapshot: in dist/src/cli, which the
 * built module and the binary's bundle (dist/bundle) read. From source
 * (vitest) it is beside this module, where there is none: the help comes
 * from commander.
 */
export const HELP_SNAPSHOT_URL = import.meta.url.endsWith('.ts')
  ? new URL('./help-snapshot.json', import.meta.url)
  : troupeFileUrl('dist/src/cli/help-snapshot.json');

// Commander's Help: items indent by 2, two spaces between term and
// description, and no wrapping into less than 40 columns (`minWidthToWrap`).
const ITEM_INDENT = 2;
const SPACER = 2;
const MIN_WIDTH_TO_WRAP = 40;

/**
 * Wraps `text` at whitespace to `width` columns, keeping its own line
 * breaks; a word longer than the width stays whole on its line.
 */
export function wrapParagraph(text: string, width: number): string {
  if (width < MIN_WIDTH_TO_WRAP) return text;
  const lines: string[] = [];
  for (const line of text.split(/\r\n|\n/)) {
    const words = line.match(/\s*\S+/g);
    if (words === null) {
      lines.push('');
      continue;
    }
    let current = words[0] ?? '';
    for (const word of words.slice(1)) {
      if (current.length + word.length <= width) {
        current += word;
      } else {
        lines.push(current);
        current = word.trimStart();
      }
    }
    lines.push(current);
  }
  return lines.join('\n');
}

function formatItem(term: string, termWidth: number, description: string, width: number): string {
  const indent = ' '.repeat(ITEM_INDENT);
  if (description === '') return indent + term;
  const room = width - termWidth - SPACER - ITEM_INDENT;
  // Text with its own indented lines is printed as it is.
  const laidOut =
    room < MIN_WIDTH_TO_WRAP || /\n[^\S\r\n]/.test(description)
      ? description
      : wrapParagraph(description, room).replace(/\n/g, `\n${' '.repeat(termWidth + SPACER)}`);
  return `${indent}${term.padEnd(termWidth)}${' '.repeat(SPACER)}${laidOut.replace(/\n/g, `\n${indent}`)}`;
}

/** The text of `parts` at `width` columns (commander's default, 80, when unknown). */
export function renderHelpParts(parts: readonly HelpPart[], width: number | undefined): string {
  const columns = width ?? 80;
  return parts
    .map((part) => {
      if (typeof part === 'string') return part;
      if ('paragraph' in part) return wrapParagraph(part.paragraph, columns);
      return formatItem(part.term, part.termWidth, part.description, columns);
    })
    .join('');
}

function replaceInParts(parts: readonly HelpPart[], from: string, to: string): HelpPart[] {
  const swap = (text: string): string => text.split(from).join(to);
  return parts.map((part) => {
    if (typeof part === 'string') return swap(part);
    if ('paragraph' in part) return { paragraph: swap(part.paragraph) };
    return { ...part, description: swap(part.description) };
  });
}

/**
 * The entry for `args` (the command line after `troupe`) with the default
 * `--out` folder of `env` in place of the one the snapshot was taken with;
 * undefined when the snapshot has none for these words.
 */
export function helpEntryFor(
  snapshot: HelpSnapshot,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): HelpEntry | undefined {
  const key = args.join(' ');
  if (!Object.hasOwn(snapshot.entries, key)) return undefined;
  const entry = snapshot.outputs[snapshot.entries[key] ?? -1];
  if (entry === undefined) return undefined;
  // The help shows the default as a JSON string: replace it as JSON shows it.
  const quoted = (path: string): string => JSON.stringify(path).slice(1, -1);
  const from = quoted(snapshot.outDir);
  const to = quoted(defaultOutDir(env));
  if (from === to) return entry;
  return {
    exitCode: entry.exitCode,
    stdout: replaceInParts(entry.stdout, from, to),
    stderr: replaceInParts(entry.stderr, from, to),
  };
}

/** Command lines whose every word could be in the snapshot (help, version and no words). */
export function mayBeHelp(args: readonly string[]): boolean {
  if (args.length > 2) return false;
  return (
    args.length === 0 ||
    args.some((word) => word === '--help' || word === '-h' || word === 'help') ||
    (args.length === 1 && (args[0] === '--version' || args[0] === '-v'))
  );
}

/**
 * The built snapshot, or undefined when there is none (a build by `tsc`
 * alone) or it cannot be read: the caller then asks commander.
 */
export function readHelpSnapshot(url: URL = HELP_SNAPSHOT_URL): HelpSnapshot | undefined {
  try {
    const data = JSON.parse(readFileSync(url, 'utf8')) as Partial<HelpSnapshot>;
    const valid =
      typeof data.outDir === 'string' &&
      typeof data.entries === 'object' &&
      Array.isArray(data.outputs);
    if (!valid) return undefined;
    return data as HelpSnapshot;
  } catch {
    return undefined;
  }
}
