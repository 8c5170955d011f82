import type { Dirent } from 'node:fs';
import { constants } from 'node:fs';
import { type FileHandle, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import vm from 'node:vm';
import { z } from 'zod';
import { errorMessage, TroupeError } from '../../errors.js';
import { compareNames } from '../../util/text-order.js';
import {
  type FolderHandle,
  openChildFolder,
  openFileIn,
  openFileInArea,
  openFolderIn,
} from '../folder-handle.js';
import { resolveInScope, showPath } from '../sandbox.js';
import { defineTool, type Tool } from '../tool.js';
import { loadGlobToRegExp } from './glob.js';
import { SKIPPED_FOLDERS } from './list-dir.js';

/** Options for the search_files tool. */
export interface SearchFilesToolOptions {
  /** Time one file's matching may take, in milliseconds (default 1,000). */
  perFileTimeoutMs?: number;
  /** Files larger than this are skipped, in bytes (default 2 MiB). */
  maxFileBytes?: number;
  /** Files looked at before the search stops (default 20,000). */
  maxFiles?: number;
}

/** The search_files tool's parameters. */
export const SearchFilesInputSchema = z.object({
  pattern: z
    .string()
    .min(1)
    .max(1_000)
    .describe('A JavaScript regular expression, matched against each line.'),
  path: z
    .string()
    .max(4_096)
    .optional()
    .describe('Folder (or file) to search, relative to the workspace root (default: the root).'),
  glob: z
    .string()
    .max(300)
    .optional()
    .describe('Only files matching this glob, e.g. "*.md" or "src/**/*.ts".'),
  maxResults: z
    .number()
    .int()
    .min(1)
    .max(1_000)
    .optional()
    .describe('Most matching lines to return (default 100).'),
});
export type SearchFilesInput = z.infer<typeof SearchFilesInputSchema>;

const MAX_LINE_CHARS = 200;

// Runs inside a vm context so that `timeout` can interrupt a backtracking regex:
// V8's irregexp checks for termination requests while it backtracks.
const MATCH_SCRIPT = new vm.Script(`(() => {
  if (glob !== null && !glob.test(subject)) return null;
  const found = [];
  const lines = text.split('\\n');
  for (let i = 0; i < lines.length && found.length < max; i += 1) {
    if (pattern.test(lines[i])) found.push(i);
  }
  return found;
})()`);

interface Search {
  pattern: RegExp;
  glob: RegExp | null;
  globHasSlash: boolean;
  root: string;
  results: string[];
  maxResults: number;
  files: number;
  skipped: number;
  truncated: boolean;
  context: vm.Context;
  signal: AbortSignal;
}

/**
 * Creates `search_files` (tier read): a regex search over workspace files,
 * line by line, with result, file-size and file-count limits. Each file is
 * matched under a time limit, so a catastrophic pattern such as `(a+)+$`
 * fails the call with `tool.timeout` instead of hanging the agent.
 */
export function createSearchFilesTool(
  options: SearchFilesToolOptions = {},
): Tool<SearchFilesInput, string> {
  const perFileTimeoutMs = options.perFileTimeoutMs ?? 1_000;
  const maxFileBytes = options.maxFileBytes ?? 2 * 1024 * 1024;
  const maxFiles = options.maxFiles ?? 20_000;

  // `file` is opened without following links (see folder-handle.ts); size and kind come from it.
  async function searchFile(search: Search, file: FileHandle, relative: string): Promise<void> {
    let bytes: Buffer;
    try {
      const stats = await file.stat();
      if (!stats.isFile()) return;
      search.files += 1;
      if (stats.size > maxFileBytes) {
        search.skipped += 1;
        return;
      }
      bytes = await file.readFile();
    } finally {
      await file.close();
    }
    if (bytes.subarray(0, 8_192).includes(0)) return;
    const text = bytes.toString('utf8');
    const subject = search.globHasSlash ? relative : path.posix.basename(relative);
    Object.assign(search.context, {
      text,
      subject,
      pattern: search.pattern,
      glob: search.glob,
      max: search.maxResults,
    });
    let found: number[] | null;
    try {
      found = MATCH_SCRIPT.runInContext(search.context, { timeout: perFileTimeoutMs }) as
        | number[]
        | null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
        throw new TroupeError(
          'tool.timeout',
          `The pattern ${JSON.stringify(search.pattern.source.slice(0, 100))} took over ${perFileTimeoutMs} ms on ${relative} and was stopped: it backtracks catastrophically (nested quantifiers such as (a+)+ do). Simplify the pattern and search again.`,
        );
      }
      // Errors from the vm context are not instances of this realm's Error.
      throw new TroupeError('tool.failed', `Searching ${relative} failed: ${String(error)}`);
    }
    if (found === null) return;
    const lines = found.length > 0 ? text.split('\n') : [];
    for (const index of found) {
      if (search.results.length >= search.maxResults) {
        search.truncated = true;
        return;
      }
      const line = (lines[index] ?? '').trim();
      const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
      search.results.push(`${relative}:${index + 1}: ${shown}`);
    }
    if (found.length >= search.maxResults) search.truncated = true;
  }

  async function walk(search: Search, folder: FolderHandle, relativeFolder: string): Promise<void> {
    search.signal.throwIfAborted();
    let entries: Dirent[];
    try {
      entries = await readdir(folder.path, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => compareNames(a.name, b.name));
    for (const entry of entries) {
      if (search.truncated) return;
      if (search.files >= maxFiles) {
        search.truncated = true;
        return;
      }
      const relative = relativeFolder === '.' ? entry.name : `${relativeFolder}/${entry.name}`;
      // Symlinks are never followed: they could lead out of the workspace. Folders and files
      // are opened through the open parent with O_NOFOLLOW, so a swap is skipped, not followed.
      if (entry.isDirectory() && !SKIPPED_FOLDERS.has(entry.name)) {
        const child = await openChildFolder(folder, entry.name).catch(() => undefined);
        if (child === undefined) continue;
        try {
          await walk(search, child, relative);
        } finally {
          await child.close();
        }
      }
      if (entry.isFile()) {
        const file = await openFileIn(folder, entry.name, constants.O_RDONLY).catch(
          () => undefined,
        );
        if (file !== undefined) await searchFile(search, file, relative);
      }
    }
  }

  return defineTool({
    name: 'search_files',
    description:
      'Searches workspace files for a regular expression, line by line. Returns "path:line: text" for each match, up to maxResults. Narrow it with path and glob. .git and node_modules are skipped; symlinks are not followed.',
    parameters: SearchFilesInputSchema,
    tiers: ['read'],
    idempotent: true,
    execute: async (input, context) => {
      let pattern: RegExp;
      let glob: RegExp | null = null;
      const globToRegExp = input.glob === undefined ? undefined : await loadGlobToRegExp();
      try {
        pattern = new RegExp(input.pattern);
        if (input.glob !== undefined && globToRegExp !== undefined) glob = globToRegExp(input.glob);
      } catch (error) {
        throw new TroupeError(
          'tool.invalid_input',
          `Invalid pattern or glob: ${errorMessage(error)}. Fix it and search again.`,
        );
      }
      const requested = input.path ?? '.';
      const resolved = await resolveInScope({ root: context.workspace }, requested);
      if (!resolved.exists) {
        throw new TroupeError(
          'tool.failed',
          `Not found: ${showPath(requested)}. Use list_dir to see what exists.`,
        );
      }
      const search: Search = {
        pattern,
        glob,
        globHasSlash: input.glob?.includes('/') ?? false,
        root: resolved.root,
        results: [],
        maxResults: input.maxResults ?? 100,
        files: 0,
        skipped: 0,
        truncated: false,
        context: vm.createContext({}, { codeGeneration: { strings: false, wasm: false } }),
        signal: context.signal,
      };
      const stats = await stat(resolved.absolute);
      if (stats.isFile()) {
        const file = await openFileInArea(resolved.root, resolved.relative, constants.O_RDONLY);
        await searchFile(search, file, resolved.relative);
      } else if (stats.isDirectory()) {
        const folder = await openFolderIn(resolved.root, resolved.relative);
        try {
          await walk(search, folder, resolved.relative);
        } finally {
          await folder.close();
        }
      } else
        throw new TroupeError('tool.refused', `${showPath(requested)} is not a file or folder.`);

      const lines = search.results.length > 0 ? [...search.results] : ['No matches.'];
      const summary = `[${search.results.length} match${search.results.length === 1 ? '' : 'es'} in ${search.files} file${search.files === 1 ? '' : 's'} searched`;
      const notes = [
        search.truncated ? '; stopped at the limit, so there may be more: narrow path or glob' : '',
        search.skipped > 0 ? `; ${search.skipped} file(s) over ${maxFileBytes} bytes skipped` : '',
      ].join('');
      lines.push(`${summary}${notes}.]`);
      return lines.join('\n');
    },
  });
}

/** The `search_files` tool with default options. */
export const searchFilesTool: Tool<SearchFilesInput, string> = createSearchFilesTool();
