import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { TroupeError } from '../errors.js';

/**
 * Checks, from outside, that a sandbox's read-only mounts of protected
 * entries landed where they were meant to. bubblewrap mounts by path, and
 * a program in a concurrent sandbox with the same writable workspace could
 * swap a folder on that path for a link while the mounts are made, so a
 * mount would cover some other folder and leave the protected one writable.
 * Before the program starts (bubblewrap's `--block-fd` gate), the
 * sandbox's /proc/<pid>/mountinfo must show, for each entry, a read-only
 * mount at its path whose source is that same path of the same filesystem:
 * one line of mountinfo names both the folder the mount shows (its root)
 * and the folder it covers (its mount point), each by where it is now, and
 * two folders cannot be at one path at once.
 */

/** One line of /proc/<pid>/mountinfo. */
export interface MountInfoEntry {
  /** The filesystem's device (`major:minor`). */
  device: string;
  /** The mounted folder, relative to the root of its filesystem. */
  root: string;
  /** Where it is mounted, relative to the process's root. */
  mountPoint: string;
  /** Per-mount options (`ro`, `nosuid` …). */
  options: readonly string[];
}

/** Parses mountinfo text (see proc(5)); octal escapes (`\040` for a space) are decoded. */
export function parseMountInfo(text: string): MountInfoEntry[] {
  const entries: MountInfoEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const [device, root, mountPoint, options] = [fields[2], fields[3], fields[4], fields[5]];
    if (device === undefined || root === undefined || mountPoint === undefined) continue;
    if (options === undefined) continue;
    entries.push({
      device,
      root: unescapeField(root),
      mountPoint: unescapeField(mountPoint),
      options: options.split(','),
    });
  }
  return entries;
}

function unescapeField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_match, octal: string) =>
    String.fromCharCode(Number.parseInt(octal, 8)),
  );
}

/**
 * The problems with `mounts` for the read-only `protectedPaths` under the
 * writable `roots` (absolute paths, the same inside the sandbox and out);
 * empty when each protected path is covered, with nothing on top, by a
 * read-only mount of itself.
 */
export function protectedMountProblems(
  mounts: readonly MountInfoEntry[],
  roots: readonly string[],
  protectedPaths: readonly string[],
): string[] {
  const problems: string[] = [];
  const topmost = (target: string): number => mounts.findLastIndex((m) => m.mountPoint === target);
  for (const target of protectedPaths) {
    const root = roots.find((folder) => target.startsWith(`${folder}${path.sep}`));
    const index = topmost(target);
    const rootIndex = root === undefined ? -1 : topmost(root);
    const mount = mounts[index];
    const rootMount = mounts[rootIndex];
    if (root === undefined || mount === undefined || rootMount === undefined) {
      problems.push(`${target} is not mounted read-only`);
      continue;
    }
    const expected = path.posix.join(rootMount.root, path.relative(root, target));
    if (mount.root !== expected || mount.device !== rootMount.device) {
      problems.push(`the mount at ${target} shows ${mount.root}, not ${expected}`);
    } else if (!mount.options.includes('ro')) {
      problems.push(`the mount at ${target} is not read-only`);
    } else if (
      mounts.slice(index + 1).some((later) => `${target}/`.startsWith(`${later.mountPoint}/`))
    ) {
      problems.push(`${target} is covered by a later mount`);
    }
  }
  return problems;
}

/** How long the gate waits for bubblewrap to finish its mounts. */
const MOUNT_WAIT_MS = 10_000;

/**
 * Waits until the sandbox whose first process is `pid` has made its mounts
 * (bubblewrap reports the process before it mounts, and waits at the gate
 * after its final pivot, when the writable root and the protected paths
 * show at their own paths), then throws `tool.refused` unless `protectedMountProblems` finds none.
 */
export async function requireProtectedMounts(
  pid: number,
  roots: readonly string[],
  protectedPaths: readonly string[],
): Promise<void> {
  const first = roots[0];
  for (let waited = 0; ; waited += 5) {
    let mounts: MountInfoEntry[];
    try {
      mounts = parseMountInfo(await readFile(`/proc/${pid}/mountinfo`, 'utf8'));
    } catch (error) {
      throw refusal([`the sandbox's mounts could not be read (${String(error)})`]);
    }
    const made = (target: string | undefined): boolean =>
      target === undefined || mounts.some((mount) => mount.mountPoint === target);
    // A swap can keep a protected path from ever showing: then the wait ends at the limit.
    if ((made(first) && protectedPaths.every(made)) || waited >= MOUNT_WAIT_MS) {
      const problems = protectedMountProblems(mounts, roots, protectedPaths);
      if (problems.length > 0) throw refusal(problems);
      return;
    }
    await delay(5);
  }
}

function refusal(problems: readonly string[]): TroupeError {
  return new TroupeError(
    'tool.refused',
    `the sandbox's read-only mounts of protected paths did not land where they belong (${problems.join('; ')}). A folder on their path was probably swapped for a link while the sandbox was set up, by another program in the workspace. Try again; nothing was run.`,
  );
}
