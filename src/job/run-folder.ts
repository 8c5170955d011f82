import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { TroupeError } from '../errors.js';
import { describeDiskError, isStorageError } from '../util/disk-write.js';

/** The file a running `troupe run` keeps in its run folder: who is writing the trace. */
export const WRITER_LOCK = 'writer.lock';

/** What the lock file says. */
export interface WriterLock {
  pid: number;
  startedAt: number;
}

/**
 * Creates the run folder `runDir` under the output folder `out` (and `out`
 * itself when missing) and takes its writer lock, which also proves the
 * folder writable. A folder that cannot be used throws with its real cause:
 * `usage.invalid_option` for a path the user must change (read-only file
 * system, no permission, a file in the way), `io.write_failed` for storage
 * that failed (disk full, I/O error). Node's own recursive mkdir reports a
 * read-only file system as ENOENT, so each missing folder is made in turn.
 * Returns the function that removes the lock.
 */
export function prepareRunFolder(runDir: string, out: string): () => void {
  const missing: string[] = [];
  for (let path = runDir; !existsSync(path); path = dirname(path)) {
    missing.unshift(path);
    if (dirname(path) === path) break;
  }
  const blocker = missing.length === 0 ? runDir : dirname(missing[0] as string);
  if (existsSync(blocker) && !statSync(blocker).isDirectory()) {
    throw new TroupeError(
      'usage.invalid_option',
      `Cannot use the output folder ${out}: ${blocker} is a file, not a folder. Pick another --out, or move the file.`,
    );
  }
  let step = runDir;
  try {
    for (step of missing) mkdirSync(step);
    step = join(runDir, WRITER_LOCK);
    return holdWriterLock(runDir);
  } catch (error) {
    const cause = `${describeDiskError(error)} (${(error as NodeJS.ErrnoException).code ?? 'error'} at ${step})`;
    if (isStorageError(error) && (error as NodeJS.ErrnoException).code !== 'EROFS') {
      throw new TroupeError(
        'io.write_failed',
        `Cannot write the run folder ${runDir}: ${cause}. Free some space, or pick another --out.`,
        { cause: error },
      );
    }
    throw new TroupeError(
      'usage.invalid_option',
      `Cannot use the output folder ${out}: ${cause}. Pick another --out.`,
      { cause: error },
    );
  }
}

/** Marks `runDir` as being written by this process; returns the function that removes the mark. */
export function holdWriterLock(runDir: string): () => void {
  const path = join(runDir, WRITER_LOCK);
  writeFileSync(path, `${JSON.stringify({ pid: process.pid, startedAt: Date.now() })}\n`);
  return () => rmSync(path, { force: true });
}

/** The lock of a run folder, or undefined when there is none (or it is unreadable). */
export function readWriterLock(runDir: string): WriterLock | undefined {
  try {
    const value = JSON.parse(
      readFileSync(join(runDir, WRITER_LOCK), 'utf8'),
    ) as Partial<WriterLock>;
    return typeof value.pid === 'number' && typeof value.startedAt === 'number'
      ? { pid: value.pid, startedAt: value.startedAt }
      : undefined;
  } catch {
    return undefined;
  }
}

/** True when a process with this pid exists (signal 0 probes without sending anything). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Why nobody will write more to this run's trace, or undefined while its
 * writer lives: the lock's process is gone (killed, crashed), or there is no lock.
 */
export function writerGone(runDir: string): string | undefined {
  const lock = readWriterLock(runDir);
  if (lock === undefined) return 'no process is writing this run (its folder has no writer.lock)';
  if (!isProcessAlive(lock.pid))
    return `the process that was writing this run (pid ${lock.pid}) is gone`;
  return undefined;
}

/** Run ids under `out` (folders holding a trace.jsonl), newest first. Ids start with the time. */
export function listRunIds(out: string): string[] {
  if (!existsSync(out) || !statSync(out).isDirectory()) return [];
  return readdirSync(out, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(out, entry.name, 'trace.jsonl')))
    .map((entry) => entry.name)
    .sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
}
