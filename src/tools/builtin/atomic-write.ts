import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, copyFile, open, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * The file operations an atomic write uses. A seam: tests inject one that
 * fails half-way to prove the old file survives.
 */
export interface AtomicWriteIo {
  /** Creates `file` (it must not exist) holding `data`, flushed to disk. */
  writeNew(file: string, data: Buffer): Promise<void>;
  /** Copies `from` to `to`, which must not exist. */
  copyNew(from: string, to: string): Promise<void>;
  /** Renames `from` over `to`, atomically (same folder). */
  rename(from: string, to: string): Promise<void>;
}

/** The real file system. */
export const nodeAtomicWriteIo: AtomicWriteIo = {
  async writeNew(file, data) {
    const handle = await open(file, 'wx', 0o644);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  copyNew: (from, to) => copyFile(from, to, constants.COPYFILE_EXCL),
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
  const previous = await stat(target).catch(() => undefined);
  const newFile = temporary('tmp');
  const backupFile = previous === undefined ? undefined : temporary('bak');
  try {
    await io.writeNew(newFile, data);
    if (previous !== undefined) await chmod(newFile, previous.mode & 0o777);
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
