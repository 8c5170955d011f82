/**
 * Collects protocol items and posts them as one array per event-loop turn.
 * One post per turn instead of one per item is most of the cost saved: a
 * fan-out of a thousand actors whose timers fire in the same turn crosses
 * the thread boundary once, not thousands of times.
 */
export class Batcher<TItem> {
  readonly #post: (items: TItem[]) => void;
  readonly #maxItems: number;
  #items: TItem[] = [];
  #scheduled = false;
  #closed = false;

  /**
   * `maxItems` caps one post (default 1,024): a turn that produces more
   * (a tool reporting progress in a loop) sends several, so the receiver
   * starts on the first while the rest are made, and short-lived objects
   * die young instead of piling up in one giant message.
   */
  constructor(post: (items: TItem[]) => void, maxItems = 1024) {
    this.#post = post;
    this.#maxItems = maxItems;
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

  /** Posts what is queued now. */
  flush(): void {
    this.#scheduled = false;
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
