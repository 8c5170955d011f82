/**
 * The CLI's only contact with a terminal: a small output interface (so
 * renderers are tested with a fake), ANSI helpers, display-width cutting, and
 * a frame writer that redraws a block of lines in place.
 */

import { stripVTControlCharacters } from 'node:util';
import stringWidth from 'string-width';
import type { TerminalOutput } from './terminal-output.js';

export { createTerminalOutput, type TerminalOutput } from './terminal-output.js';

/**
 * True when output should be coloured: never when NO_COLOR is set (https://no-color.org);
 * else when FORCE_COLOR is set to anything but 0 or false (a pipe into a pager that
 * shows colour, a CI log), whatever the output is; else on a TTY whose TERM is not dumb.
 */
export function supportsColor(output: TerminalOutput, env: NodeJS.ProcessEnv): boolean {
  const noColor = env['NO_COLOR'];
  if (noColor !== undefined && noColor !== '') return false;
  const force = env['FORCE_COLOR'];
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  return output.isTTY && env['TERM'] !== 'dumb';
}

// Colours an agent's prefix may take: distinct on dark and light backgrounds;
// red is kept for failures.
const AGENT_COLOURS = [36, 33, 32, 35, 34, 96, 93, 92, 95, 94] as const;

/**
 * The agent id in a colour of its own, the same in every run and replay (a
 * hash of the id picks it, as `docker compose up` gives each service one);
 * the id unchanged when `enabled` is false.
 */
export function agentColour(agentId: string, text: string, enabled: boolean): string {
  if (!enabled) return text;
  // FNV-1a: cheap, and spreads ids that differ in one digit.
  let hash = 0x811c9dc5;
  for (let index = 0; index < agentId.length; index += 1) {
    hash ^= agentId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  const colour = AGENT_COLOURS[(hash >>> 0) % AGENT_COLOURS.length] as number;
  return `\u001b[${colour}m${text}\u001b[39m`;
}

/** ANSI styles; each is the identity when colour is off. */
export interface Palette {
  dim(text: string): string;
  bold(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  magenta(text: string): string;
  /** Reverse video: the selected row of a list. */
  inverse(text: string): string;
}

const style =
  (open: number, close: number) =>
  (text: string): string =>
    `\u001b[${open}m${text}\u001b[${close}m`;

/** A palette that colours when `enabled`, and leaves text alone otherwise. */
export function createPalette(enabled: boolean): Palette {
  if (!enabled) {
    const same = (text: string): string => text;
    return {
      dim: same,
      bold: same,
      red: same,
      green: same,
      yellow: same,
      cyan: same,
      magenta: same,
      inverse: same,
    };
  }
  return {
    dim: style(2, 22),
    bold: style(1, 22),
    red: style(31, 39),
    green: style(32, 39),
    yellow: style(33, 39),
    cyan: style(36, 39),
    magenta: style(35, 39),
    inverse: style(7, 27),
  };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching ANSI escapes is the point.
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** Removes ANSI escape sequences. */
export function stripAnsi(text: string): string {
  return stripVTControlCharacters(text);
}

/**
 * Code points that are a whole grapheme on their own, whatever is next to
 * them, unless the next one is outside this list (a combining mark, a
 * variation selector, a joiner): Latin-1 but the soft hyphen, Greek,
 * punctuation, arrows, maths, box drawing, blocks, shapes, dingbats, braille.
 * A text of these and printable ASCII is measured one character at a time.
 */
function standsAlone(code: number): boolean {
  return (
    (code >= 0xa0 && code <= 0xff && code !== 0xad) ||
    (code >= 0x370 && code <= 0x3ff) ||
    (code >= 0x2010 && code <= 0x2027) ||
    (code >= 0x2030 && code <= 0x205e) ||
    (code >= 0x2190 && code <= 0x22ff) ||
    (code >= 0x2500 && code <= 0x25ff) ||
    (code >= 0x2700 && code <= 0x27bf) ||
    (code >= 0x2800 && code <= 0x28ff)
  );
}

// string-width's answer for each such code point once asked (1, or 2 for ✔ and other emoji).
const charWidths = new Map<number, number>();

/** Columns a string takes on screen (ANSI ignored; East Asian wide characters and emoji count 2). */
export function displayWidth(text: string): number {
  // string-width segments the text into graphemes, ~10 µs a cell: a live view of many agents
  // measures thousands of cells a frame, nearly all plain text, which is summed here instead.
  const plain =
    text.includes('\u001b') || text.includes('\u009b') ? stripVTControlCharacters(text) : text;
  let width = 0;
  for (let index = 0; index < plain.length; index += 1) {
    const code = plain.charCodeAt(index);
    if (code >= 0x20 && code < 0x7f) {
      width += 1;
      continue;
    }
    if (!standsAlone(code)) return stringWidth(plain);
    let columns = charWidths.get(code);
    if (columns === undefined) {
      columns = stringWidth(String.fromCharCode(code));
      charWidths.set(code, columns);
    }
    width += columns;
  }
  return width;
}

/**
 * Cuts `text` to at most `width` columns, with an ellipsis when cut. ANSI
 * sequences are kept (they take no room) and styles are reset after a cut.
 */
export function cutToWidth(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  if (width <= 0) return '';
  let out = '';
  let used = 0;
  let index = 0;
  let hadAnsi = false;
  while (index < text.length) {
    ANSI.lastIndex = index;
    const match = ANSI.exec(text);
    if (match !== null && match.index === index) {
      out += match[0];
      hadAnsi = true;
      index += match[0].length;
      continue;
    }
    const char = String.fromCodePoint(text.codePointAt(index) ?? 32);
    const charColumns = stringWidth(char);
    if (used + charColumns > width - 1) break;
    out += char;
    used += charColumns;
    index += char.length;
  }
  return `${out}…${hadAnsi ? '\u001b[0m' : ''}`;
}

/** Pads `text` with spaces to `width` columns (never cuts). */
export function padToWidth(text: string, width: number): string {
  const missing = width - displayWidth(text);
  return missing > 0 ? `${text}${' '.repeat(missing)}` : text;
}

/** One line of text from anything: whitespace runs (newlines included) become one space. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Cuts to `maxChars` characters with an ellipsis (for fixed-length layouts such as chat). */
export function cutChars(text: string, maxChars: number): string {
  const chars = [...text];
  return chars.length <= maxChars ? text : `${chars.slice(0, maxChars - 1).join('')}…`;
}

const HIDE_CURSOR = '\u001b[?25l';
const SHOW_CURSOR = '\u001b[?25h';
const CLEAR_LINE_END = '\u001b[K';
const CLEAR_BELOW = '\u001b[J';
/**
 * Synchronized output (DEC private mode 2026): a terminal that knows it shows
 * what lies between the two marks at once, so a tall frame never appears half
 * drawn; one that does not ignores them, as terminals ignore every unknown
 * private mode.
 */
const BEGIN_UPDATE = '\u001b[?2026h';
const END_UPDATE = '\u001b[?2026l';

/**
 * Redraws a block of lines in place on a TTY: each frame moves the cursor back
 * to the top of the previous one and overwrites it, so the terminal's
 * scrollback keeps only the final frame. Lines are cut to the width so that
 * no line wraps (a wrapped line would break the cursor arithmetic).
 */
export class FrameWriter {
  readonly #output: TerminalOutput;
  #height = 0;
  #cursorHidden = false;
  #size = '';

  constructor(output: TerminalOutput) {
    this.#output = output;
  }

  /** True when the window changed size since the last frame (the frame must be redrawn). */
  get resized(): boolean {
    return this.#height > 0 && this.#size !== this.#currentSize();
  }

  #currentSize(): string {
    return `${this.#output.columns || 80}x${this.#output.rows || 24}`;
  }

  /** Replaces the previous frame with `lines`. */
  render(lines: readonly string[]): void {
    // A pty of unknown size reports 0 columns: treat it as 80.
    const width = Math.max((this.#output.columns || 80) - 1, 1);
    let text = `${BEGIN_UPDATE}${this.#cursorHidden ? '' : HIDE_CURSOR}`;
    this.#cursorHidden = true;
    if (this.#height > 0 && this.resized) {
      // After a resize a terminal may have re-wrapped the old frame, so its
      // height on screen is unknown: redraw from the top of the window.
      text += '\u001b[H\u001b[J';
    } else if (this.#height > 0) {
      text += `\u001b[${this.#height}F`;
    }
    this.#size = this.#currentSize();
    for (const line of lines) text += `${cutToWidth(line, width)}${CLEAR_LINE_END}\n`;
    text += `${CLEAR_BELOW}${END_UPDATE}`;
    this.#height = lines.length;
    this.#output.write(text);
  }

  /** Erases the current frame. */
  clear(): void {
    if (this.#height > 0) this.#output.write(`\u001b[${this.#height}F${CLEAR_BELOW}`);
    this.#height = 0;
  }

  /** Leaves the last frame on screen and shows the cursor again. Safe to call twice. */
  done(): void {
    if (this.#cursorHidden) this.#output.write(SHOW_CURSOR);
    this.#cursorHidden = false;
    this.#height = 0;
  }
}

/**
 * Word-wraps one line of text to `width` columns; continuation lines start
 * with `indent`. A word longer than a line is cut into pieces that fit.
 */
export function wrapText(text: string, width: number, indent = ''): string[] {
  const room = Math.max(width, displayWidth(indent) + 4);
  const out: string[] = [];
  let current = '';
  const push = (word: string): void => {
    const lead = out.length === 0 && current === '' ? '' : current === '' ? indent : '';
    const candidate = current === '' ? `${lead}${word}` : `${current} ${word}`;
    if (displayWidth(candidate) <= room) {
      current = candidate;
      return;
    }
    if (current !== '') {
      out.push(current);
      current = '';
      push(word);
      return;
    }
    // A word wider than the line: cut it into pieces.
    let rest = word;
    let piece = lead;
    for (const char of rest) {
      if (displayWidth(piece + char) > room) {
        out.push(piece);
        piece = indent;
      }
      piece += char;
    }
    rest = '';
    current = piece;
  };
  // The first line keeps its leading spaces (an indented list entry).
  current = /^\s*/.exec(text)?.[0] ?? '';
  const words = text.split(/\s+/).filter((part) => part !== '');
  const [first, ...rest] = words;
  if (first !== undefined) current += first;
  for (const word of rest) push(word);
  if (current !== '' || out.length === 0) out.push(current);
  return out;
}
