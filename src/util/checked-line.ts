import { lazyBuiltin } from './lazy-builtin.js';

// Loaded on the first line: a thread whose actors keep no journal never compiles zlib.
const loadZlib = lazyBuiltin<typeof import('node:zlib')>('node:zlib');

function crc32(text: string): number {
  return loadZlib().crc32(text);
}

/**
 * Checksummed JSON lines, as the run journal keeps its records:
 * `<crc32 of the json, 8 hex digits> <json>\n`. A torn or altered line
 * fails its checksum, so a reader stops there instead of trusting it.
 */

/** The line for `json` (one JSON text without newlines), newline included. */
export function checkedLine(json: string): string {
  return `${crc32(json).toString(16).padStart(8, '0')} ${json}\n`;
}

/** The JSON text of a line written by `checkedLine` (without its newline), or undefined when it fails its checksum. */
export function checkedJson(raw: string): string | undefined {
  if (raw.indexOf(' ') !== 8) return undefined;
  const json = raw.slice(9);
  return crc32(json).toString(16).padStart(8, '0') === raw.slice(0, 8) ? json : undefined;
}
