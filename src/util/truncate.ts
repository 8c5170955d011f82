import { groupDigits } from './text-order.js';

/**
 * Cuts `text` to at most about `maxChars`, keeping the head and the tail and
 * saying in the middle how much was cut. Returns the text unchanged when it fits.
 */
export function truncateMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const cut = text.length - maxChars;
  const marker = `\n…[truncated ${groupDigits(cut)} of ${groupDigits(text.length)} characters]…\n`;
  const keep = Math.max(0, maxChars - marker.length);
  const head = Math.ceil(keep * 0.6);
  const tail = keep - head;
  return `${text.slice(0, head)}${marker}${tail > 0 ? text.slice(text.length - tail) : ''}`;
}

/** Cuts `text` to `maxChars` with an ellipsis, for one-line displays. */
export function truncateEnd(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, Math.max(0, maxChars - 1))}…`;
}
