import { TroupeError } from '../../errors.js';
import type { MailboxOptions, OverflowPolicy } from '../../roles/role-spec.js';

export type { MailboxOptions, OverflowPolicy } from '../../roles/role-spec.js';

interface Waiter {
  resolve: () => void;
  reject: (error: TroupeError) => void;
}

const DEFAULT_CAPACITY = 64;
const DEFAULT_MAX_WAITING = 1024;

/**
 * The main thread's account of one actor's mailbox. A slot is taken when a
 * message is delivered and given back when the actor reads it (the worker
 * reports reads), so the bound holds end to end: at most `capacity` messages
 * are ever queued for an actor, wherever they sit. Waiting senders are bounded
 * too, so nothing grows without limit.
 */
export class Mailbox {
  readonly owner: string;
  readonly capacity: number;
  readonly overflow: OverflowPolicy;
  readonly #maxWaiting: number;
  readonly #waiters: Waiter[] = [];
  #size = 0;
  #closed: string | undefined;

  constructor(owner: string, options: MailboxOptions = {}) {
    const capacity = options.capacity ?? DEFAULT_CAPACITY;
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new TroupeError(
        'usage.invalid_option',
        `mailbox.capacity must be a whole number of at least 1, got ${capacity}.`,
      );
    }
    this.owner = owner;
    this.capacity = capacity;
    this.overflow = options.overflow ?? 'block';
    this.#maxWaiting = options.maxWaiting ?? DEFAULT_MAX_WAITING;
  }

  /** Messages delivered and not yet read. */
  get size(): number {
    return this.#size;
  }

  /** Senders waiting for room. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** True once closed: no more messages are taken. */
  get closed(): boolean {
    return this.#closed !== undefined;
  }

  /** Takes a slot when there is room now; never waits. */
  tryReserve(): boolean {
    if (this.#closed !== undefined || this.#size >= this.capacity) return false;
    this.#size += 1;
    return true;
  }

  /**
   * Takes a slot for one message. Resolves at once when there is room; when
   * full, waits under 'block' and rejects with `mailbox.full` under 'error'.
   * Rejects with `runtime.closed` when the mailbox is (or gets) closed.
   */
  reserve(): Promise<void> {
    if (this.#closed !== undefined) return Promise.reject(this.#closedError(this.#closed));
    // Waiters go first, so a newcomer cannot overtake a sender that waits.
    if (this.#waiters.length === 0 && this.tryReserve()) return Promise.resolve();
    if (this.overflow === 'error' || this.#waiters.length >= this.#maxWaiting) {
      return Promise.reject(
        new TroupeError(
          'mailbox.full',
          `The mailbox of ${this.owner} is full (${this.capacity} unread messages${this.overflow === 'block' ? ` and ${this.#waiters.length} senders waiting` : ''}); the message was not delivered. Try again later or send less.`,
          { details: { agentId: this.owner, capacity: this.capacity } },
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
  }

  /** Gives back `count` slots (messages the actor read) and lets waiting senders in. */
  release(count = 1): void {
    this.#size = Math.max(0, this.#size - count);
    while (this.#waiters.length > 0 && this.#size < this.capacity) {
      const waiter = this.#waiters.shift() as Waiter;
      this.#size += 1;
      waiter.resolve();
    }
  }

  /**
   * Sets the count of unread messages to `count` (a restarted actor that will
   * read its earlier messages again); may exceed the capacity until they are read.
   */
  reset(count: number): void {
    this.#size = Math.max(0, count);
    this.release(0);
  }

  /** Closes the mailbox: waiting and later senders are refused with `runtime.closed`. */
  close(reason = `${this.owner} has finished`): void {
    if (this.#closed !== undefined) return;
    this.#closed = reason;
    const waiters = this.#waiters.splice(0);
    if (waiters.length === 0) return;
    const error = this.#closedError(reason);
    for (const waiter of waiters) waiter.reject(error);
  }

  // Made only when someone is refused: most mailboxes close with nobody waiting.
  #closedError(reason: string): TroupeError {
    return new TroupeError('runtime.closed', `The message was not delivered: ${reason}.`, {
      details: { agentId: this.owner },
    });
  }
}
