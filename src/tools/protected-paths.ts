import { lstatSync } from 'node:fs';
import { lstat, mkdir, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TroupeError } from '../errors.js';
import { showPath } from './sandbox.js';

/**
 * Protected paths: files and folders in a workspace that other programs run
 * on their own (git hooks and config, direnv, editor tasks, CI, agent
 * settings). A model that writes one plants code that runs later, outside
 * any sandbox, when the user runs `git status` or opens the folder. They
 * are read-only to `write_file` (at any depth) and to the exec tools (at
 * the workspace root) unless the run opts in with
 * `--allow-protected-writes`.
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
  /** Removes the placeholders this guard created (call once the program has ended). */
  release(): Promise<void>;
}

// Placeholders shared by concurrent sandboxed programs in this process: created by the first,
// removed by the last, so one program's cleanup never unprotects another's.
const placeholders = new Map<string, number>();
const placeholderParents = new Set<string>();

/**
 * Gets the protected paths under each writable `root` ready to be mounted
 * read-only. A missing entry gets an empty placeholder (folder or file), so
 * the program cannot create it either; `release` removes the placeholders
 * again, so the workspace is left as it was. A protected entry that is a
 * symbolic link is refused: mounting over it would follow it.
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
  try {
    for (const root of roots) {
      for (const entry of PROTECTED_PATHS) {
        const absolute = path.join(root, entry.path);
        const shared = placeholders.get(absolute);
        const stats = await lstat(absolute).catch(() => undefined);
        if (stats?.isSymbolicLink() === true) {
          throw new TroupeError(
            'tool.refused',
            `${showPath(entry.path)} in the workspace is a symbolic link; the sandbox protects it (${entry.reason}) and will not follow a link to do so. Replace the link with the real folder or file, or rerun with ${ALLOW_PROTECTED_FLAG}.`,
          );
        }
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
  } catch (error) {
    await release();
    throw error;
  }
  return { paths, release };
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
