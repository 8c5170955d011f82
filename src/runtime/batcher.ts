/**
 * Collects protocol items and posts them as one array per event-loop turn.
 * One post per turn instead of one per item is most of the cost saved: a
 * fan-out of a thousand actors whose timers fire in the same turn crosses
 * the thread boundary once, not thousands of times.
 */
export class Batcher<TItem> {
  readonly #post: (items: TItem[]) => void;
  #items: TItem[] = [];
  #scheduled = false;
  #closed = false;

  constructor(post: (items: TItem[]) => void) {
    this.#post = post;
  }

  /** Queues one item; it is posted at the end of this event-loop turn, in order. */
  push(item: TItem): void {
    if (this.#closed) return;
    this.#items.push(item);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate runs after the I/O callbacks of this turn: everything the turn produced goes together.
    setImmediate(() => this.flush());
  }

  /** Posts what is queued now. */
  flush(): void {
    this.#scheduled = false;
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
