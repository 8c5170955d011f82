import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { TroupeError } from '../../../errors.js';

/** What JetStream says when it has stored a message: the stream and its sequence there. */
export interface StoredAck {
  stream: string;
  seq: number;
  duplicate: boolean;
}

interface Waiting {
  resolve(ack: StoredAck): void;
  reject(error: TroupeError): void;
  sentAt: number;
  subject: string;
}

/**
 * Publishes to JetStream streams with every acknowledgement coming back on
 * one subscription of its own (`<inbox>.<n>`), instead of a request per
 * message. A fan-out writes thousands of spawns, journal entries and
 * results a second; the client's request path makes a promise, a timer and
 * an Error (with its stack) for each, which showed up in the profile of the
 * NATS fan-out as a sixth of a node's main-thread time. Unanswered writes
 * fail after `timeoutMs`, swept once a second.
 */
export class StreamWriter {
  readonly #nc: NatsConnection;
  readonly #inbox: string;
  readonly #timeoutMs: number;
  readonly #waiting = new Map<number, Waiting>();
  readonly #sub: Subscription;
  readonly #sweep: NodeJS.Timeout;
  readonly #decoder = new TextDecoder();
  #next = 1;

  constructor(nc: NatsConnection, options: { inbox: string; timeoutMs: number }) {
    this.#nc = nc;
    this.#inbox = options.inbox;
    this.#timeoutMs = options.timeoutMs;
    this.#sub = nc.subscribe(`${this.#inbox}.*`, {
      callback: (error, msg) => {
        if (error !== null) return;
        const id = Number(msg.subject.slice(this.#inbox.length + 1));
        const waiting = this.#waiting.get(id);
        if (waiting === undefined) return;
        this.#waiting.delete(id);
        // No stream took the subject: the server answers for nobody with a 503 status.
        if (msg.data.length === 0 && msg.headers?.code === 503) {
          waiting.reject(
            new TroupeError('runtime.protocol', `No JetStream stream takes ${waiting.subject}.`),
          );
          return;
        }
        this.#answer(waiting, msg.data);
      },
    });
    this.#sweep = setInterval(() => this.#expire(), 1000);
    this.#sweep.unref();
  }

  /**
   * Publishes `data` on `subject`; resolves once the stream has stored it.
   * Without a message id: nothing here publishes the same message twice
   * (a write that fails is reported, never retried), so JetStream's
   * duplicate window would only cost a header per write and an entry in
   * the server's table.
   */
  publish(subject: string, data: Uint8Array): Promise<StoredAck> {
    if (this.#nc.isClosed()) {
      return Promise.reject(new TroupeError('runtime.protocol', 'The NATS connection is closed.'));
    }
    const id = this.#next;
    this.#next += 1;
    return new Promise<StoredAck>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject, sentAt: Date.now(), subject });
      try {
        this.#nc.publish(subject, data, { reply: `${this.#inbox}.${id}` });
      } catch (error) {
        this.#waiting.delete(id);
        reject(
          new TroupeError('runtime.protocol', `Cannot publish on ${subject}.`, { cause: error }),
        );
      }
    });
  }

  /** Stops listening; writes still unanswered fail. */
  close(): void {
    clearInterval(this.#sweep);
    this.#sub.unsubscribe();
    const closed = new TroupeError(
      'runtime.protocol',
      'The NATS connection closed before JetStream answered.',
    );
    for (const waiting of this.#waiting.values()) waiting.reject(closed);
    this.#waiting.clear();
  }

  #answer(waiting: Waiting, data: Uint8Array): void {
    let reply: {
      stream?: unknown;
      seq?: unknown;
      duplicate?: unknown;
      error?: { description?: unknown };
    };
    try {
      reply = JSON.parse(this.#decoder.decode(data)) as typeof reply;
    } catch {
      waiting.reject(
        new TroupeError('runtime.protocol', 'JetStream answered a write with no JSON.'),
      );
      return;
    }
    if (reply.error !== undefined || typeof reply.seq !== 'number') {
      const description =
        typeof reply.error?.description === 'string' ? reply.error.description : 'no sequence';
      waiting.reject(
        new TroupeError(
          'runtime.protocol',
          `JetStream refused a write on ${waiting.subject}: ${description}.`,
        ),
      );
      return;
    }
    waiting.resolve({
      stream: typeof reply.stream === 'string' ? reply.stream : '',
      seq: reply.seq,
      duplicate: reply.duplicate === true,
    });
  }

  // A write lost with the connection (or never answered) fails instead of waiting forever.
  #expire(): void {
    const now = Date.now();
    for (const [id, waiting] of this.#waiting) {
      // Oldest first: the map keeps insertion order, so the first young one ends the sweep.
      if (now - waiting.sentAt < this.#timeoutMs) return;
      this.#waiting.delete(id);
      waiting.reject(
        new TroupeError(
          'runtime.protocol',
          `JetStream did not answer a write on ${waiting.subject} within ${Math.round(this.#timeoutMs / 1000)} s.`,
        ),
      );
    }
  }
}
