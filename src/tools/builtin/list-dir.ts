import type { Dirent } from 'node:fs';
import { lstat, readdir, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { TroupeError } from '../../errors.js';
import { compareNames } from '../../util/text-order.js';
import { type FolderHandle, openChildFolder, openFolderIn } from '../folder-handle.js';
import { entryKind, resolveInScope, showPath } from '../sandbox.js';
import { defineTool, type Tool } from '../tool.js';
import { formatBytes } from './read-file.js';

/** Folders listed but never descended into, in recursive listings and searches. */
export const SKIPPED_FOLDERS: ReadonlySet<string> = new Set(['.git', 'node_modules']);

/** The list_dir tool's parameters. */
export const ListDirInputSchema = z.object({
  path: z
    .string()
    .max(4_096)
    .optional()
    .describe('Folder relative to the workspace root (default: the root).'),
  recursive: z.boolean().optional().describe('List subfolders too (default false).'),
  depth: z
    .number()
    .int()
    .min(1)
    .max(10)
    .optional()
    .describe('How many levels to list when recursive (default 3).'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(2_000)
    .optional()
    .describe('Most entries to return (default 200).'),
});
export type ListDirInput = z.infer<typeof ListDirInputSchema>;

interface Listing {
  lines: string[];
  limit: number;
  truncated: boolean;
}

/**
 * `list_dir` (tier read): the entries of a workspace folder with type and
 * size, optionally recursive with depth and count limits. Symlinks are
 * shown, never followed.
 */
export const listDirTool: Tool<ListDirInput, string> = defineTool({
  name: 'list_dir',
  description:
    'Lists a folder in the workspace: one line per entry with its type (dir, file, symlink) and size. Paths in the output are relative to the workspace root. Set recursive to list subfolders (depth and limit bound it).',
  parameters: ListDirInputSchema,
  tiers: ['read'],
  idempotent: true,
  execute: async (input, context) => {
    const requested = input.path ?? '.';
    const resolved = await resolveInScope({ root: context.workspace }, requested);
    const stats = resolved.exists ? await stat(resolved.absolute) : undefined;
    if (stats === undefined) {
      throw new TroupeError(
        'tool.failed',
        `Folder not found: ${showPath(requested)}. Call list_dir without a path to see the workspace root.`,
      );
    }
    if (!stats.isDirectory()) {
      throw new TroupeError(
        'tool.failed',
        `${showPath(resolved.relative)} is a ${entryKind(stats)}, not a folder. Use read_file to read a file.`,
      );
    }
    const depth = input.recursive === true ? (input.depth ?? 3) : 1;
    const listing: Listing = { lines: [], limit: input.limit ?? 200, truncated: false };
    // Listed through open folders, following no link: a folder swapped for one is refused.
    const folder = await openFolderIn(resolved.root, resolved.relative);
    try {
      await listFolder(folder, resolved.relative, depth, listing, context.signal);
    } finally {
      await folder.close();
    }
    const header = `${resolved.relative === '.' ? 'Workspace root' : resolved.relative}:`;
    if (listing.lines.length === 0) return `${header}\n(empty folder)`;
    const notes: string[] = [];
    if (listing.truncated) {
      notes.push(
        `[Stopped at ${listing.limit} entries. List a subfolder, or raise limit (at most 2000), to see more.]`,
      );
    }
    if (input.recursive === true) {
      notes.push(`[Folders deeper than ${depth} levels, .git and node_modules are not expanded.]`);
    }
    return [header, ...listing.lines, ...notes].join('\n');
  },
});

async function listFolder(
  folder: FolderHandle,
  relativeFolder: string,
  depth: number,
  listing: Listing,
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  let entries: Dirent[];
  try {
    entries = await readdir(folder.path, { withFileTypes: true });
  } catch (error) {
    listing.lines.push(
      `  (cannot read ${relativeFolder}: ${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
    return;
  }
  entries.sort(
    (a, b) => Number(b.isDirectory()) - Number(a.isDirectory()) || compareNames(a.name, b.name),
  );
  for (const entry of entries) {
    if (listing.lines.length >= listing.limit) {
      listing.truncated = true;
      return;
    }
    const relative = relativeFolder === '.' ? entry.name : `${relativeFolder}/${entry.name}`;
    listing.lines.push(await describeEntry(entry, path.join(folder.path, entry.name), relative));
    if (entry.isDirectory() && depth > 1 && !SKIPPED_FOLDERS.has(entry.name)) {
      let child: FolderHandle;
      try {
        child = await openChildFolder(folder, entry.name);
      } catch {
        listing.lines.push(`  (cannot read ${relative}: it changed while being listed)`);
        continue;
      }
      try {
        await listFolder(child, relative, depth - 1, listing, signal);
      } finally {
        await child.close();
      }
      if (listing.truncated) return;
    }
  }
}

async function describeEntry(entry: Dirent, absolute: string, relative: string): Promise<string> {
  if (entry.isDirectory()) return `dir      ${relative}/`;
  if (entry.isSymbolicLink()) {
    const target = await readlink(absolute).catch(() => '?');
    return `symlink  ${relative} -> ${target}`;
  }
  try {
    const stats = await lstat(absolute);
    if (stats.isFile()) return `file     ${relative}  (${formatBytes(stats.size)})`;
    return `${entryKind(stats).padEnd(8)} ${relative}`;
  } catch {
    return `?        ${relative}`;
  }
}
