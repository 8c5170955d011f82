import type { MsgRequest } from '@nats-io/jetstream';
import type { JournalEntry as AgentJournalEntry } from '../../../agent/journal.js';
import { errorMessage } from '../../../errors.js';
import type { ModelResponse } from '../../../model/types.js';
import { type NatsLink, STREAMS, subjects } from './nats-link.js';
import { decode, JournalBatchSchema, type JournalEntry } from './node-wire.js';

/** How a node's journal of one run is set up. */
export interface JournalLogOptions {
  link: NatsLink;
  runId: string;
  /** The writing node's name: its batches go on its own subject of the run. */
  node: string;
  /** A write that failed (the call returns anyway: the actor is not stopped for it). */
  log: (line: string) => void;
}

// A batch is written before it grows past this (NATS refuses payloads over its max, 1 MiB by default).
const MAX_BATCH_CHARS = 512 * 1024;

// What the reader knows of one actor key: the responses of each chain that wrote for it, and the latest chain.
interface KeyIndex {
  chains: Map<string, ModelResponse[]>;
  /** Each chain's inbox records (the order its actor took messages in). */
  inboxes: Map<string, AgentJournalEntry[]>;
  last: string;
}

/**
 * A node's side of a run's actor journals in JetStream (stream
 * `TROUPE_RESPONSES`): every live model response of an actor hosted here
 * is written before its call returns, and an actor taken over from a dead
 * node reads what that node wrote.
 *
 * Writes are batched: the responses recorded in one event-loop turn (a
 * thousand actors whose model calls end together) go in one message on
 * the node's subject of the run, acknowledged once, instead of one stream
 * write per call. Each entry names its actor key and its chain (one
 * node's hosting of one attempt, see `NodeActor`), and holds the
 * responses from step `from` on; a chain's first write holds every
 * response from step 1 (those it replayed too), so a chain is whole by
 * itself and the reader never stitches two.
 *
 * Reading scans the run's batches (every node's) in stream order, once per
 * node and run, then only the batches written since: an actor's journal is
 * the chain that wrote for it last, as when each write held the whole list
 * and the last one won.
 */
export class JournalLog {
  readonly #link: NatsLink;
  readonly #runId: string;
  readonly #subject: string;
  readonly #log: (line: string) => void;
  #entries: string[] = [];
  #chars = 0;
  #written: Promise<void> | undefined;
  #resolve: (() => void) | undefined;
  readonly #index = new Map<string, KeyIndex>();
  /** The next stream sequence to read from. */
  #nextSeq = 1;
  /** A scan queued and not started yet: every read that arrives before it starts shares it. */
  #queued: Promise<void> | undefined;
  #tail: Promise<void> = Promise.resolve();

  constructor(options: JournalLogOptions) {
    this.#link = options.link;
    this.#runId = options.runId;
    this.#subject = subjects.responses(options.runId, options.node);
    this.#log = options.log;
  }

  /**
   * Adds an entry to this turn's batch; resolves once the batch is stored
   * (or its write failed, which is logged: the call goes on without it).
   */
  write(entry: JournalEntry): Promise<void> {
    const json = JSON.stringify(entry);
    if (this.#chars + json.length > MAX_BATCH_CHARS && this.#entries.length > 0) this.#flush();
    this.#entries.push(json);
    this.#chars += json.length;
    if (this.#written === undefined) {
      this.#written = new Promise<void>((resolve) => {
        this.#resolve = resolve;
      });
      // setImmediate runs after the I/O callbacks of this turn: every record the turn brought goes together.
      setImmediate(() => this.#flush());
    }
    return this.#written;
  }

  #flush(): void {
    const resolve = this.#resolve;
    if (resolve === undefined) return;
    const entries = this.#entries;
    this.#entries = [];
    this.#chars = 0;
    this.#written = undefined;
    this.#resolve = undefined;
    const payload = new TextEncoder().encode(`{"entries":[${entries.join(',')}]}`);
    this.#link.writer.publish(this.#subject, payload).then(
      () => resolve(),
      (error: unknown) => {
        this.#log(
          `could not write ${entries.length} journal entries of run ${this.#runId}: ${errorMessage(error)}`,
        );
        resolve();
      },
    );
  }

  /** The journal of actor `key`: its model responses in call order, as its last chain wrote them. */
  async read(key: string): Promise<ModelResponse[]> {
    await this.#catchUp();
    const known = this.#index.get(key);
    return [...(known?.chains.get(known.last) ?? [])];
  }

  /** The order actor `key` took its messages in, as its last chain wrote it (as of the last `read`). */
  inboxOf(key: string): AgentJournalEntry[] {
    const known = this.#index.get(key);
    return [...(known?.inboxes.get(known.last) ?? [])];
  }

  // A scan that starts after this call: a takeover must see every batch written before it asked.
  #catchUp(): Promise<void> {
    if (this.#queued !== undefined) return this.#queued;
    const scan = this.#tail.then(() => {
      this.#queued = undefined;
      return this.#scan();
    });
    this.#queued = scan;
    this.#tail = scan.catch(() => undefined);
    return scan;
  }

  // The run's batches since the last scan, one request each (the first at or after a sequence on the
  // run's subjects: STREAM.MSG.GET's next_by_subj, served by nats-server 2.9 and later).
  async #scan(): Promise<void> {
    const filter = subjects.responsesOf(this.#runId);
    for (;;) {
      const query = { seq: this.#nextSeq, next_by_subj: filter };
      // The client types next_by_subj for direct gets only; the server's message get takes it too.
      const stored = await this.#link.jsm.streams.getMessage(
        STREAMS.responses,
        query as unknown as MsgRequest,
      );
      if (stored === null) return;
      this.#nextSeq = stored.seq + 1;
      let entries: JournalEntry[];
      try {
        entries = decode(stored.data, JournalBatchSchema, 'A journal batch').entries;
      } catch (error) {
        this.#log(`skipped a journal batch of run ${this.#runId}: ${errorMessage(error)}`);
        continue;
      }
      for (const entry of entries) this.#apply(entry);
    }
  }

  #apply(entry: JournalEntry): void {
    let known = this.#index.get(entry.key);
    if (known === undefined) {
      known = { chains: new Map(), inboxes: new Map(), last: entry.chain };
      this.#index.set(entry.key, known);
    }
    let responses = known.chains.get(entry.chain);
    let inbox = known.inboxes.get(entry.chain);
    if (responses === undefined || inbox === undefined) {
      // A chain starts whole (from step 1); one whose start is gone (aged out) cannot be trusted.
      if (entry.from !== 1) return;
      responses = [];
      inbox = [];
      known.chains.set(entry.chain, responses);
      known.inboxes.set(entry.chain, inbox);
    }
    // Steps follow on; a gap would make the replay answer the wrong calls.
    if (entry.from > responses.length + 1) return;
    responses.splice(entry.from - 1, responses.length, ...entry.responses);
    // Inbox records follow on as written (a chain's first write holds them all).
    if (entry.inbox !== undefined) inbox.push(...entry.inbox);
    known.last = entry.chain;
  }
}
