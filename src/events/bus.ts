import { EventEmitter } from 'eventemitter3';
import { serializeError } from '../errors.js';
import {
  type AgentEvent,
  AgentEventSchema,
  type AgentEventType,
  type EventOf,
  type EventSink,
  type UnsequencedEvent,
} from './schema.js';

/** Removes the listener it was returned for. Calling it twice is harmless. */
export type Unsubscribe = () => void;

const ANY = '*';

/** Options for an EventBus. */
export interface EventBusOptions {
  /**
   * Validate each event against the schema before stamping it (default true).
   * A producer that already validated (the runtime's worker batches) may turn
   * this off for its own bus.
   */
  validate?: boolean;
}

/**
 * The single writer of a run's event stream. It validates each event, stamps
 * the global gap-free `seq`, and hands it to listeners. eventemitter3 does not
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
  // Events published while listeners run (a callback.error, a listener that
  // publishes) wait here, so every listener sees events in seq order.
  readonly #pending: AgentEvent[] = [];
  #delivering = false;

  constructor(options: EventBusOptions = {}) {
    this.#validate = options.validate ?? true;
  }

  /** The seq the next event will get; equals the number of events published. */
  get nextSeq(): number {
    return this.#seq;
  }

  /** Validates, stamps and delivers one event; returns the stamped event. Throws a ZodError on an invalid event. */
  publish(event: UnsequencedEvent): AgentEvent {
    const candidate = { ...event, seq: this.#seq } as AgentEvent;
    const stamped = this.#validate ? AgentEventSchema.parse(candidate) : candidate;
    this.#seq += 1;
    this.#pending.push(stamped);
    if (!this.#delivering) this.#drain();
    return stamped;
  }

  /**
   * Publishes an event object its producer hands over and never touches
   * again (a runtime ingesting events a worker sent, fresh from the port):
   * the seq is stamped onto the object itself instead of onto a copy, which
   * saves a copy per event on the main thread. Otherwise the same as
   * publish(): same checks, same order, same delivery.
   */
  adopt(event: UnsequencedEvent): AgentEvent {
    if (this.#validate) return this.publish(event);
    const stamped = event as AgentEvent;
    stamped.seq = this.#seq;
    this.#seq += 1;
    this.#pending.push(stamped);
    if (!this.#delivering) this.#drain();
    return stamped;
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
        this.#deliver(event.type, event);
        this.#deliver(ANY, event);
      }
    } finally {
      this.#delivering = false;
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
    this.publish({
      v: 1,
      ts: Date.now(),
      runId: source.runId,
      agentId: source.agentId,
      ...(source.parentId === undefined ? {} : { parentId: source.parentId }),
      ...(source.role === undefined ? {} : { role: source.role }),
      type: 'callback.error',
      callback: `listener for ${source.type}`,
      error: serializeError(error),
    });
  }
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
