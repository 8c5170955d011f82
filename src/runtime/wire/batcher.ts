/**
 * Collects protocol items and posts them as one array per event-loop turn.
 * One post per turn instead of one per item is most of the cost saved: a
 * fan-out of a thousand actors whose timers fire in the same turn crosses
 * the thread boundary once, not thousands of times.
 */
export class Batcher<TItem> {
  readonly #post: (items: TItem[]) => void;
  readonly #maxItems: number;
  readonly #lazyMs: number;
  #items: TItem[] = [];
  #scheduled = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * `maxItems` caps one post (default 1,024): a turn that produces more
   * (a tool reporting progress in a loop) sends several, so the receiver
   * starts on the first while the rest are made, and short-lived objects
   * die young instead of piling up in one giant message.
   */
  constructor(post: (items: TItem[]) => void, maxItems = 1024, options: { lazyMs?: number } = {}) {
    this.#post = post;
    this.#maxItems = maxItems;
    this.#lazyMs = options.lazyMs ?? 0;
  }

  /** Queues one item; it is posted at the end of this event-loop turn, in order. */
  push(item: TItem): void {
    if (this.#closed) return;
    this.#items.push(item);
    if (this.#items.length >= this.#maxItems) {
      this.#send();
      return;
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate runs after the I/O callbacks of this turn: everything the turn produced goes together.
    setImmediate(() => this.flush());
  }

  /**
   * Queues an item nobody waits for (an event on its way to a trace): it
   * goes with the next item pushed, or after `lazyMs` (the constructor's
   * option; without it, at the end of this turn like any item). Over a
   * network, a post per turn is a message per turn; waiting a few
   * milliseconds lets many turns' events share one.
   */
  pushLazy(item: TItem): void {
    if (this.#lazyMs <= 0) {
      this.push(item);
      return;
    }
    if (this.#closed) return;
    this.#items.push(item);
    if (this.#items.length >= this.#maxItems) {
      this.#send();
      return;
    }
    if (this.#scheduled || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => this.flush(), this.#lazyMs);
  }

  /**
   * The item queued last, while it waits to be posted (undefined once it is):
   * a producer may add to it instead of queuing another.
   */
  last(): TItem | undefined {
    return this.#items.at(-1);
  }

  /** Posts what is queued now. */
  flush(): void {
    this.#scheduled = false;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#send();
  }

  #send(): void {
    if (this.#items.length === 0) return;
    const items = this.#items;
    this.#items = [];
    this.#post(items);
  }

  /** Posts what is queued and takes no more. */
  close(): void {
    this.flush();
    this.#closed = true;
  }
}
