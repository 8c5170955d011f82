import { type Dirent, lstatSync } from 'node:fs';
import { lstat, mkdir, readdir, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, TroupeError } from '../errors.js';
import { groupDigits } from '../util/text-order.js';
import { openFolderIn, removeIn } from './folder-handle.js';
import { showPath } from './sandbox.js';

/**
 * Protected paths: files and folders in a workspace that other programs run
 * on their own (git hooks and config, direnv, editor tasks, CI, agent
 * settings). A model that writes one plants code that runs later, outside
 * any sandbox, when the user runs `git status` or opens the folder. They
 * are read-only to `write_file` and to the exec tools, at any depth,
 * unless the run opts in with `--allow-protected-writes`.
 */

/** One protected entry. */
export interface ProtectedPath {
  /** Path relative to a folder, `/`-separated (`.git`, `.github/workflows`). */
  path: string;
  /** What it is when it exists: a folder or a file. */
  kind: 'dir' | 'file';
  /** Why it is protected, for the docs and the refusal message. */
  reason: string;
}

/** The protected entries, each with its reason (docs/SECURITY.md shows this list). */
export const PROTECTED_PATHS: readonly ProtectedPath[] = [
  {
    path: '.git',
    kind: 'dir',
    reason:
      'git runs hooks (.git/hooks) and commands from .git/config (core.fsmonitor, core.pager, aliases) on the next git command',
  },
  {
    path: '.gitmodules',
    kind: 'file',
    reason: 'submodule entries choose URLs git fetches and `update = !command` runs',
  },
  {
    path: '.gitattributes',
    kind: 'file',
    reason: 'selects filter, diff and merge drivers that git runs as programs',
  },
  { path: '.husky', kind: 'dir', reason: 'husky installs these files as git hooks' },
  {
    path: '.pre-commit-config.yaml',
    kind: 'file',
    reason: 'pre-commit runs the commands it lists on every commit',
  },
  { path: '.envrc', kind: 'file', reason: 'direnv runs it when a shell enters the folder' },
  {
    path: '.vscode',
    kind: 'dir',
    reason: 'VS Code runs tasks on folder open and takes program paths from settings',
  },
  { path: '.idea', kind: 'dir', reason: 'JetBrains IDEs run configured startup tasks and tools' },
  {
    path: '.devcontainer',
    kind: 'dir',
    reason: 'dev containers run postCreateCommand and friends when the folder is opened',
  },
  {
    path: '.github/workflows',
    kind: 'dir',
    reason: 'GitHub Actions runs these workflows on the next push',
  },
  { path: '.gitlab-ci.yml', kind: 'file', reason: 'GitLab CI runs it on the next push' },
  {
    path: '.npmrc',
    kind: 'file',
    reason: 'npm takes registries, tokens and script-shell from it',
  },
  { path: '.yarnrc.yml', kind: 'file', reason: 'yarnPath makes yarn run a script from the repo' },
  {
    path: '.claude',
    kind: 'dir',
    reason: 'Claude Code runs hooks and allows commands from its project settings',
  },
  {
    path: '.mcp.json',
    kind: 'file',
    reason: 'MCP clients start the servers it lists as programs',
  },
  {
    path: '.cursor',
    kind: 'dir',
    reason: 'Cursor takes rules, MCP servers and commands from it',
  },
];

/** The flag that lets a run's tools write protected paths. */
export const ALLOW_PROTECTED_FLAG = '--allow-protected-writes';

/**
 * The protected entry that `relative` (a `/`-separated path inside an area)
 * is or lies under, matched case-insensitively at any depth (a nested
 * repository's `.git` is as dangerous as the top one), or undefined.
 */
export function protectedEntryOf(relative: string): ProtectedPath | undefined {
  const segments = relative
    .split(/[/\\]+/)
    .filter((segment) => segment !== '' && segment !== '.')
    .map((segment) => segment.toLowerCase());
  for (const entry of PROTECTED_PATHS) {
    const parts = entry.path.toLowerCase().split('/');
    for (let start = 0; start + parts.length <= segments.length; start += 1) {
      if (parts.every((part, index) => segments[start + index] === part)) return entry;
    }
  }
  return undefined;
}

/**
 * Throws `tool.refused` when `relative` is a protected path, naming the
 * reason and the flag that allows it.
 */
export function assertNotProtected(relative: string, tool: string): void {
  const entry = protectedEntryOf(relative);
  if (entry === undefined) return;
  throw new TroupeError(
    'tool.refused',
    `${tool} may not write ${showPath(relative)}: ${entry.path} is a protected path (${entry.reason}). Leave it unchanged and tell the user what you would change; the user can rerun with ${ALLOW_PROTECTED_FLAG} to let tools edit it.`,
    { details: { protectedPath: entry.path } },
  );
}

/** The protected paths of writable folders, held read-only for one sandboxed program. */
export interface ProtectedGuard {
  /** Absolute paths to mount read-only over the writable folders. */
  paths: string[];
  /**
   * Once the program has ended: finds the protected entries it created at
   * any depth (present now, absent or another file before) and removes
   * them. Call before `release`.
   */
  sweep(): Promise<SweepResult>;
  /** Removes the placeholders this guard created (call once the program has ended). */
  release(): Promise<void>;
}

/** What `sweep` found and did. */
export interface SweepResult {
  /** Protected entries the program created that were removed, relative to their root. */
  removed: ProtectedRemoval[];
  /** Protected entries the program created that could not be removed, with why. */
  failed: (ProtectedRemoval & { error: string })[];
}

/** One protected entry created by a sandboxed program. */
export interface ProtectedRemoval {
  /** `/`-separated path relative to the writable root. */
  relative: string;
  entry: ProtectedPath;
}

/**
 * Folders a scan does not descend into: dependency trees whose code runs
 * anyway whenever the project runs (see docs/SECURITY.md, Protected paths).
 */
export const UNSCANNED_FOLDERS: ReadonlySet<string> = new Set(['node_modules', '.venv']);

/** Folders a scan reads at the same time. */
const SCAN_CONCURRENCY = 8;

/** The most folders one scan of the writable folders visits before refusing the exec call. */
export const MAX_SCANNED_FOLDERS = 20_000;

/** A protected entry found by a scan. */
interface FoundEntry {
  entry: ProtectedPath;
  root: string;
  relative: string;
  ino: number;
  dev: number;
  isLink: boolean;
}

/** What one scan of the writable folders saw. */
interface Scan {
  found: Map<string, FoundEntry>;
  folders: Set<string>;
}

// Placeholders shared by concurrent sandboxed programs in this process: created by the first,
// removed by the last, so one program's cleanup never unprotects another's.
const placeholders = new Map<string, number>();
const placeholderParents = new Set<string>();

/**
 * Gets the protected paths under each writable `root` (real paths) ready
 * to be mounted read-only: every protected entry that exists, at any depth
 * (see `scanProtected`), and at the root of each folder a placeholder for
 * each missing one (an empty folder or file), so the program cannot create
 * it either. Deeper down, a missing entry cannot be held by a mount, so
 * `sweep` finds the ones the program created and removes them. `release`
 * removes the placeholders again, so the workspace is left as it was. A
 * protected entry that is a symbolic link is refused: mounting over it
 * would follow it.
 */
export async function guardProtectedPaths(roots: readonly string[]): Promise<ProtectedGuard> {
  const paths: string[] = [];
  const created: string[] = [];
  const release = async (): Promise<void> => {
    for (const absolute of created.reverse()) {
      const count = (placeholders.get(absolute) ?? 1) - 1;
      if (count > 0) {
        placeholders.set(absolute, count);
        continue;
      }
      placeholders.delete(absolute);
      const stats = await lstat(absolute).catch(() => undefined);
      if (stats?.isDirectory() === true) await rmdir(absolute).catch(() => undefined);
      else if (stats?.isFile() === true && stats.size === 0) {
        await unlink(absolute).catch(() => undefined);
      }
      // Parent folders made for a placeholder go too once empty (rmdir refuses otherwise).
      for (let folder = path.dirname(absolute); placeholderParents.has(folder); ) {
        const removed = await rmdir(folder).then(
          () => true,
          () => false,
        );
        if (!removed) break;
        placeholderParents.delete(folder);
        folder = path.dirname(folder);
      }
    }
  };
  let before: Scan = { found: new Map(), folders: new Set() };
  try {
    for (const root of roots) {
      for (const entry of PROTECTED_PATHS) {
        const absolute = path.join(root, entry.path);
        const shared = placeholders.get(absolute);
        const stats = await lstat(absolute).catch(() => undefined);
        if (stats?.isSymbolicLink() === true) throw linkRefusal(entry.path, entry);
        if (stats !== undefined && shared === undefined) {
          paths.push(absolute);
          continue;
        }
        if (shared !== undefined) {
          placeholders.set(absolute, shared + 1);
          created.push(absolute);
          paths.push(absolute);
          continue;
        }
        // Missing: create an empty placeholder and its missing parents, remembered for release.
        const parents: string[] = [];
        for (let folder = path.dirname(absolute); folder !== root; folder = path.dirname(folder)) {
          if ((await stat(folder).catch(() => undefined)) !== undefined) break;
          parents.unshift(folder);
        }
        for (const folder of parents) {
          await mkdir(folder);
          placeholderParents.add(folder);
        }
        if (entry.kind === 'dir') await mkdir(absolute);
        else await writeFile(absolute, '', { flag: 'wx' });
        placeholders.set(absolute, 1);
        created.push(absolute);
        paths.push(absolute);
      }
    }
    before = await scanProtected(roots);
    for (const [absolute, found] of before.found) {
      if (found.isLink) throw linkRefusal(found.relative, found.entry);
      if (!paths.includes(absolute)) paths.push(absolute);
    }
  } catch (error) {
    await release();
    throw error;
  }
  const sweep = async (): Promise<SweepResult> => sweepCreated(roots, before);
  return { paths, sweep, release };
}

function linkRefusal(relative: string, entry: ProtectedPath): TroupeError {
  return new TroupeError(
    'tool.refused',
    `${showPath(relative)} in the workspace is a symbolic link; the sandbox protects it (${entry.reason}) and will not follow a link to do so. Replace the link with the real folder or file, or rerun with ${ALLOW_PROTECTED_FLAG}.`,
  );
}

// The last part of each protected entry, for a quick first test of a name.
const LAST_PARTS: ReadonlySet<string> = new Set(
  PROTECTED_PATHS.map((entry) => entry.path.toLowerCase().split('/').at(-1) ?? entry.path),
);

/**
 * Finds every protected entry under the real `roots`, at any depth, by
 * name (any letter case), without following links. It does not descend
 * into a protected folder (it is mounted read-only for the call, so nothing
 * can appear inside) nor into `UNSCANNED_FOLDERS`. Past `maxFolders` folders
 * it throws `tool.refused`: the exec call is refused rather than run
 * unchecked.
 */
export async function scanProtected(
  roots: readonly string[],
  maxFolders: number = MAX_SCANNED_FOLDERS,
): Promise<Scan> {
  const found = new Map<string, FoundEntry>();
  const folders = new Set<string>();
  const visit = async (root: string, relativeFolder: string, next: string[]): Promise<void> => {
    let entries: Dirent[] = [];
    try {
      entries = await readdir(relativeFolder === '' ? root : path.join(root, relativeFolder), {
        withFileTypes: true,
      });
    } catch {
      // Gone or unreadable since its parent was read: nothing to find in it.
    }
    for (const dirent of entries) {
      const relative = relativeFolder === '' ? dirent.name : `${relativeFolder}/${dirent.name}`;
      const entry = LAST_PARTS.has(dirent.name.toLowerCase())
        ? protectedEntryOf(relative)
        : undefined;
      if (entry !== undefined) {
        const absolute = path.join(root, relative);
        const stats = await lstat(absolute).catch(() => undefined);
        if (stats === undefined) continue;
        const isLink = stats.isSymbolicLink();
        found.set(absolute, { entry, root, relative, ino: stats.ino, dev: stats.dev, isLink });
      } else if (dirent.isDirectory() && !UNSCANNED_FOLDERS.has(dirent.name)) {
        next.push(relative);
      }
    }
  };
  for (const root of roots) {
    // Breadth first, a few folders at a time: reading folders in parallel is several times
    // faster than one by one on a large tree.
    for (let level = ['']; level.length > 0; ) {
      const next: string[] = [];
      for (let index = 0; index < level.length; index += SCAN_CONCURRENCY) {
        const batch = level.slice(index, index + SCAN_CONCURRENCY);
        for (const relative of batch)
          folders.add(relative === '' ? root : path.join(root, relative));
        if (folders.size > maxFolders) throw tooManyFolders(maxFolders);
        await Promise.all(batch.map((relative) => visit(root, relative, next)));
      }
      level = next;
    }
  }
  return { found, folders };
}

function tooManyFolders(maxFolders: number): TroupeError {
  return new TroupeError(
    'tool.refused',
    `The writable folder holds more than ${groupDigits(maxFolders)} folders (node_modules and .venv not counted), more than the sandbox checks for protected files (git hooks, .envrc …) before and after each exec call, so the call was not run. The user can narrow --workspace, keep writes in the run's output folder, or rerun with ${ALLOW_PROTECTED_FLAG}.`,
  );
}

// The most folders the check after a call visits: the program may have created many.
const MAX_SWEPT_FOLDERS = 10 * MAX_SCANNED_FOLDERS;

/**
 * Removes the protected entries that a program created under `roots`: those
 * present now that were absent before, or another file then (replaced).
 * An entry that is an original moved elsewhere with its parent folder (the
 * same inode) is left alone: its content is the user's, read-only during
 * the call. Placeholders held by concurrent calls are not touched.
 * Removal goes through open folders without following links
 * (folder-handle.ts), so a concurrent swap cannot send it outside.
 */
async function sweepCreated(roots: readonly string[], before: Scan): Promise<SweepResult> {
  const result: SweepResult = { removed: [], failed: [] };
  let after: Scan;
  try {
    after = await scanProtected(roots, MAX_SWEPT_FOLDERS);
  } catch (error) {
    result.failed.push({
      relative: '.',
      entry: PROTECTED_PATHS[0] as ProtectedPath,
      error: `the check for created protected files stopped: ${errorMessage(error)}`,
    });
    return result;
  }
  const originals = new Set([...before.found.values()].map((found) => `${found.dev}:${found.ino}`));
  for (const [absolute, found] of after.found) {
    const previous = before.found.get(absolute);
    if (previous !== undefined && previous.ino === found.ino && previous.dev === found.dev) {
      continue;
    }
    if (placeholders.has(absolute) || originals.has(`${found.dev}:${found.ino}`)) continue;
    try {
      await removeCreated(found, before.folders);
      result.removed.push({ relative: found.relative, entry: found.entry });
    } catch (error) {
      result.failed.push({
        relative: found.relative,
        entry: found.entry,
        error: errorMessage(error),
      });
    }
  }
  return result;
}

// Removes the entry, then the folders the program made to hold it (`.github` of
// `.github/workflows`) when they did not exist before and are empty now.
async function removeCreated(found: FoundEntry, foldersBefore: ReadonlySet<string>): Promise<void> {
  const parts = found.relative.split('/');
  const depth = found.entry.path.split('/').length;
  for (let index = parts.length; index > parts.length - depth && index > 0; index -= 1) {
    const relative = parts.slice(0, index).join('/');
    if (index < parts.length && foldersBefore.has(path.join(found.root, relative))) return;
    const folder = await openFolderIn(found.root, parts.slice(0, index - 1).join('/'));
    try {
      const name = parts[index - 1] as string;
      if (index === parts.length) await removeIn(folder, name);
      else if (
        !(await rmdir(path.join(folder.path, name)).then(
          () => true,
          () => false,
        ))
      )
        return;
    } finally {
      await folder.close();
    }
  }
}

/** The protected paths that exist under `root` as real files or folders (not links). */
export function existingProtectedPaths(root: string): string[] {
  return PROTECTED_PATHS.map((entry) => path.join(root, entry.path)).filter((absolute) => {
    try {
      return !lstatSync(absolute).isSymbolicLink();
    } catch {
      return false;
    }
  });
}
