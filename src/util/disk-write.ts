import { closeSync, writeSync } from 'node:fs';
import { TroupeError } from '../errors.js';

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

/**
 * An append-only file (the run's trace, its journal) that never throws on
 * write: a short write goes on where it stopped, the bytes a failed write
 * left are kept and written first by the next `append`, and the failure is
 * kept (`failure`, an `io.write_failed` error naming the file and the cause
 * in words) and told to `onError` once, until a write succeeds again.
 */
export class FileAppender {
  readonly path: string;
  readonly #what: string;
  readonly #onError: ((error: TroupeError) => void) | undefined;
  #fd: number | undefined;
  // Bytes a failed write left unwritten (the end of a torn line first): written before anything else.
  #unwritten: Buffer | undefined;
  #failure: TroupeError | undefined;
  readonly #onWritten: ((bytes: Buffer) => void) | undefined;
  // Bytes a failed write did write (up to where it stopped): reported with the rest once that is.
  #written: Buffer | undefined;

  /**
   * `what` names the file in a failure's message: "cannot write the <what> to <path>".
   * `onWritten` is given the bytes of every write once they are all on the file, so
   * never a line a failed write cut short (a mirror of the file gets whole lines only).
   */
  constructor(
    fd: number,
    path: string,
    what: string,
    onError?: ((error: TroupeError) => void) | undefined,
    onWritten?: ((bytes: Buffer) => void) | undefined,
  ) {
    this.#fd = fd;
    this.path = path;
    this.#what = what;
    this.#onError = onError;
    this.#onWritten = onWritten;
  }

  /** Why the last write failed, while bytes wait to be written; undefined once all are. */
  get failure(): TroupeError | undefined {
    return this.#failure;
  }

  /**
   * Appends `lines`, each followed by a newline (with `terminated`, each
   * already ends in one), after what earlier failed writes left, with one
   * write. Never throws; cheap when there is nothing to write.
   */
  append(lines: readonly string[], terminated = false): void {
    if (this.#fd === undefined) return;
    if (lines.length === 0 && this.#unwritten === undefined) return;
    const bytes = encodeLines(lines, terminated);
    const all = this.#unwritten === undefined ? bytes : Buffer.concat([this.#unwritten, bytes]);
    const outcome = writeFully(this.#fd, all);
    if (outcome.ok) {
      this.#unwritten = undefined;
      this.#failure = undefined;
      if (this.#onWritten !== undefined) {
        const written = this.#written;
        this.#written = undefined;
        this.#onWritten(written === undefined ? all : Buffer.concat([written, all]));
      }
      return;
    }
    if (this.#onWritten !== undefined) {
      const head = all.subarray(0, all.length - outcome.rest.length);
      this.#written =
        this.#written === undefined ? Buffer.from(head) : Buffer.concat([this.#written, head]);
    }
    this.#unwritten = Buffer.from(outcome.rest);
    if (this.#failure !== undefined) return;
    this.#failure = new TroupeError(
      'io.write_failed',
      `cannot write the ${this.#what} to ${this.path}: ${describeDiskError(outcome.error)}`,
      { cause: outcome.error, details: { path: this.path, errno: outcome.error.code } },
    );
    this.#onError?.(this.#failure);
  }

  /** Closes the file (after one last try at what is unwritten). Safe to call twice. */
  close(): void {
    this.append([]);
    if (this.#fd === undefined) return;
    try {
      closeSync(this.#fd);
    } catch {
      // Whatever close could not write was said by append, or is lost with the disk.
    }
    this.#fd = undefined;
  }
}

/**
 * The UTF-8 bytes of `lines` (each followed by a newline unless
 * `terminated`). Encoded line by line into one buffer: encoding one string
 * made of thousands of appended lines first flattens it, measured ~20 times
 * slower (2 MB: 19 ms against 0.8 ms).
 */
export function encodeLines(lines: readonly string[], terminated: boolean): Buffer {
  let size = terminated ? 0 : lines.length;
  for (const line of lines) size += Buffer.byteLength(line);
  const bytes = Buffer.allocUnsafe(size);
  let offset = 0;
  for (const line of lines) {
    offset += bytes.write(line, offset);
    if (!terminated) {
      bytes[offset] = 0x0a;
      offset += 1;
    }
  }
  return bytes;
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
