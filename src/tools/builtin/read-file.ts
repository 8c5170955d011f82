import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { TroupeError } from '../../errors.js';
import { groupDigits } from '../../util/text-order.js';
import { openFileInArea } from '../folder-handle.js';
import { assertRegularFile, resolveInScope, showPath } from '../sandbox.js';
import { defineTool, type Tool } from '../tool.js';

/** Characters returned when the model gives no length. */
export const DEFAULT_READ_LENGTH = 8_000;
/** Files larger than this are refused whole; the model is pointed at search_files. */
export const MAX_READ_FILE_BYTES = 16 * 1024 * 1024;
// NUL bytes in the first 8 KiB mean binary, as git and grep decide.
const BINARY_SNIFF_BYTES = 8_192;

/** The read_file tool's parameters. */
export const ReadFileInputSchema = z.object({
  path: z
    .string()
    .max(4_096)
    .describe('File path relative to the workspace root, e.g. "notes/a.md".'),
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('First character to return (default 0). Use it to read past a cut.'),
  length: z
    .number()
    .int()
    .min(1)
    .max(50_000)
    .optional()
    .describe(`How many characters to return (default ${DEFAULT_READ_LENGTH}).`),
});
export type ReadFileInput = z.infer<typeof ReadFileInputSchema>;

/**
 * Reads a text file and throws a `TroupeError` the model can act on when it
 * is missing, not a regular file, too large, binary or not valid UTF-8.
 */
export async function readTextFile(
  workspace: string,
  requested: string,
): Promise<{ text: string; relative: string }> {
  const resolved = await resolveInScope({ root: workspace }, requested);
  if (!resolved.exists) {
    throw new TroupeError(
      'tool.failed',
      `File not found: ${showPath(requested)}. Use list_dir to see what exists.`,
    );
  }
  // Opened through the checked folders without following links (no check-then-open window),
  // and every check below is on the open descriptor, not on the path.
  let file: FileHandle;
  try {
    file = await openFileInArea(resolved.root, resolved.relative, constants.O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw new TroupeError(
      'tool.failed',
      `File not found: ${showPath(requested)}. Use list_dir to see what exists.`,
    );
  }
  let bytes: Buffer;
  try {
    const stats = await file.stat();
    assertRegularFile(stats, resolved.relative);
    if (stats.size > MAX_READ_FILE_BYTES) {
      throw new TroupeError(
        'tool.refused',
        `${showPath(resolved.relative)} is ${formatBytes(stats.size)}, more than read_file handles (${formatBytes(MAX_READ_FILE_BYTES)}). Use search_files to find the lines you need.`,
      );
    }
    bytes = await file.readFile();
  } finally {
    await file.close();
  }
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
    throw new TroupeError(
      'tool.refused',
      `${showPath(resolved.relative)} looks like a binary file (it contains NUL bytes); read_file reads text only.`,
    );
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new TroupeError(
      'tool.refused',
      `${showPath(resolved.relative)} is not valid UTF-8 text, so read_file cannot show it. It may be binary or in another encoding.`,
    );
  }
  return { text, relative: resolved.relative };
}

/** Byte counts for people: "812 bytes", "1.2 KiB", "3.4 MiB", "2.0 GiB". */
export function formatBytes(bytes: number): string {
  if (bytes === 1) return '1 byte';
  if (bytes < 1024) return `${groupDigits(bytes)} bytes`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * `read_file` (tier read): the text of a workspace file, `length`
 * characters from `offset`, with a notice of what was cut and how to read on.
 */
export const readFileTool: Tool<ReadFileInput, string> = defineTool({
  name: 'read_file',
  description: `Reads a UTF-8 text file in the workspace. Returns up to ${DEFAULT_READ_LENGTH} characters by default; when the file is longer, a notice says how to read the rest with offset and length. Binary files are refused.`,
  parameters: ReadFileInputSchema,
  tiers: ['read'],
  idempotent: true,
  execute: async (input, context) => {
    const { text, relative } = await readTextFile(context.workspace, input.path);
    const offset = input.offset ?? 0;
    const length = input.length ?? DEFAULT_READ_LENGTH;
    const total = text.length;
    if (total === 0) return `(${relative} is empty)`;
    if (offset >= total) {
      throw new TroupeError(
        'tool.failed',
        `offset ${offset} is past the end of ${relative}, which has ${groupDigits(total)} characters. Use an offset below ${total}.`,
      );
    }
    let end = Math.min(total, offset + length);
    // Never split a surrogate pair at the cut.
    if (end < total && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
    const slice = text.slice(offset, end);
    if (offset === 0 && end === total) return slice;
    const notice =
      end < total
        ? `[Showing characters ${groupDigits(offset)}–${groupDigits(end)} of ${groupDigits(total)} in ${relative}; ${groupDigits(total - end)} more. Call read_file with offset ${end} to read further.]`
        : `[Showing characters ${groupDigits(offset)}–${groupDigits(end)} of ${groupDigits(total)} in ${relative}: the end of the file.]`;
    return `${slice}\n\n${notice}`;
  },
});
