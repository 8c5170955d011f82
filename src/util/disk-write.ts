import { writeSync } from 'node:fs';

/**
 * Writing the run's files when the disk may fail: a short write goes on
 * where it stopped, and a failure says what was not written and why in
 * words a person acts on ("disk full"), instead of an errno.
 */

/** What `writeFully` managed: everything, or the bytes not written and the error that stopped it. */
export type WriteOutcome = { ok: true } | { ok: false; rest: Buffer; error: NodeJS.ErrnoException };

/**
 * Writes all of `data` at the end of `fd`. `writeSync` may write less than
 * asked (a disk that fills mid-write); this goes on from there until all is
 * written or a write fails. Never throws.
 */
export function writeFully(fd: number, data: string | Buffer): WriteOutcome {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  let offset = 0;
  while (offset < bytes.length) {
    try {
      const written = writeSync(fd, bytes, offset, bytes.length - offset);
      // A write of nothing that raised no error would loop for ever: the disk said no.
      if (written <= 0) {
        return { ok: false, rest: bytes.subarray(offset), error: noSpace() };
      }
      offset += written;
    } catch (error) {
      return { ok: false, rest: bytes.subarray(offset), error: error as NodeJS.ErrnoException };
    }
  }
  return { ok: true };
}

/** Error codes that mean the storage itself failed (as opposed to a path the user must change). */
const STORAGE_CODES = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EFBIG', 'EROFS']);

/** True when a file system error means the storage failed: full, out of quota, broken, read-only. */
export function isStorageError(error: unknown): boolean {
  return STORAGE_CODES.has((error as NodeJS.ErrnoException | undefined)?.code ?? '');
}

/** A file system error in words: "disk full", "read-only file system", or its own message. */
export function describeDiskError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOSPC':
      return 'disk full';
    case 'EDQUOT':
      return 'disk quota exceeded';
    case 'EIO':
      return 'input/output error (the disk or its connection failed)';
    case 'EFBIG':
      return 'file too large for this file system';
    case 'EROFS':
      return 'read-only file system';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'a file is in the way of the folder';
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

function noSpace(): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error('ENOSPC: no space left on device, write');
  error.code = 'ENOSPC';
  return error;
}
