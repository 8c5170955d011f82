import { displayWidth, type Palette } from './terminal.js';

/** Widest the answer is wrapped to, however wide the terminal: long lines are hard to read. */
export const ANSWER_MAX_WIDTH = 100;

const FENCE = /^\s*(```|~~~)/;
const LIST_ITEM = /^(\s*(?:[-*+]|\d+[.)])\s+)/;
const QUOTE = /^(\s*>\s?)/;

/**
 * Word-wraps one line to `width` columns; continuation lines get `indent`
 * (a list item's hanging indent, a quote's marker). Words longer than a line
 * are left whole (a URL stays clickable), never cut.
 */
function wrapLine(line: string, width: number, indent: string): string[] {
  if (displayWidth(line) <= width) return [line];
  const lead = /^\s*/.exec(line)?.[0] ?? '';
  const words = line.slice(lead.length).split(/ +/);
  const out: string[] = [];
  let current = lead;
  let hasWord = false;
  for (const word of words) {
    const candidate = hasWord ? `${current} ${word}` : `${current}${word}`;
    if (hasWord && displayWidth(candidate) > width) {
      out.push(current);
      current = `${indent}${word}`;
    } else {
      current = candidate;
    }
    hasWord = true;
  }
  out.push(current);
  return out;
}

/**
 * The run's final answer for the terminal, in full: Markdown kept as it is
 * (headings, lists, quotes and code read well as plain text), paragraphs and
 * list items word-wrapped to `width` (undefined: not wrapped, for pipes and
 * files) with hanging indents, code blocks never wrapped, headings in bold.
 */
export function answerLines(
  answer: string,
  options: { width?: number | undefined; palette: Palette },
): string[] {
  const width =
    options.width === undefined
      ? undefined
      : Math.max(20, Math.min(options.width, ANSWER_MAX_WIDTH));
  const out: string[] = [];
  let inCode = false;
  for (const raw of answer.replace(/\r\n?/g, '\n').trimEnd().split('\n')) {
    const line = raw.trimEnd();
    if (FENCE.test(line)) {
      inCode = !inCode;
      out.push(options.palette.dim(line));
      continue;
    }
    if (inCode) {
      out.push(line);
      continue;
    }
    if (/^\s{0,3}#{1,6}\s/.test(line)) {
      out.push(options.palette.bold(line));
      continue;
    }
    if (width === undefined) {
      out.push(line);
      continue;
    }
    const marker = LIST_ITEM.exec(line)?.[1] ?? QUOTE.exec(line)?.[1];
    const indent =
      marker === undefined
        ? (/^\s*/.exec(line)?.[0] ?? '')
        : QUOTE.test(line)
          ? marker
          : ' '.repeat(displayWidth(marker));
    out.push(...wrapLine(line, width, indent));
  }
  return out;
}

/** The block printed after the summary: a blank line, a rule, the whole answer; nothing without one. */
export function finalAnswerBlock(
  answer: string | undefined,
  width: number | undefined,
  palette: Palette,
): string[] {
  if (answer === undefined || answer.trim() === '') return [];
  return ['', palette.dim('── answer ──'), ...answerLines(answer, { width, palette })];
}
