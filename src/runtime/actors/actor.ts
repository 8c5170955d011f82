import type { SerializedError } from '../../errors.js';
import type { ModelSpec } from '../../model/model.js';
import { addUsage, emptyUsage, type Usage } from '../../model/types.js';
import type { ActorResult } from '../../roles/result.js';
import type { AnyRole } from '../../roles/role.js';

export type { ActorResult } from '../../roles/result.js';

import type { Mailbox } from '../messaging/mailbox.js';
import type { MainToWorker } from '../wire/protocol.js';

/** Options of one spawn. */
export interface SpawnOptions {
  /** The parent's agent id (the coordinator's is `coordinator`); cancelling it cancels this actor. */
  parent?: string | undefined;
  /** Extra data for the task, appended to it as JSON. */
  input?: unknown;
  /** Time limit in milliseconds; past it the actor is stopped with status `timed_out`. */
  timeoutMs?: number | undefined;
  /** Aborting it cancels the actor (and its descendants). */
  signal?: AbortSignal | undefined;
}

/** A handle on a running actor. */
export interface AgentRef {
  /** `<role>-<n>`, unique within the run. */
  readonly id: string;
  readonly role: string;
  /**
   * Steers the actor: `message` lands as a user message before its next model
   * call. Resolves once it is in the mailbox; rejects with `runtime.closed`
   * when the actor has finished, `mailbox.full` when full under the 'error' policy.
   */
  send(message: string): Promise<void>;
  /**
   * Sends `message` and resolves with the answer of the first turn that read
   * it. Rejects with `timeout` after `timeoutMs` (default 60,000), or
   * `runtime.closed` when the actor ends without reading it.
   */
  ask(message: string, options?: { timeoutMs?: number }): Promise<string>;
  /** Resolves once with the actor's terminal result. */
  readonly result: Promise<ActorResult>;
  /** Cancels the actor and its descendants: cooperatively first, by stopping its thread after a grace period. */
  cancel(reason?: string): void;
}

/** The lifecycle of an actor in the main thread. */
export type ActorState = 'queued' | 'running' | 'backoff' | 'finished';

/** Why the runtime is stopping an actor; decides its terminal status. */
export interface StopOrder {
  status: 'cancelled' | 'timed_out';
  error: SerializedError;
}

interface AskWaiter {
  needed: number;
  resolve(final: string): void;
  reject(error: unknown): void;
}

/**
 * The main thread's record of one actor: where it runs, its attempts, its
 * mailbox account, its children and its timers. Internal to the runtime.
 */
export class ActorRecord {
  readonly id: string;
  readonly role: AnyRole;
  readonly task: string;
  readonly parentId: string | undefined;
  readonly depth: number;
  readonly model: ModelSpec;
  readonly mailbox: Mailbox;
  readonly children = new Set<string>();
  readonly result: Promise<ActorResult>;
  key: string | undefined;
  state: ActorState = 'queued';
  hostId: number | undefined;
  attempt = 0;
  /** Threads this actor was on when the watchdog stopped them with no culprit named. */
  frozen = 0;
  stop: StopOrder | undefined;
  usage: Usage = emptyUsage();
  timeout: NodeJS.Timeout | undefined;
  grace: NodeJS.Timeout | undefined;
  backoff: NodeJS.Timeout | undefined;
  detachSignal: (() => void) | undefined;
  /** Every message delivered to this actor while it lives; a restarted attempt reads them again. */
  readonly log: Extract<MainToWorker, { type: 'mailbox.deliver' }>[] = [];
  delivered = 0;
  consumed = 0;
  lastFinal = '';
  readonly #askers: AskWaiter[] = [];
  #resolve: ((result: ActorResult) => void) | undefined;

  constructor(init: {
    id: string;
    role: AnyRole;
    task: string;
    parentId: string | undefined;
    depth: number;
    model: ModelSpec;
    mailbox: Mailbox;
  }) {
    this.id = init.id;
    this.role = init.role;
    this.task = init.task;
    this.parentId = init.parentId;
    this.depth = init.depth;
    this.model = init.model;
    this.mailbox = init.mailbox;
    this.result = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  /** Adds an attempt's tokens. */
  addUsage(usage: Usage): void {
    this.usage = addUsage(this.usage, usage);
  }

  /** Waits for the turn that reads the `needed`-th delivered message. */
  waitForTurn(needed: number): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#askers.push({ needed, resolve, reject });
    });
  }

  /** One Agent run ended: answer every ask whose message was read by now. */
  turn(final: string): void {
    this.lastFinal = final;
    for (let index = this.#askers.length - 1; index >= 0; index -= 1) {
      const asker = this.#askers[index] as AskWaiter;
      if (asker.needed <= this.consumed) {
        this.#askers.splice(index, 1);
        asker.resolve(final);
      }
    }
  }

  /** Clears every timer of this actor. */
  clearTimers(): void {
    clearTimeout(this.timeout);
    clearTimeout(this.grace);
    clearTimeout(this.backoff);
    this.timeout = undefined;
    this.grace = undefined;
    this.backoff = undefined;
    this.detachSignal?.();
    this.detachSignal = undefined;
  }

  /** Settles the result (once) and every pending ask (`askError` makes the error for those never read). */
  settle(result: ActorResult, askError: () => unknown): void {
    this.state = 'finished';
    this.clearTimers();
    for (const asker of this.#askers.splice(0)) {
      if (asker.needed <= this.consumed) asker.resolve(result.final);
      else asker.reject(askError());
    }
    this.#resolve?.(result);
    this.#resolve = undefined;
  }
}
