import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import {
  type AgentJournal,
  type JournalEntry,
  JournalEntrySchema,
  readJournalLine,
} from '../../agent/journal.js';
import { TroupeError } from '../../errors.js';
import type { Message } from '../../model/types.js';
import { checkedJson, checkedLine } from '../../util/checked-line.js';
import { FileAppender } from '../../util/disk-write.js';
import { redactStrings } from '../../util/redact.js';

/**
 * A run's journal: what every agent did that a resume must not pay for
 * again (model responses, tool results, tool calls that started), and the
 * spawns and ends of actors. Agents are named by a stable key (their role,
 * task, parent's key and spawn ordinal), so the same agent of a resumed run
 * finds its records. `FileJournal` keeps it in the run folder; another
 * backend (a JetStream stream) fits behind the same interface.
 */
export interface Journal {
  /** What was recorded for the agent `key`, in order (earlier attempts, then this one). */
  entries(key: string): readonly JournalEntry[];
  /**
   * What the journal held for the agent `key` when it was opened (a resumed
   * run's records), without what was appended since: all an agent's first
   * attempt in this process can have. Without it, `entries` is asked.
   */
  recorded?(key: string): readonly JournalEntry[];
  /** Adds a record for the agent `key`; durable after the next `flush`. */
  append(key: string, entry: JournalEntry): void;
  /**
   * As `append`, for a record an actor thread already encoded with
   * `journalLine(key, entry)`: a backend that keeps that very text takes it
   * as it came, instead of the main thread encoding every record again.
   */
  appendLine?(key: string, line: string): void;
  /**
   * As `appendLine`, for the lines of several agents in one text (an actor
   * thread's batch, each line made by `journalLine` with the agent's key).
   */
  appendLines?(text: string): void;
  /** Notes an actor's spawn (its key, id and role) or its end. */
  note(record: JournalNote): void;
  /** Forgets the in-memory entries of an agent that completed (its result is stored). */
  release(key: string): void;
  /** Writes what was appended since the last flush. Cheap when there is nothing to write. Never throws. */
  flush(): void;
  /** Set while a write failed and records wait (a full disk): what a tool's intent is refused with. */
  readonly failure?: TroupeError | undefined;
  /**
   * Present when the journal is also kept elsewhere (a NATS mirror, see
   * JournalMirror): resolves once everything flushed so far is stored there
   * too, rejects with why not. A tool that is not idempotent waits for it
   * before it runs, so its intent is durable wherever a resume may read it.
   */
  readonly durable?: (() => Promise<void>) | undefined;
  close(): void;
}

/** Where a FileJournal's file is mirrored as it is written (JournalMirror). */
export interface JournalFileMirror {
  /** Bytes just written to the file, whole lines, after everything written before them. */
  write(bytes: Uint8Array): void;
  /** Resolves once everything written so far is stored; rejects with why when it is not. */
  settled(): Promise<void>;
  /** Why something written is not stored, while it is not. */
  readonly failure: TroupeError | undefined;
}

/**
 * A spawn or an end, for the record (who ran, with which key); in a chat
 * session's journal, a turn that starts (its input, and the agent's model
 * call count then) and the conversation as it stood after a turn, /clear or /load.
 */
export type JournalNote =
  | { kind: 'spawn'; key: string; id: string; role: string; parentKey: string }
  | { kind: 'finish'; key: string; id: string; status: string }
  | { kind: 'chat.turn'; input: string; step: number }
  | { kind: 'chat.history'; messages: Message[] };

const HeaderSchema = z.object({
  journal: z.literal(1),
  runId: z.string(),
  task: z.string(),
});

const LineSchema = z.union([
  z.object({ a: z.string(), e: JournalEntrySchema }),
  z.object({ n: z.record(z.string(), z.unknown()) }),
]);

/** What reading a journal file found. */
export interface JournalContents {
  runId: string;
  task: string;
  /** Entries by agent key, in order. */
  entries: Map<string, JournalEntry[]>;
  notes: JournalNote[];
  /** Lines dropped at the end: a torn or corrupt tail left by a crash. */
  droppedLines: number;
  /** Byte length of the good part (a writer truncates the file to it before appending). */
  goodBytes: number;
}

/**
 * `<crc32 of the json, 8 hex digits> <json>`: a torn or altered line fails its
 * checksum. With `redact`, every string with a secret in it is redacted first.
 */
function line(
  value: unknown,
  redact?: (text: string) => string,
  json: string = JSON.stringify(value),
): string {
  if (redact !== undefined && redact(json) !== json) {
    return checkedLine(JSON.stringify(redactStrings(value, redact)));
  }
  return checkedLine(json);
}

/**
 * `JSON.stringify({ n: record })`, the same text, for the two notes every
 * actor gets (its spawn and its end) built from their fields: the main
 * thread writes two per agent, and walking the object cost about twice this.
 */
export function noteJson(record: JournalNote): string {
  const text = JSON.stringify;
  switch (record.kind) {
    case 'spawn':
      return `{"n":{"kind":"spawn","key":${text(record.key)},"id":${text(record.id)},"role":${text(record.role)},"parentKey":${text(record.parentKey)}}}`;
    case 'finish':
      return `{"n":{"kind":"finish","key":${text(record.key)},"id":${text(record.id)},"status":${text(record.status)}}}`;
    default:
      return text({ n: record });
  }
}

/**
 * Reads a journal file. Reading stops at the first line that is torn (no
 * newline), fails its checksum or is not JSON: everything from there on is
 * dropped, as after a crash mid-write. Throws `usage.invalid_option` when
 * the file is not a troupe journal or a checksummed record does not fit this
 * version's schema.
 */
export function readJournal(path: string): JournalContents {
  const text = readFileSync(path, 'utf8');
  const entries = new Map<string, JournalEntry[]>();
  const notes: JournalNote[] = [];
  let header: z.infer<typeof HeaderSchema> | undefined;
  let offset = 0;
  let goodBytes = 0;
  let droppedLines = 0;
  while (offset < text.length) {
    const end = text.indexOf('\n', offset);
    const raw = end === -1 ? text.slice(offset) : text.slice(offset, end);
    const value = end === -1 ? undefined : checked(raw);
    if (value === undefined) {
      droppedLines = text
        .slice(offset)
        .split('\n')
        .filter((rest) => rest !== '').length;
      break;
    }
    offset = end + 1;
    goodBytes = Buffer.byteLength(text.slice(0, offset));
    if (header === undefined) {
      const parsed = HeaderSchema.safeParse(value);
      if (!parsed.success) {
        throw new TroupeError(
          'usage.invalid_option',
          `${path} is not a troupe journal (its first line is not a journal header). Move it away to start the run afresh.`,
        );
      }
      header = parsed.data;
      continue;
    }
    const parsed = LineSchema.safeParse(value);
    if (!parsed.success) {
      throw new TroupeError(
        'usage.invalid_option',
        `${path} has a record this version of troupe cannot read (${z.prettifyError(parsed.error).replace(/\s+/g, ' ').slice(0, 300)}). Resume it with the troupe version that wrote it, or move the journal away to run afresh.`,
      );
    }
    if ('a' in parsed.data) {
      const list = entries.get(parsed.data.a) ?? [];
      list.push(parsed.data.e);
      entries.set(parsed.data.a, list);
    } else notes.push(parsed.data.n as JournalNote);
  }
  if (header === undefined) {
    throw new TroupeError(
      'usage.invalid_option',
      `${path} has no journal header (it is empty or torn at its first line). Move it away to start the run afresh.`,
    );
  }
  return { runId: header.runId, task: header.task, entries, notes, droppedLines, goodBytes };
}

function checked(raw: string): unknown {
  const json = checkedJson(raw);
  if (json === undefined) return undefined;
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

/**
 * The journal as an append-only JSONL file (`journal.jsonl` in the run
 * folder). Appends are buffered and written by `flush` (the runtime flushes
 * after each batch from its threads and before every `agent.finished`, so
 * what the trace shows as done is in the journal first). A resumed run opens
 * the same file: what it holds is replayed, its torn tail is cut off, and
 * new records go after it. Records appended while the run goes on are not
 * kept in memory: `entries` (a retried actor's) reads them back from the
 * file, as a resume would.
 */
export class FileJournal implements Journal {
  readonly path: string;
  readonly runId: string;
  readonly task: string;
  /** Lines dropped from a torn tail when the file was opened. */
  readonly droppedLines: number;
  // The entries of the file's first #read bytes, by agent key (released agents' dropped).
  readonly #entries: Map<string, JournalEntry[]>;
  // What the file held when it was opened, by agent key (released agents' dropped).
  readonly #opened: Map<string, readonly JournalEntry[]>;
  readonly #file: FileAppender;
  // Lines appended since the last flush, each with its newline (one item may hold many lines).
  #buffer: string[] = [];
  readonly #redact: ((text: string) => string) | undefined;
  readonly #mirror: JournalFileMirror | undefined;
  readonly durable: (() => Promise<void>) | undefined;
  // How much of the file #entries holds, and whether records were appended after it.
  #read: number;
  #unread = false;

  /**
   * Opens (or creates) the journal of run `runId`. An existing journal of
   * another task is refused with a message saying what to do. With `redact`
   * (createRedactor's), secrets are redacted from every record written; a
   * recorded request whose messages held one then no longer matches on
   * replay, so that call goes live again rather than replay redacted text.
   * A write that fails later (disk full) never throws: the records stay
   * buffered for the next flush, and `onError` is told (once per failure).
   */
  constructor(
    path: string,
    run: { runId: string; task: string },
    options: {
      redact?: ((text: string) => string) | undefined;
      onError?: ((error: TroupeError) => void) | undefined;
      /** Also keeps what is written elsewhere (a NATS mirror; see `durable`). */
      mirror?: JournalFileMirror | undefined;
    } = {},
  ) {
    this.path = path;
    this.#redact = options.redact;
    const mirror = options.mirror;
    this.#mirror = mirror;
    this.durable = mirror === undefined ? undefined : () => mirror.settled();
    this.runId = run.runId;
    this.task = run.task;
    mkdirSync(dirname(path), { recursive: true });
    if (existsSync(path) && readFileSync(path).length > 0) {
      const contents = readJournal(path);
      if (contents.task !== run.task || contents.runId !== run.runId) {
        throw new TroupeError(
          'usage.invalid_option',
          `The journal ${path} belongs to ${contents.runId === run.runId ? 'another task' : `run ${contents.runId}`} (${JSON.stringify(contents.task.slice(0, 80))}), not to this one; resume with the task it recorded, or move it away to run afresh.`,
        );
      }
      this.#opened = contents.entries;
      // Lists of their own: records read back later are added to these, not to what was opened.
      this.#entries = new Map([...contents.entries].map(([key, list]) => [key, [...list]]));
      this.droppedLines = contents.droppedLines;
      this.#read = contents.goodBytes;
      const fd = openSync(path, 'r+');
      // Cut the torn tail, so the next record starts on a line of its own.
      ftruncateSync(fd, contents.goodBytes);
      closeSync(fd);
    } else {
      this.#entries = new Map();
      this.#opened = new Map();
      this.droppedLines = 0;
      const header = line({ journal: 1, runId: run.runId, task: run.task });
      writeFileSync(path, header);
      this.#read = Buffer.byteLength(header);
      mirror?.write(Buffer.from(header));
    }
    this.#file = new FileAppender(
      openSync(path, 'a'),
      path,
      'journal',
      options.onError,
      mirror === undefined ? undefined : (bytes) => mirror.write(bytes),
    );
  }

  entries(key: string): readonly JournalEntry[] {
    if (this.#unread) this.#readAppended();
    return this.#entries.get(key) ?? [];
  }

  recorded(key: string): readonly JournalEntry[] {
    return this.#opened.get(key) ?? [];
  }

  append(key: string, entry: JournalEntry): void {
    this.#buffer.push(line({ a: key, e: entry }, this.#redact));
    this.#unread = true;
  }

  appendLine(key: string, text: string): void {
    // Another agent's line (a mistake of the sender), or one with a secret in it: encoded here.
    // (A slice compared, not startsWith with a built prefix: measured 10 times faster.)
    const prefix = `{"a":${JSON.stringify(key)},"e":`;
    if (text.slice(9, 9 + prefix.length) !== prefix || !text.endsWith('\n')) {
      const read = readJournalLine(text);
      if (read !== undefined) this.append(key, read.entry);
      return;
    }
    const redact = this.#redact;
    if (redact !== undefined) {
      const json = text.slice(9, -1);
      if (redact(json) !== json) {
        this.append(key, (readJournalLine(text) as { entry: JournalEntry }).entry);
        return;
      }
    }
    this.#buffer.push(text);
    this.#unread = true;
  }

  /**
   * Appends lines made by `journalLine`, one text (an actor thread's batch):
   * written as it came, unless a line has a secret in it (that one is
   * encoded again, redacted). A text not ending in a newline is not taken.
   */
  appendLines(text: string): void {
    if (!text.endsWith('\n')) return;
    const redact = this.#redact;
    if (redact !== undefined && redact(text) !== text) {
      for (const one of text.slice(0, -1).split('\n')) {
        const read = readJournalLine(one);
        if (read !== undefined) this.appendLine(read.key, `${one}\n`);
      }
      return;
    }
    this.#buffer.push(text);
    this.#unread = true;
  }

  note(record: JournalNote): void {
    this.#buffer.push(line({ n: record }, this.#redact, noteJson(record)));
    this.#unread = true;
  }

  /** Forgets an agent's entries; read back later from the file, an agent noted finished `completed` is left out too. */
  release(key: string): void {
    this.#entries.delete(key);
    this.#opened.delete(key);
  }

  /** Why the last write failed, while records wait to be written (or to be mirrored); undefined once all are. */
  get failure(): TroupeError | undefined {
    return this.#file.failure ?? this.#mirror?.failure;
  }

  flush(): void {
    const lines = this.#buffer;
    this.#buffer = [];
    this.#file.append(lines, true);
  }

  close(): void {
    this.flush();
    this.#file.close();
  }

  // Reads the records appended since the last read back from the file (written first): what a
  // retried actor continues from is what a resume would. Records a failed write holds back are
  // read once written.
  #readAppended(): void {
    this.flush();
    const fd = openSync(this.path, 'r');
    let text: string;
    try {
      const size = fstatSync(fd).size;
      const bytes = Buffer.allocUnsafe(Math.max(0, size - this.#read));
      let got = 0;
      while (got < bytes.length) {
        const count = readSync(fd, bytes, got, bytes.length - got, this.#read + got);
        if (count <= 0) break;
        got += count;
      }
      // Whole lines only: a torn one (a write cut short) is read once it is whole.
      const end = bytes.subarray(0, got).lastIndexOf(0x0a) + 1;
      text = bytes.subarray(0, end).toString('utf8');
      this.#read += end;
    } finally {
      closeSync(fd);
    }
    this.#unread = this.#file.failure !== undefined;
    for (const raw of text.split('\n')) {
      const value =
        raw === '' ? undefined : (checked(raw) as { a?: unknown; e?: unknown; n?: unknown });
      if (value === undefined || value === null || typeof value !== 'object') continue;
      if (typeof value.a === 'string' && typeof value.e === 'object' && value.e !== null) {
        const list = this.#entries.get(value.a);
        if (list === undefined) this.#entries.set(value.a, [value.e as JournalEntry]);
        else list.push(value.e as JournalEntry);
        continue;
      }
      const note = value.n as Partial<Extract<JournalNote, { kind: 'finish' }>> | undefined;
      // A completed agent's entries are released (its result is stored), as they were in memory.
      if (note?.kind === 'finish' && note.status === 'completed' && typeof note.key === 'string')
        this.#entries.delete(note.key);
    }
  }
}

/** The agent side of a journal for the agent `key`, for agents in the main thread (the coordinator). */
export function agentJournal(journal: Journal, key: string): AgentJournal {
  return {
    recorded: [...journal.entries(key)],
    record: (entry: JournalEntry): void => {
      journal.append(key, entry);
      journal.flush();
    },
    intend: (entry: JournalEntry): Promise<void> => {
      journal.append(key, entry);
      journal.flush();
      // Not durable: the tool must not run (on resume it would look never started).
      if (journal.failure !== undefined) return Promise.reject(journal.failure);
      // Kept elsewhere too (a NATS mirror): the tool runs once it is stored there.
      return journal.durable?.() ?? Promise.resolve();
    },
  };
}
