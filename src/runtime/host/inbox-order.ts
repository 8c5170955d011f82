import { type AgentJournal, inboxPlan } from '../../agent/journal.js';

/**
 * The journal's side of an actor's inbox: the order the actor takes its
 * messages in. A resumed subscriber replays its model calls at once, while
 * its publishers replay (or run) at their own pace, so its messages arrive
 * in another order than the first time; taken as they come, its requests
 * would no longer match the journal and every later call would be paid for
 * again. While it replays, it is given before each model call exactly the
 * messages the journal says it took then, in that order, waiting for them
 * to arrive. Once it goes live (the journal ran out or diverged, or a
 * recorded message will not come), messages are taken as they come and
 * recorded.
 */
export class InboxOrder {
  readonly #journal: AgentJournal;
  #plan: Map<number, string[]> | undefined;
  // The last model call with a recorded response: past it, the actor is live anyway.
  readonly #replayUntil: number;
  // The first live record of an attempt that replayed drops what the earlier attempt recorded from its step on.
  #resetPending: boolean;
  // What this attempt has taken before model call #step (a reset record repeats it).
  #step = -1;
  #taken: string[] = [];

  /**
   * `replayedCalls`, when given, is how many model calls replay from
   * elsewhere than `journal.recorded` (a NATS worker node's journal, see
   * ReplayModel): the messages of those calls are given in the recorded order.
   */
  constructor(journal: AgentJournal, replayedCalls?: number) {
    this.#journal = journal;
    if (journal.recorded.length === 0) {
      // A first attempt (nearly every actor): nothing to replay, nothing to reset.
      this.#replayUntil = -1;
      this.#plan = undefined;
      this.#resetPending = false;
      return;
    }
    const plan = inboxPlan(journal.recorded);
    let until = -1;
    for (const entry of journal.recorded) {
      if (entry.kind === 'model' && entry.step > until) until = entry.step;
    }
    this.#replayUntil = replayedCalls === undefined ? until : replayedCalls - 1;
    this.#plan = plan.size > 0 ? plan : undefined;
    this.#resetPending = plan.size > 0;
  }

  /** True while messages are given in the recorded order. */
  get replaying(): boolean {
    return this.#plan !== undefined;
  }

  /**
   * The hashes still due before model call `step`, in order (empty: nothing
   * more is due, hold what has arrived); undefined when live.
   */
  due(step: number): readonly string[] | undefined {
    this.#at(step);
    if (this.#plan === undefined || step > this.#replayUntil) return undefined;
    const planned = this.#plan.get(step) ?? [];
    return planned.slice(this.#taken.length);
  }

  /** From here on messages are taken as they come (the agent went live, or a recorded one will not come). */
  goLive(): void {
    this.#plan = undefined;
  }

  /** Notes messages taken before model call `step` (by hash); recorded when live. */
  took(step: number, hashes: readonly string[]): void {
    this.#at(step);
    const replayed = this.#plan !== undefined && step <= this.#replayUntil;
    if (!replayed) {
      if (this.#resetPending) {
        this.#journal.record({
          kind: 'inbox',
          step,
          hashes: [...this.#taken, ...hashes],
          reset: true,
        });
        this.#resetPending = false;
      } else {
        this.#journal.record({ kind: 'inbox', step, hashes: [...hashes] });
      }
    }
    this.#taken.push(...hashes);
  }

  #at(step: number): void {
    if (step === this.#step) return;
    this.#step = step;
    // A new list only when something was taken (nearly always nothing is, once per model call).
    if (this.#taken.length > 0) this.#taken = [];
  }
}
