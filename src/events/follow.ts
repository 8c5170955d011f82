import { type FSWatcher, watch } from 'node:fs';
import { open } from 'node:fs/promises';
import { type AgentEvent, AgentEventSchema } from './schema.js';

/** Options for followTrace. */
export interface FollowTraceOptions {
  /** Stops following (the iteration ends without an error). */
  signal?: AbortSignal;
  /** End the iteration after a `run.finished` event (default true). */
  untilRunFinished?: boolean;
  /** Check the file for growth at least this often, in milliseconds (default 200). */
  pollIntervalMs?: number;
  /** Called with the 1-based line number of each complete line that is not a valid event. */
  onInvalidLine?: (line: number, text: string) => void;
}

const CHUNK_BYTES = 64 * 1024;

/**
 * Tails a trace file that another process is writing, yielding each event as
 * its line is completed. It waits for the file to appear, keeps a torn last
 * line until its newline arrives, skips complete lines that are not events,
 * and ends when `signal` aborts or (by default) after `run.finished`.
 *
 * @example
 * for await (const event of followTrace('troupe-runs/r1/trace.jsonl', { signal })) {
 *   console.log(event.seq, event.type);
 * }
 */
export async function* followTrace(
  path: string,
  options: FollowTraceOptions = {},
): AsyncGenerator<AgentEvent> {
  const { signal } = options;
  const untilRunFinished = options.untilRunFinished ?? true;
  const waiter = new ChangeWaiter(path, options.pollIntervalMs ?? 200, signal);
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    let position = 0;
    let pending = '';
    let lineNumber = 0;
    const decoder = new TextDecoder('utf-8');
    const buffer = Buffer.alloc(CHUNK_BYTES);
    while (signal?.aborted !== true) {
      if (handle === undefined) {
        handle = await open(path, 'r').catch(() => undefined);
        if (handle === undefined) {
          await waiter.next();
          continue;
        }
        waiter.watchFile();
      }
      const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
      if (bytesRead === 0) {
        await waiter.next();
        continue;
      }
      position += bytesRead;
      pending += decoder.decode(buffer.subarray(0, bytesRead), { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        lineNumber += 1;
        if (line.trim() === '') continue;
        const event = parseLine(line);
        if (event === undefined) {
          options.onInvalidLine?.(lineNumber, line);
          continue;
        }
        yield event;
        if (untilRunFinished && event.type === 'run.finished') return;
        // The consumer may abort while this generator is suspended at the yield.
        if (isAborted(signal)) return;
      }
    }
  } finally {
    waiter.close();
    await handle?.close();
  }
}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function parseLine(line: string): AgentEvent | undefined {
  try {
    const parsed = AgentEventSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

// Resolves on a file-system notification, a poll tick or abort, whichever comes first.
// fs.watch alone misses changes on some file systems, so a poll backs it up.
class ChangeWaiter {
  readonly #path: string;
  readonly #intervalMs: number;
  readonly #signal: AbortSignal | undefined;
  #watcher: FSWatcher | undefined;
  #wake: (() => void) | undefined;
  #changed = false;

  constructor(path: string, intervalMs: number, signal: AbortSignal | undefined) {
    this.#path = path;
    this.#intervalMs = intervalMs;
    this.#signal = signal;
  }

  watchFile(): void {
    if (this.#watcher !== undefined) return;
    try {
      this.#watcher = watch(this.#path, { persistent: false }, () => this.#notify());
      this.#watcher.on('error', () => this.#watcher?.close());
    } catch {
      // Polling alone still works.
    }
  }

  next(): Promise<void> {
    if (this.#changed || this.#signal?.aborted === true) {
      this.#changed = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#signal?.removeEventListener('abort', done);
        this.#wake = undefined;
        this.#changed = false;
        resolve();
      };
      const timer = setTimeout(done, this.#intervalMs);
      this.#signal?.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
  }

  close(): void {
    this.#watcher?.close();
    this.#wake?.();
  }

  #notify(): void {
    this.#changed = true;
    this.#wake?.();
  }
}
