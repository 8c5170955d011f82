import {
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
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
  /** Adds a record for the agent `key`; durable after the next `flush`. */
  append(key: string, entry: JournalEntry): void;
  /**
   * As `append`, for a record an actor thread already encoded with
   * `journalLine(key, entry)`: a backend that keeps that very text takes it
   * as it came, instead of the main thread encoding every record again.
   */
  appendLine?(key: string, line: string): void;
  /** Notes an actor's spawn (its key, id and role) or its end. */
  note(record: JournalNote): void;
  /** Forgets the in-memory entries of an agent that completed (its result is stored). */
  release(key: string): void;
  /** Writes what was appended since the last flush. Cheap when there is nothing to write. Never throws. */
  flush(): void;
  /** Set while a write failed and records wait (a full disk): what a tool's intent is refused with. */
  readonly failure?: TroupeError | undefined;
  close(): void;
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
function line(value: unknown, redact?: (text: string) => string): string {
  let json = JSON.stringify(value);
  if (redact !== undefined && redact(json) !== json) {
    json = JSON.stringify(redactStrings(value, redact));
  }
  return checkedLine(json);
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
 * new records go after it.
 */
export class FileJournal implements Journal {
  readonly path: string;
  readonly runId: string;
  readonly task: string;
  /** Lines dropped from a torn tail when the file was opened. */
  readonly droppedLines: number;
  // An actor thread's records stay the lines they came as until a retry or resume asks for them.
  readonly #entries: Map<string, Array<JournalEntry | string>>;
  readonly #file: FileAppender;
  // Lines appended since the last flush, each with its newline.
  #buffer: string[] = [];
  readonly #redact: ((text: string) => string) | undefined;

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
    } = {},
  ) {
    this.path = path;
    this.#redact = options.redact;
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
      this.#entries = contents.entries;
      this.droppedLines = contents.droppedLines;
      const fd = openSync(path, 'r+');
      // Cut the torn tail, so the next record starts on a line of its own.
      ftruncateSync(fd, contents.goodBytes);
      closeSync(fd);
    } else {
      this.#entries = new Map();
      this.droppedLines = 0;
      writeFileSync(path, line({ journal: 1, runId: run.runId, task: run.task }));
    }
    this.#file = new FileAppender(openSync(path, 'a'), path, 'journal', options.onError);
  }

  entries(key: string): readonly JournalEntry[] {
    const list = this.#entries.get(key);
    if (list === undefined) return [];
    if (!list.some((item) => typeof item === 'string')) return list as JournalEntry[];
    const entries: JournalEntry[] = [];
    for (const item of list) {
      const entry = typeof item === 'string' ? readJournalLine(item)?.entry : item;
      if (entry !== undefined) entries.push(entry);
    }
    this.#entries.set(key, entries);
    return entries;
  }

  append(key: string, entry: JournalEntry): void {
    const list = this.#entries.get(key);
    if (list === undefined) this.#entries.set(key, [entry]);
    else list.push(entry);
    this.#buffer.push(line({ a: key, e: entry }, this.#redact));
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
    const list = this.#entries.get(key);
    if (list === undefined) this.#entries.set(key, [text]);
    else list.push(text);
    this.#buffer.push(text);
  }

  note(record: JournalNote): void {
    this.#buffer.push(line({ n: record }, this.#redact));
  }

  release(key: string): void {
    this.#entries.delete(key);
  }

  /** Why the last write failed, while records wait to be written; undefined once all are. */
  get failure(): TroupeError | undefined {
    return this.#file.failure;
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
      return journal.failure === undefined ? Promise.resolve() : Promise.reject(journal.failure);
    },
  };
}
