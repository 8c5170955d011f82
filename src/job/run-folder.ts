import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file a running `troupe run` keeps in its run folder: who is writing the trace. */
export const WRITER_LOCK = 'writer.lock';

/** What the lock file says. */
export interface WriterLock {
  pid: number;
  startedAt: number;
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
