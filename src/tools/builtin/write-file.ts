import type { Stats } from 'node:fs';
import { lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { errorMessage, TroupeError } from '../../errors.js';
import { groupDigits } from '../../util/text-order.js';
import { openFolderIn } from '../folder-handle.js';
import { assertNotProtected } from '../protected-paths.js';
import { type PathScope, resolveInScope, showPath } from '../sandbox.js';
import { defineTool, type Tool, type ToolContext } from '../tool.js';
import { requireApproval } from './approval.js';
import { type AtomicWriteIo, nodeAtomicWriteIo, writeFileAtomic } from './atomic-write.js';
import { formatBytes } from './read-file.js';

/** Options for the write_file tool. */
export interface WriteFileToolOptions {
  /** File operations (a seam for tests; default the real file system). */
  io?: AtomicWriteIo;
}

/** The write_file tool's parameters. */
export const WriteFileInputSchema = z.object({
  path: z
    .string()
    .min(1)
    .max(4_096)
    .describe(
      'File path relative to the workspace root (or to the output folder, when writes are confined to it).',
    ),
  content: z.string().max(5_000_000).describe('The complete new content of the file (UTF-8).'),
});
export type WriteFileInput = z.infer<typeof WriteFileInputSchema>;

/**
 * Creates `write_file` (tier write): writes a whole UTF-8 file atomically,
 * keeping the previous version as `<file>.bak`. Paths are relative to
 * `context.outputDir` when it is set (and confined to it), else to the
 * workspace. Parent folders are created inside that area only. Under
 * `--approve`, writes outside the output folder ask first.
 */
export function createWriteFileTool(
  options: WriteFileToolOptions = {},
): Tool<WriteFileInput, string> {
  const io = options.io ?? nodeAtomicWriteIo;
  return defineTool({
    name: 'write_file',
    description:
      'Writes a complete text file (creating parent folders) and reports the bytes written. An existing file is replaced atomically and its previous version kept as <file>.bak. Paths are relative to the area you may write to.',
    parameters: WriteFileInputSchema,
    tiers: ['write'],
    // An atomic write of the same content to the same path leaves the same file.
    idempotent: true,
    execute: async (input, context) => {
      const scope = await writeScope(context);
      const label = scope.label ?? 'the workspace';
      if (/[/\\]$/.test(input.path)) {
        throw new TroupeError(
          'tool.refused',
          `Path ${showPath(input.path)} ends with a separator; give a file name such as "notes/a.md".`,
        );
      }
      const target = await resolveInScope(scope, input.path);
      if (target.relative === '.') {
        throw new TroupeError(
          'tool.refused',
          `Path ${showPath(input.path)} is the root of ${label} itself; a file cannot replace it. Give a file path inside it, such as "notes/a.md".`,
        );
      }
      if (context.sandbox?.allowProtectedWrites !== true) {
        assertNotProtected(target.relative, 'write_file');
      }
      if (target.exists) refuseUnlessFile(await lstat(target.absolute), target.relative);
      const bytes = Buffer.byteLength(input.content, 'utf8');
      if (context.outputDir === undefined) {
        await requireApproval(
          context,
          'write_file',
          `write ${target.relative} (${formatBytes(bytes)})`,
          input.content,
        );
      }
      // The parent folders are created and opened one by one without following links, and the
      // file is written through the open folder: a folder swapped for a link after the checks
      // above makes the write fail instead of leading outside.
      const parent = await openFolderIn(target.root, path.posix.dirname(target.relative), {
        create: true,
        label,
      });
      const name = path.posix.basename(target.relative);
      try {
        const existing = await lstat(path.join(parent.path, name)).catch(() => undefined);
        if (existing !== undefined) refuseUnlessFile(existing, target.relative);
        const written = await writeFileAtomic(path.join(parent.path, name), input.content, io);
        const kept =
          written.backup === undefined ? '' : ` (previous version kept as ${target.relative}.bak)`;
        const where = context.outputDir === undefined ? '' : ' in the output folder';
        return `Wrote ${groupDigits(written.bytes)} bytes to ${target.relative}${where}${kept}.`;
      } catch (error) {
        if (error instanceof TroupeError) throw error;
        throw new TroupeError(
          'tool.failed',
          `Could not write ${target.relative}: ${errorMessage(error)}. ${target.exists ? 'The previous version is unchanged.' : 'Nothing was written.'}`,
          { cause: error },
        );
      } finally {
        await parent.close();
      }
    },
  });
}

function refuseUnlessFile(stats: Stats, relative: string): void {
  if (stats.isFile()) return;
  throw new TroupeError(
    'tool.refused',
    `${showPath(relative)} exists and is ${stats.isDirectory() ? 'a folder' : 'not a regular file'}; write_file only replaces regular files.`,
  );
}

async function writeScope(context: ToolContext): Promise<PathScope> {
  if (context.outputDir === undefined) return { root: context.workspace };
  // The run's output folder is the one area this agent may write to; it may not exist yet.
  await mkdir(context.outputDir, { recursive: true });
  return { root: context.outputDir, label: 'the output folder' };
}

/** The `write_file` tool with default options. */
export const writeFileTool: Tool<WriteFileInput, string> = createWriteFileTool();
