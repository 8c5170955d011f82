import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { MsgRequest } from '@nats-io/jetstream';
import { errorMessage, TroupeError } from '../../../errors.js';
import { checkedJson } from '../../../util/checked-line.js';
import { type NatsLink, STREAMS, subjects } from './nats-link.js';

// Well under the server's default max_payload (1 MiB).
const MAX_CHUNK_BYTES = 256 * 1024;

/**
 * A run's journal file (journal.jsonl) mirrored in JetStream as it is
 * written (stream `TROUPE_RUN_JOURNAL`, subject `troupe.runlog.<runId>`):
 * each message is a byte range of the file, `<offset>\n<bytes>`, sent once
 * the lines it is part of are whole on the file (a write larger than a NATS
 * message goes in several ranges). So the mirror is always a prefix of
 * the file, and a coordinator resumed on a machine without the run folder
 * rebuilds the file from it and replays its own turns, its tools' intents and
 * every record its sub-agents' threads sent, as on the machine it died on.
 *
 * Durability: `settled()` resolves once every chunk written so far is stored
 * in JetStream. A tool that is not idempotent runs only after its intent is
 * settled here too (the host link and the coordinator's journal wait for it),
 * so at-most-once holds for a resume on either machine. Other records are
 * mirrored behind the file: a coordinator that dies loses from the mirror at
 * most what JetStream had not acknowledged, and a resume elsewhere pays for
 * those calls again (the same machine has them in the file).
 */
export class JournalMirror {
  readonly #link: NatsLink;
  readonly #subject: string;
  #offset: number;
  readonly #pending = new Set<Promise<unknown>>();
  // Chunks JetStream did not store (a timeout, a lost connection): sent again until it does.
  readonly #failed = new Map<number, Uint8Array>();
  #failure: TroupeError | undefined;

  constructor(link: NatsLink, runId: string, offset: number) {
    this.#link = link;
    this.#subject = subjects.runJournal(runId);
    this.#offset = offset;
  }

  /** Why a chunk is not stored, while one is not: a tool's intent is refused meanwhile. */
  get failure(): TroupeError | undefined {
    return this.#failed.size === 0 ? undefined : this.#failure;
  }

  /** Mirrors bytes just written to the file after everything written before them. */
  write(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    const offset = this.#offset;
    this.#offset += bytes.length;
    if (this.#failed.size > 0) this.#retry();
    // A write of the file can be larger than a NATS message may be (1 MiB by default): chunks are
    // byte ranges placed by their offset, so one is cut anywhere.
    for (let from = 0; from < bytes.length; from += MAX_CHUNK_BYTES) {
      this.#send(offset + from, bytes.subarray(from, from + MAX_CHUNK_BYTES));
    }
  }

  /** Resolves once every chunk written so far is stored; rejects with why when one is not. */
  async settled(): Promise<void> {
    await Promise.all(this.#pending);
    if (this.#failed.size === 0) return;
    this.#retry();
    await Promise.all(this.#pending);
    const failure = this.failure;
    if (failure !== undefined) throw failure;
  }

  /** Waits (at most `graceMs`) for what is still on its way, then closes the connection. */
  async close(graceMs = 5000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.settled().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
    await this.#link.nc.close().catch(() => undefined);
  }

  /** Sends this session's mark: the mirror is cut to where the session starts writing. */
  mark(): void {
    this.#publish(new TextEncoder().encode(`=${this.#offset}\n`), this.#offset, undefined);
  }

  #retry(): void {
    const failed = [...this.#failed];
    this.#failed.clear();
    for (const [offset, bytes] of failed) this.#send(offset, bytes);
  }

  #send(offset: number, bytes: Uint8Array): void {
    const head = new TextEncoder().encode(`${offset}\n`);
    const message = new Uint8Array(head.length + bytes.length);
    message.set(head);
    message.set(bytes, head.length);
    this.#publish(message, offset, bytes);
  }

  // A mark that is not stored is not sent again: the session's ranges then extend the mirror
  // as they would have, and only a resume elsewhere that overlaps an earlier partial line loses
  // the records from there (it stops at the line whose checksum fails).
  #publish(message: Uint8Array, offset: number, bytes: Uint8Array | undefined): void {
    const stored = this.#link.writer.publish(this.#subject, message).then(
      () => undefined,
      (error: unknown) => {
        if (bytes !== undefined) this.#failed.set(offset, bytes);
        this.#failure = new TroupeError(
          'io.write_failed',
          `cannot mirror the run journal to NATS at ${this.#link.where}: ${errorMessage(error)}`,
          { cause: error },
        );
      },
    );
    this.#pending.add(stored);
    void stored.then(() => this.#pending.delete(stored));
  }
}

/**
 * The mirror's bytes from the file's start, read in stream order. A range
 * extends what is assembled from its offset on (one sent again after a
 * failure repeats bytes already there: a session's ranges are slices of one
 * file); one that starts past the end waits for the range before it. A
 * session's mark (`=<offset>`, sent when it opens) cuts what is assembled to
 * the offset it starts from: an earlier session's last range may end inside
 * a line that the new one, elsewhere, writes differently.
 */
async function readMirror(link: NatsLink, runId: string): Promise<Buffer> {
  const subject = subjects.runJournal(runId);
  const parts: Buffer[] = [];
  let length = 0;
  const waiting = new Map<number, Buffer>();
  const extend = (offset: number, bytes: Buffer): void => {
    if (offset + bytes.length <= length) return;
    const fresh = bytes.subarray(length - offset);
    parts.push(fresh);
    length += fresh.length;
  };
  const cut = (to: number): void => {
    while (length > to) {
      const last = parts.pop() as Buffer;
      length -= last.length;
      if (length < to) {
        parts.push(last.subarray(0, to - length));
        length = to;
      }
    }
    for (const offset of [...waiting.keys()]) if (offset >= to) waiting.delete(offset);
  };
  let seq = 1;
  for (;;) {
    const stored = await link.jsm.streams.getMessage(STREAMS.runJournal, {
      seq,
      next_by_subj: subject,
    } as unknown as MsgRequest);
    if (stored === null) break;
    seq = stored.seq + 1;
    const data = Buffer.from(stored.data);
    const split = data.indexOf(0x0a);
    if (split === -1) continue;
    const head = data.subarray(0, split).toString();
    const mark = head.startsWith('=');
    const offset = Number(mark ? head.slice(1) : head);
    if (!Number.isInteger(offset) || offset < 0) continue;
    if (mark) {
      cut(offset);
      continue;
    }
    const bytes = data.subarray(split + 1);
    if (offset > length) {
      waiting.set(offset, bytes);
      continue;
    }
    extend(offset, bytes);
    // Ranges that came early (their predecessor was sent again after a failure) fit now.
    for (let found = true; found; ) {
      found = false;
      for (const [at, early] of waiting) {
        if (at > length) continue;
        waiting.delete(at);
        extend(at, early);
        found = true;
      }
    }
  }
  return Buffer.concat(parts, length);
}

/**
 * Makes run `runId`'s journal file at `path` and its mirror agree, before
 * the file is opened: when the mirror holds more whole lines than the file
 * (the file is missing: a resume on another machine, or older), the file is
 * written from it. Returns how far the mirror goes (its whole lines) and the
 * file's good part (its checksummed lines), one a prefix of the other;
 * throws `usage.invalid_option` when neither is (another run's).
 */
export async function restoreFromMirror(
  link: NatsLink,
  runId: string,
  path: string,
): Promise<{ mirrored: number; file: Buffer; restored: boolean }> {
  const read = await readMirror(link, runId);
  // Whole lines only, as the file keeps them (a torn tail is the file's to cut).
  const whole = read.subarray(0, read.lastIndexOf(0x0a) + 1);
  const bytes = existsSync(path) ? readFileSync(path) : Buffer.alloc(0);
  const file = bytes.subarray(0, checkedLength(bytes));
  const shorter = Math.min(whole.length, file.length);
  if (!whole.subarray(0, shorter).equals(file.subarray(0, shorter))) {
    throw new TroupeError(
      'usage.invalid_option',
      `The journal ${path} and its mirror on NATS differ: they are not the same run's. Move the file away to resume from NATS, or resume without --nats.`,
    );
  }
  if (whole.length <= file.length) return { mirrored: whole.length, file, restored: false };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, whole);
  return { mirrored: whole.length, file: whole, restored: true };
}

/**
 * Opens the mirror of run `runId`'s journal at `path` (`restoreFromMirror`
 * first): this session's mark, then what the file holds beyond the mirror
 * (its last chunks died with the coordinator before they were stored).
 * Returns the mirror, to be given to the FileJournal opened at `path` next.
 */
export async function openJournalMirror(
  link: NatsLink,
  runId: string,
  path: string,
): Promise<{ mirror: JournalMirror; restored: boolean }> {
  const { mirrored, file, restored } = await restoreFromMirror(link, runId, path);
  const mirror = new JournalMirror(link, runId, mirrored);
  // This session writes from here: whatever an earlier one left past it is cut.
  mirror.mark();
  if (file.length > mirrored) mirror.write(file.subarray(mirrored));
  return { mirror, restored };
}

// The length of a journal file's good part: its checksummed lines up to the first torn or
// corrupt one (what the FileJournal opening it keeps; it cuts the rest off).
function checkedLength(bytes: Buffer): number {
  let offset = 0;
  for (;;) {
    const end = bytes.indexOf(0x0a, offset);
    if (end === -1) return offset;
    if (checkedJson(bytes.subarray(offset, end).toString('utf8')) === undefined) return offset;
    offset = end + 1;
  }
}
