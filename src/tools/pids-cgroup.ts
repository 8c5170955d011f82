import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A process-count cap for one sandboxed program that holds when troupe runs
 * as root: a cgroup with the pids controller.
 *
 * RLIMIT_NPROC (prlimit) is what caps a fork bomb for an ordinary user, but
 * the kernel never applies it to processes whose real user is root, and a
 * sandbox started by root maps its user to root outside. Measured: a python
 * fork bomb under `--nproc=64` as root reached ~10,000 processes in 3 s and
 * took the machine's other programs down with it. When troupe can create a
 * cgroup (root in a container or VM, or a delegated cgroup v2 subtree), each
 * sandbox gets one with `pids.max` set, and the fork bomb stops at the limit.
 * Without a writable cgroup the cap falls back to RLIMIT_NPROC alone, which
 * holds for every user but root (see `processCapOf`).
 */

/** The cgroup a sandbox runs in. */
export interface ExecCgroup {
  /** Moves an existing process (and, in cgroup v2, nothing else) into the cgroup. */
  add(pid: number): void;
  /** Kills what is left in it and removes it; safe to call more than once. */
  release(): void;
}

interface CgroupParent {
  /** The folder troupe's cgroups are created in (one per troupe process). */
  folder: string;
  version: 1 | 2;
}

let parent: CgroupParent | null | undefined;
let counter = 0;
/** Names this module instance's cgroups apart from other threads' (each thread loads its own). */
const instance = randomBytes(4).toString('hex');
let exitHook = false;

/**
 * Creates a cgroup capped at `maxProcesses` (processes and threads), or
 * returns undefined when this machine gives troupe no writable pids cgroup.
 */
export function createExecCgroup(maxProcesses: number): ExecCgroup | undefined {
  if (parent === undefined) parent = findParent();
  if (parent === null) return undefined;
  // Threads of one process share the parent folder: `instance` keeps names apart.
  const folder = path.join(parent.folder, `exec-${instance}-${++counter}`);
  try {
    try {
      mkdirSync(folder);
    } catch (error) {
      // Another thread that ended may have removed the empty parent: make it again.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      parent = findParent();
      if (parent === null) return undefined;
      mkdirSync(folder);
    }
    writeFileSync(path.join(folder, 'pids.max'), String(Math.max(1, Math.floor(maxProcesses))));
  } catch {
    tryRemove(folder);
    return undefined;
  }
  let released = false;
  return {
    add(pid) {
      writeFileSync(path.join(folder, 'cgroup.procs'), String(pid));
    },
    release() {
      if (released) return;
      released = true;
      killAll(folder, parent?.version ?? 1);
      removeWhenEmpty(folder);
    },
  };
}

/** How the process count of sandboxed programs is capped on this machine. */
export function processCapOf(): 'cgroup' | 'rlimit' | 'none' {
  if (parent === undefined) parent = findParent();
  if (parent !== null) return 'cgroup';
  return process.getuid?.() === 0 ? 'none' : 'rlimit';
}

/** Finds (and creates) the folder for troupe's cgroups; null when there is none to write. */
function findParent(): CgroupParent | null {
  let membership: string;
  let mounts: string;
  try {
    membership = readFileSync('/proc/self/cgroup', 'utf8');
    mounts = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  for (const candidate of candidates(membership, mounts)) {
    removeOrphans(candidate.folder);
    const folder = path.join(candidate.folder, `troupe-${process.pid}`);
    try {
      mkdirSync(folder, { recursive: true });
      if (candidate.version === 2) {
        // The pids controller must be on for the cgroups made inside.
        writeFileSync(path.join(folder, 'cgroup.subtree_control'), '+pids');
      }
      // A trial child proves pids.max can be set here.
      const trial = path.join(folder, `trial-${instance}`);
      mkdirSync(trial);
      writeFileSync(path.join(trial, 'pids.max'), '1');
      rmdirSync(trial);
      if (!exitHook) {
        exitHook = true;
        process.once('exit', () => removeAtExit(folder));
      }
      return { folder, version: candidate.version };
    } catch {
      tryRemove(path.join(folder, `trial-${instance}`));
      tryRemove(folder);
    }
  }
  return null;
}

/**
 * Removes the empty cgroups of troupe processes that are gone: a process
 * killed by a signal, or whose last exec cgroup emptied after its exit hook
 * ran, leaves its `troupe-<pid>` folder behind (rmdir fails on any that is
 * still in use, so this never touches a live one's processes).
 */
function removeOrphans(folder: string): void {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^troupe-(\d+)$/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    const orphan = path.join(folder, name);
    try {
      for (const child of readdirSync(orphan, { withFileTypes: true })) {
        if (child.isDirectory()) tryRemove(path.join(orphan, child.name));
      }
    } catch {
      continue;
    }
    tryRemove(orphan);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Where this process's own pids cgroup sits on a mounted hierarchy: v1 first, then v2. */
function candidates(membership: string, mounts: string): CgroupParent[] {
  const own = new Map<string, string>();
  for (const line of membership.split('\n')) {
    const [, controllers, where] = line.match(/^\d+:([^:]*):(.*)$/) ?? [];
    if (where === undefined) continue;
    own.set(controllers === '' ? 'v2' : (controllers ?? ''), where);
  }
  const found: CgroupParent[] = [];
  for (const line of mounts.split('\n')) {
    // mountinfo: id parent major:minor root mountpoint options ... - fstype source superoptions
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const fields = left.split(' ');
    const [fstype, , superOptions] = right.split(' ');
    const root = fields[3];
    const mountPoint = fields[4];
    if (root === undefined || mountPoint === undefined) continue;
    if (fstype === 'cgroup' && superOptions?.split(',').includes('pids')) {
      const key = [...own.keys()].find((names) => names.split(',').includes('pids'));
      const where = key === undefined ? undefined : own.get(key);
      if (where !== undefined)
        found.unshift({ folder: under(mountPoint, root, where), version: 1 });
    } else if (fstype === 'cgroup2') {
      const where = own.get('v2');
      if (where === undefined) continue;
      try {
        if (!readFileSync(path.join(mountPoint, 'cgroup.controllers'), 'utf8').includes('pids')) {
          continue;
        }
      } catch {
        continue;
      }
      found.push({ folder: under(mountPoint, root, where), version: 2 });
    }
  }
  return found;
}

/** The folder of cgroup `where` on a hierarchy mounted at `mountPoint` from `root`. */
function under(mountPoint: string, root: string, where: string): string {
  const relative = root !== '/' && where.startsWith(root) ? where.slice(root.length) : where;
  return path.join(mountPoint, relative);
}

function killAll(folder: string, version: 1 | 2): void {
  if (version === 2) {
    try {
      writeFileSync(path.join(folder, 'cgroup.kill'), '1');
      return;
    } catch {
      // Older kernels have no cgroup.kill; kill one by one.
    }
  }
  try {
    for (const pid of readFileSync(path.join(folder, 'cgroup.procs'), 'utf8').split('\n')) {
      if (pid === '') continue;
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  } catch {
    // The folder is gone.
  }
}

/** Removes a cgroup once its last process has been reaped (retrying for a few seconds). */
function removeWhenEmpty(folder: string, attempt = 0): void {
  if (tryRemove(folder) || attempt >= 100) return;
  setTimeout(() => removeWhenEmpty(folder, attempt + 1), 50).unref();
}

/** At exit: this module instance's leftover cgroups, then the parent folder if no other thread uses it. */
function removeAtExit(folder: string): void {
  try {
    for (const name of readdirSync(folder)) {
      if (name.startsWith(`exec-${instance}-`)) tryRemove(path.join(folder, name));
    }
  } catch {
    return;
  }
  tryRemove(folder);
}

function tryRemove(folder: string): boolean {
  try {
    rmdirSync(folder);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}
