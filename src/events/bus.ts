import { EventEmitter } from 'eventemitter3';
import { serializeError } from '../errors.js';
import { makeEvent } from './envelope.js';
import { assertEvent } from './event-check.js';
import type { AgentEvent, AgentEventType, EventOf, EventSink, UnsequencedEvent } from './schema.js';

/** Removes the listener it was returned for. Calling it twice is harmless. */
export type Unsubscribe = () => void;

const ANY = '*';

/** Options for an EventBus. */
export interface EventBusOptions {
  /**
   * Validate each event given to `publish` against the schema (default
   * true). Events given to `adopt` are never checked again: their producer
   * validated them where they were made.
   */
  validate?: boolean;
}

/**
 * The single writer of a run's event stream. It validates each event it is
 * given with `publish`, stamps the global gap-free `seq` and the run's clock
 * `ts`, and hands it to listeners. `ts` is stamped here, not by producers:
 * events from many threads arrive in batches, and a producer's clock would
 * not be monotonic in `seq`; the bus's is (milliseconds since the epoch,
 * never less than the previous event's). eventemitter3 does not
 * catch, so each listener call is wrapped: a listener that throws becomes a
 * `callback.error` event and never reaches the code that published.
 *
 * @example
 * const bus = new EventBus();
 * bus.on('tool.call', (event) => console.log(event.name));
 */
export class EventBus implements EventSink {
  readonly #emitter = new EventEmitter();
  readonly #validate: boolean;
  #seq = 0;
  #ts = 0;
  // Events published while listeners run (a callback.error, a listener that
  // publishes) wait here, so every listener sees events in seq order; beside
  // each, the JSON text its producer sent it as (adopt), if any.
  readonly #pending: AgentEvent[] = [];
  readonly #pendingText: Array<string | undefined> = [];
  #delivering = false;
  // The event being delivered now, and its producer's text.
  #current: AgentEvent | undefined;
  #currentText: string | undefined;

  constructor(options: EventBusOptions = {}) {
    this.#validate = options.validate ?? true;
  }

  /** The seq the next event will get; equals the number of events published. */
  get nextSeq(): number {
    return this.#seq;
  }

  /** Validates, stamps and delivers one event; returns the stamped event. Throws a ZodError on an invalid event. */
  publish(event: UnsequencedEvent): AgentEvent {
    if (this.#validate) assertEvent(event);
    // A copy then two stores: the same keys in the same order as a spread with
    // the new keys, which V8 made ~20 times slower (5.3 against 0.23 us).
    const stamped = Object.assign({}, event) as AgentEvent;
    stamped.seq = this.#seq;
    stamped.ts = this.#clock();
    this.#seq += 1;
    this.#pending.push(stamped);
    this.#pendingText.push(undefined);
    if (!this.#delivering) this.#drain();
    return stamped;
  }

  /**
   * Publishes an event its producer already validated (with `checkEvent`,
   * where it was made) and hands over, never touching it again: a runtime
   * ingesting events a worker sent, fresh from the port. No second check;
   * `seq` and `ts` are stamped onto the object itself instead of onto a
   * copy. Same order and delivery as publish().
   *
   * `text`: the event's JSON text as its producer wrote it
   * (`JSON.stringify(event)` before stamping, what `event` was parsed from),
   * so listeners that need the event as JSON (the trace, `--json`) get it
   * from `json()` without serializing it again.
   */
  adopt(event: UnsequencedEvent, text?: string): AgentEvent {
    const stamped = event as AgentEvent;
    // A text that already has a seq (it is not a producer's) is not spliced.
    const usable = text !== undefined && stamped.seq === undefined ? text : undefined;
    stamped.seq = this.#seq;
    stamped.ts = this.#clock();
    this.#seq += 1;
    this.#pending.push(stamped);
    this.#pendingText.push(usable);
    if (!this.#delivering) this.#drain();
    return stamped;
  }

  /**
   * The JSON text of `event`, as `JSON.stringify(event)` writes it. For the
   * event being delivered, when its producer sent it as text (`adopt`), that
   * text with the bus's `ts` and `seq` spliced in, not a second
   * serialization: the same bytes, since the event was parsed from it and
   * stamped in place (`ts` where it was, `seq` last). A listener that changed
   * the event gets the event as its producer made it.
   */
  json(event: AgentEvent): string {
    const text = event === this.#current ? this.#currentText : undefined;
    if (text !== undefined) {
      const spliced = spliceStamp(text, event.ts, event.seq);
      if (spliced !== undefined) return spliced;
    }
    return JSON.stringify(event);
  }

  // Wall-clock milliseconds, held back from going backwards (a clock step).
  #clock(): number {
    const now = Date.now();
    if (now > this.#ts) this.#ts = now;
    return this.#ts;
  }

  /** EventSink: the same as publish, for producers that do not need the stamped event. */
  emit(event: UnsequencedEvent): void {
    this.publish(event);
  }

  /** Listens to one event type. */
  on<TType extends AgentEventType>(
    type: TType,
    listener: (event: EventOf<TType>) => void,
  ): Unsubscribe {
    this.#emitter.on(type, listener);
    return () => {
      this.#emitter.off(type, listener);
    };
  }

  /** Stops a listener added with `on`; the same as calling the Unsubscribe `on` returned. */
  off<TType extends AgentEventType>(type: TType, listener: (event: EventOf<TType>) => void): void {
    this.#emitter.off(type, listener);
  }

  /** Listens to every event, in seq order. */
  onAny(listener: (event: AgentEvent) => void): Unsubscribe {
    this.#emitter.on(ANY, listener);
    return () => {
      this.#emitter.off(ANY, listener);
    };
  }

  /** Removes every listener. */
  clear(): void {
    this.#emitter.removeAllListeners();
  }

  #drain(): void {
    this.#delivering = true;
    try {
      for (let event = this.#pending.shift(); event !== undefined; event = this.#pending.shift()) {
        this.#current = event;
        this.#currentText = this.#pendingText.shift();
        this.#deliver(event.type, event);
        this.#deliver(ANY, event);
      }
    } finally {
      this.#delivering = false;
      this.#current = undefined;
      this.#currentText = undefined;
    }
  }

  #deliver(channel: string, event: AgentEvent): void {
    // Most event types have no listener of their own: skip the copy listeners() makes.
    if (this.#emitter.listenerCount(channel) === 0) return;
    const listeners = this.#emitter.listeners(channel) as Array<(event: AgentEvent) => void>;
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#reportCallbackError(event, error);
      }
    }
  }

  #reportCallbackError(source: AgentEvent, error: unknown): void {
    // A listener that throws on callback.error itself is not reported again:
    // that would loop forever.
    if (source.type === 'callback.error') return;
    this.publish(
      makeEvent(source, {
        type: 'callback.error',
        callback: `listener for ${source.type}`,
        error: serializeError(error),
      }),
    );
  }
}

// A producer's text begins with the envelope's first keys (makeEvent's order).
const TEXT_HEAD = '{"v":1,"ts":';

// `text` (an unstamped event's JSON, beginning `{"v":1,"ts":<n>,`) with the
// bus's `ts` in place of the producer's and `seq` last: what JSON.stringify
// writes for the event parsed from `text` and stamped in place. Undefined
// for a text of another shape (the caller serializes the event instead).
function spliceStamp(text: string, ts: number, seq: number): string | undefined {
  if (!text.startsWith(TEXT_HEAD) || text.charCodeAt(text.length - 1) !== 0x7d) return undefined;
  const comma = text.indexOf(',', TEXT_HEAD.length);
  if (comma === -1) return undefined;
  return `${TEXT_HEAD}${ts}${text.slice(comma, -1)},"seq":${seq}}`;
}

/**
 * Resolves with the first event of `type` that satisfies `predicate`.
 * Rejects when `signal` aborts. Use it in tests instead of sleeping.
 */
export function waitForEvent<TType extends AgentEventType>(
  bus: EventBus,
  type: TType,
  predicate: (event: EventOf<TType>) => boolean = () => true,
  options: { signal?: AbortSignal } = {},
): Promise<EventOf<TType>> {
  return new Promise((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      unsubscribe();
      reject(signal?.reason);
    };
    const unsubscribe = bus.on(type, (event) => {
      if (!predicate(event)) return;
      unsubscribe();
      signal?.removeEventListener('abort', onAbort);
      resolve(event);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
