import type { Stats } from 'node:fs';
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, TroupeError } from '../errors.js';

/**
 * Workspace path resolution: every path a tool touches goes through here.
 * Paths are resolved against an area's root and followed through symlinks
 * with realpath; anything that ends up outside is refused before any I/O on
 * the target happens.
 */

/** The area a path must stay inside. */
export interface PathScope {
  /** Absolute root of the area (the workspace, or the output folder for writes). */
  root: string;
  /** What the model calls this area in messages (default "the workspace"). */
  label?: string;
}

/** A path that passed the checks. */
export interface ResolvedPath {
  /** Absolute real path (symlinks resolved), inside the area. */
  absolute: string;
  /** Path relative to the area root, `/`-separated; `.` for the root itself. */
  relative: string;
  /** The real path of the area root. */
  root: string;
  /** True when the path exists now. */
  exists: boolean;
}

const MAX_SHOWN_PATH = 200;

/** A path as shown in a message: quoted and cut, so a hostile path cannot flood the model. */
export function showPath(requested: string): string {
  const shown =
    requested.length > MAX_SHOWN_PATH ? `${requested.slice(0, MAX_SHOWN_PATH)}…` : requested;
  return JSON.stringify(shown);
}

/** True when `candidate` is `root` or lies under it (both absolute and normalized). */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : `${root}${path.sep}`;
  return candidate.startsWith(prefix);
}

/**
 * Resolves `requested` inside `scope`: relative paths against the root,
 * absolute paths only when they lie inside it, symlinks followed with
 * realpath. Refuses NUL bytes, traversal (also URL-encoded or with `\`
 * separators), absolute paths outside and symlinks that lead out (also
 * dangling ones) with `sandbox.escape`. The target need not exist.
 */
export async function resolveInScope(scope: PathScope, requested: string): Promise<ResolvedPath> {
  const label = scope.label ?? 'the workspace';
  const shown = showPath(requested);
  if (requested.includes('\0')) {
    throw new TroupeError('sandbox.escape', `Path ${shown} contains a NUL byte; refused.`);
  }
  // Backslashes are separators to a model that learned on Windows paths; treat them so.
  const normalized = requested.replaceAll('\\', '/');
  refuseEncodedTraversal(normalized, shown);

  const root = await realRoot(scope.root);
  const lexical = path.resolve(root, normalized === '' ? '.' : normalized);
  const rootAsGiven = path.resolve(scope.root);
  const relativeToGiven = isInside(rootAsGiven, lexical) && !isInside(root, lexical);
  const candidate = relativeToGiven
    ? path.join(root, path.relative(rootAsGiven, lexical))
    : lexical;
  if (!isInside(root, candidate)) {
    throw new TroupeError(
      'sandbox.escape',
      `Path ${shown} is outside ${label}; refused. Use a path relative to ${label} root, such as "notes/a.md".`,
    );
  }

  const { real, exists } = await realpathAllowingMissing(root, candidate, shown);
  if (!isInside(root, real)) {
    throw new TroupeError(
      'sandbox.escape',
      `Path ${shown} leads outside ${label} through a symbolic link; refused.`,
    );
  }
  const relative = path.relative(root, real).split(path.sep).join('/');
  return { absolute: real, relative: relative === '' ? '.' : relative, root, exists };
}

function refuseEncodedTraversal(normalized: string, shown: string): void {
  if (!/%[0-9a-f]{2}/i.test(normalized)) return;
  let decoded: string;
  try {
    decoded = decodeURIComponent(normalized).replaceAll('\\', '/');
  } catch {
    return;
  }
  const segments = decoded.split('/');
  if (decoded.startsWith('/') || decoded.includes('\0') || segments.includes('..')) {
    throw new TroupeError(
      'sandbox.escape',
      `Path ${shown} holds URL-encoded traversal (it decodes to ${showPath(decoded)}); refused. Paths are taken literally: write them unencoded and relative to the workspace.`,
    );
  }
}

async function realRoot(root: string): Promise<string> {
  try {
    return await realpath(root);
  } catch (error) {
    throw new TroupeError(
      'tool.failed',
      `The folder ${showPath(root)} does not exist or cannot be read (${errorMessage(error)}).`,
      { cause: error },
    );
  }
}

// realpath of `candidate`; when it does not exist, realpath of its deepest existing
// ancestor plus the missing rest. A missing entry that lstat still sees is a dangling
// symlink, and following it on write would create a file wherever it points.
async function realpathAllowingMissing(
  root: string,
  candidate: string,
  shown: string,
): Promise<{ real: string; exists: boolean }> {
  const missing: string[] = [];
  let current = candidate;
  for (;;) {
    try {
      const real = await realpath(current);
      return { real: path.join(real, ...missing), exists: missing.length === 0 };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') {
        throw new TroupeError('sandbox.escape', `Path ${shown} is a symbolic link loop; refused.`);
      }
      if (code !== 'ENOENT' && code !== 'ENOTDIR') {
        throw new TroupeError(
          'tool.failed',
          `Cannot resolve path ${shown}: ${errorMessage(error)}`,
          {
            cause: error,
          },
        );
      }
    }
    if (await isDanglingLink(current)) {
      throw new TroupeError(
        'sandbox.escape',
        `Path ${shown} goes through a symbolic link whose target does not exist; refused.`,
      );
    }
    if (current === root || path.dirname(current) === current) {
      throw new TroupeError('tool.failed', `The root folder of path ${shown} does not exist.`);
    }
    missing.unshift(path.basename(current));
    current = path.dirname(current);
  }
}

async function isDanglingLink(candidate: string): Promise<boolean> {
  try {
    return (await lstat(candidate)).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The kind of a filesystem entry, as shown to the model. */
export function entryKind(stats: Stats): string {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'dir';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isCharacterDevice()) return 'character device';
  if (stats.isBlockDevice()) return 'block device';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  return 'special file';
}

/**
 * Refuses anything that is not a regular file (devices, FIFOs, sockets,
 * folders) with `tool.refused`: reading a device or a FIFO can hang or leak.
 */
export function assertRegularFile(stats: Stats, relative: string): void {
  if (stats.isFile()) return;
  if (stats.isDirectory()) {
    throw new TroupeError(
      'tool.refused',
      `${showPath(relative)} is a folder, not a file. Use list_dir to see what it holds.`,
    );
  }
  throw new TroupeError(
    'tool.refused',
    `${showPath(relative)} is a ${entryKind(stats)}; only regular files are allowed.`,
  );
}
