import { existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { TroupeError } from '../errors.js';
import { FileAppender } from '../util/disk-write.js';
import { createJsonRedactor } from '../util/redact.js';
import type { EventBus, Unsubscribe } from './bus.js';
import { type AgentEvent, AgentEventSchema } from './schema.js';

/** Options for a TraceWriter. */
export interface TraceWriterOptions {
  /** Environment whose secret values are redacted from every line (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Flush buffered lines at least this often, in milliseconds (default 250). */
  flushIntervalMs?: number;
  /**
   * Called once, the first time a write fails (a full disk, an I/O error),
   * with an `io.write_failed` error that names the file and the cause. The
   * lines not written stay buffered and are written by a later flush.
   */
  onError?: (error: TroupeError) => void;
}

/**
 * Writes a run's events as JSON Lines, one event per line, secrets redacted.
 * Lines are buffered and flushed at `run.started` and `run.finished`, at the end of the
 * event-loop turn in which an `agent.finished` arrived (one write for all the
 * agents that finished in that turn: 100,000 agents are not 100,000 writes),
 * on a timer, and on close, so a killed run loses at most the last interval.
 * A write that fails (disk full) never throws, from the timer or elsewhere:
 * the unwritten lines are kept, `failure` is set, `onError` is told once.
 */
export class TraceWriter {
  readonly path: string;
  readonly #serialize: (value: unknown, made?: string) => string;
  readonly #file: FileAppender;
  #closed = false;
  #buffer: string[] = [];
  readonly #timer: NodeJS.Timeout;
  #pendingFlush: NodeJS.Immediate | undefined;

  constructor(path: string, options: TraceWriterOptions = {}) {
    if (typeof path !== 'string' || path.trim() === '') {
      throw new TroupeError(
        'usage.invalid_option',
        `new TraceWriter(path) needs the trace file's path, got ${JSON.stringify(path)}.`,
      );
    }
    const interval = options.flushIntervalMs;
    if (interval !== undefined && !(Number.isFinite(interval) && interval > 0)) {
      throw new TroupeError(
        'usage.invalid_option',
        `flushIntervalMs must be a positive number of milliseconds, got ${interval}.`,
      );
    }
    this.path = path;
    this.#serialize = createJsonRedactor(options.env);
    mkdirSync(dirname(path), { recursive: true });
    this.#file = new FileAppender(openSync(path, 'a'), path, 'trace', options.onError);
    this.#timer = setInterval(() => this.flush(), options.flushIntervalMs ?? 250);
    this.#timer.unref();
  }

  /**
   * Appends one event (redacted). `text`, when given, is the event's JSON
   * text already made (`EventBus.json`), written instead of serializing it again.
   */
  write(event: AgentEvent, text?: string): void {
    if (this.#closed) return;
    this.#buffer.push(this.#serialize(event, text));
    // run.started is written at once: it holds the task and options a resume
    // needs, even for a run killed within its first flush interval.
    if (event.type === 'run.finished' || event.type === 'run.started') this.flush();
    else if (event.type === 'agent.finished' && this.#pendingFlush === undefined) {
      this.#pendingFlush = setImmediate(() => {
        this.#pendingFlush = undefined;
        this.flush();
      });
    }
  }

  /** Subscribes to every event on `bus`; returns the unsubscribe function. */
  attach(bus: EventBus): Unsubscribe {
    return bus.onAny((event) => this.write(event, bus.json(event)));
  }

  /** Why the last write failed, while lines are waiting to be written; undefined once all are. */
  get failure(): TroupeError | undefined {
    return this.#file.failure;
  }

  /** Writes buffered lines to disk now. Never throws: a failed write keeps them for the next flush. */
  flush(): void {
    if (this.#closed) return;
    const lines = this.#buffer;
    this.#buffer = [];
    this.#file.append(lines);
  }

  /** Flushes and closes the file. Safe to call twice. */
  close(): void {
    clearInterval(this.#timer);
    if (this.#pendingFlush !== undefined) clearImmediate(this.#pendingFlush);
    this.#pendingFlush = undefined;
    this.flush();
    this.#closed = true;
    this.#file.close();
  }
}

/** The result of reading a trace: the events, and lines that could not be read. */
export interface TraceContents {
  events: AgentEvent[];
  /** 1-based line numbers that were not valid events (a torn last line after a crash, say). */
  invalidLines: number[];
}

/** Parses JSONL text into events, keeping note of lines that are not valid events. */
export function parseTrace(text: string): TraceContents {
  const events: AgentEvent[] = [];
  const invalidLines: number[] = [];
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    try {
      const parsed = AgentEventSchema.safeParse(JSON.parse(line));
      if (parsed.success) events.push(parsed.data);
      else invalidLines.push(index + 1);
    } catch {
      invalidLines.push(index + 1);
    }
  });
  return { events, invalidLines };
}

/** Reads a trace file written by TraceWriter. Throws ENOENT as a plain Node error when missing. */
export function readTrace(path: string): TraceContents {
  return parseTrace(readFileSync(path, 'utf8'));
}

/** True when a file exists at `path`. */
export function traceExists(path: string): boolean {
  return existsSync(path);
}
