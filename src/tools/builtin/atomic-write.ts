import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * The file operations an atomic write uses. A seam: tests inject one that
 * fails half-way to prove the old file survives.
 */
export interface AtomicWriteIo {
  /** Creates `file` (it must not exist) holding `data` with permission bits `mode`, flushed to disk. */
  writeNew(file: string, data: Buffer, mode?: number): Promise<void>;
  /** Copies `from` to `to`, which must not exist. */
  copyNew(from: string, to: string): Promise<void>;
  /** Renames `from` over `to`, atomically (same folder). */
  rename(from: string, to: string): Promise<void>;
}

/** The real file system. */
export const nodeAtomicWriteIo: AtomicWriteIo = {
  async writeNew(file, data, mode) {
    const handle = await open(file, 'wx', 0o644);
    try {
      // On the descriptor, not the path: a path can be swapped for a link to another file.
      if (mode !== undefined) await handle.chmod(mode);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  async copyNew(from, to) {
    // The source is opened without following a link: a file swapped for one is not copied.
    const source = await open(
      from,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
    let data: Buffer;
    try {
      if (!(await source.stat()).isFile())
        throw new Error(`${path.basename(from)} is not a regular file`);
      data = await source.readFile();
    } finally {
      await source.close();
    }
    await nodeAtomicWriteIo.writeNew(to, data);
  },
  rename: (from, to) => rename(from, to),
};

/** What an atomic write did. */
export interface AtomicWriteResult {
  bytes: number;
  /** Absolute path of the previous version, when there was one. */
  backup?: string | undefined;
}

/**
 * Writes `content` to `target` through a temporary file in the same folder
 * and an atomic rename, so readers see the old file or the new one, never
 * half of one. An existing file is kept as `<target>.bak` (replaced by
 * rename too, so a planted `.bak` symlink is replaced, not followed). On
 * any failure the temporary files are removed and `target` is untouched.
 */
export async function writeFileAtomic(
  target: string,
  content: string,
  io: AtomicWriteIo = nodeAtomicWriteIo,
): Promise<AtomicWriteResult> {
  const data = Buffer.from(content, 'utf8');
  const folder = path.dirname(target);
  const temporary = (suffix: string): string =>
    path.join(folder, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.${suffix}`);
  const previous = await lstat(target).catch(() => undefined);
  const newFile = temporary('tmp');
  const backupFile = previous === undefined ? undefined : temporary('bak');
  try {
    await io.writeNew(newFile, data, previous === undefined ? undefined : previous.mode & 0o777);
    let backup: string | undefined;
    if (backupFile !== undefined) {
      backup = `${target}.bak`;
      await io.copyNew(target, backupFile);
      await io.rename(backupFile, backup);
    }
    await io.rename(newFile, target);
    return { bytes: data.length, backup };
  } finally {
    await unlink(newFile).catch(() => undefined);
    if (backupFile !== undefined) await unlink(backupFile).catch(() => undefined);
  }
}
