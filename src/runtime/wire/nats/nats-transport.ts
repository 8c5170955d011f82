import { randomBytes } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import { errorMessage, serializeError, TroupeError } from '../../../errors.js';
import { makeEvent } from '../../../events/envelope.js';
import { emptyUsage } from '../../../model/types.js';
import { Batcher } from '../batcher.js';
import {
  type ActorOutcome,
  isWireEvent,
  type MainToWorkerInput,
  parseWorkerMessage,
  type WorkerWireItem,
} from '../protocol.js';
import type { Transport, TransportHandlers } from '../transport.js';
import { type NatsLink, purgeWork, STREAMS, subjects } from './nats-link.js';
import {
  type DownItemInput,
  decode,
  encode,
  joinSpawns,
  NATS_WIRE_VERSION,
  type NodeInfo,
  NodeInfoSchema,
  NodeUpItemSchema,
  type RemoteHostConfig,
  type Session,
  SPAWNS_PER_MESSAGE,
  UpBatchSchema,
  WorkEncoder,
  type WorkItemInput,
} from './node-wire.js';

/** Options of the coordinator's side of the NATS transport. */
export interface NatsTransportOptions {
  /** An open connection (see connectNats); the transport drains it on close. */
  link: NatsLink;
  runId: string;
  /** What every host of the run is built from (no environment: nodes use their own). */
  config: RemoteHostConfig;
  /** Read actors' journals for first attempts too (a resumed run). Default false. */
  resume?: boolean | undefined;
  /** A spawn no node takes within this long fails with `runtime.unplaced`, in ms (default 60,000). */
  placeTimeoutMs?: number | undefined;
  /** A node silent this long is dead: its actors wait for the work queue to re-place them, in ms (default 15,000). */
  deadAfterMs?: number | undefined;
  /** NATS unreachable this long stops the run with a clear error, in ms (default 30,000). */
  reconnectForMs?: number | undefined;
}

type Start = Extract<MainToWorkerInput, { type: 'actor.start' }>;
type Define = Extract<MainToWorkerInput, { type: 'role.define' | 'model.define' }>;

// One actor attempt handed to the cluster.
interface RemoteActor {
  start: Start;
  /** The node that claimed it last (it runs there), if any. */
  owner: string | undefined;
  /** Since when it waits for a node (queued, or its node went silent), in ms. */
  waitingSince: number | undefined;
  /** Everything sent to it since its start, replayed to a node that takes it over. */
  log: MainToWorkerInput[];
  /** Mailbox reads its current node reported, and reads passed up (a new node reads the log again). */
  consumedByOwner: number;
  consumedPassed: number;
  /** The work message its spawn is in, until it leaves the queue (cancelled, or queued again). */
  queued: WorkMessage | undefined;
  /** How often it was queued again (its node went silent, or NATS was lost); only claims of the last count. */
  generation: number;
  /** The node its spawn was placed on (a pipeline's member) until a node claims it; else any node takes it. */
  target: string | undefined;
}

// One message of the work queue: the spawns queued for one subject in one turn.
interface WorkMessage {
  /** Its stream sequence, once JetStream stored it. */
  seq: number | undefined;
  /** Its spawns still wanted (neither cancelled nor queued again): with none left, it is deleted. */
  wanted: Set<RemoteActor>;
}

// A spawn gathered in this turn for its subject's message, and which queuing of its actor it is.
interface Gathered {
  actor: RemoteActor;
  generation: number;
  spawn: Uint8Array;
}

const TICK_MS = 1000;

/**
 * The coordinator's side of the NATS transport. The cluster looks like one
 * host to the runtime: an actor's start goes into the JetStream work queue,
 * self-contained, and whichever node takes it claims it; from then on the
 * actor's items go to that node, and its items come back on the run's up
 * subject, in order per node connection. When a node dies, JetStream hands
 * the unacknowledged spawn to another node after the consumer's ack wait;
 * the new node claims it, gets everything the actor was sent again, and the
 * actor continues from its journal. Losing the server itself is a lost host
 * (its actors are retried when it is back) and, past `reconnectForMs`, fatal.
 */
export class NatsTransport implements Transport {
  readonly #link: NatsLink;
  readonly #runId: string;
  readonly #config: RemoteHostConfig;
  readonly #resume: boolean;
  readonly #placeTimeoutMs: number;
  readonly #deadAfterMs: number;
  readonly #reconnectForMs: number;
  /** This coordinator process: a resumed coordinator is another session of the same run. */
  readonly session: Session = { id: randomBytes(6).toString('hex'), startedAt: Date.now() };
  readonly #defs = new Map<string, Define>();
  readonly #actors = new Map<string, RemoteActor>();
  readonly #requests = new Map<number, { node: string; requestId: number }>();
  // From a node's request id back to ours (a node cancels a pooled tool call by its own id).
  readonly #requestsBack = new Map<string, number>();
  readonly #out = new Map<string, Batcher<DownItemInput>>();
  readonly #heard = new Map<string, number>();
  /** What each node last said of itself (capacity and load), for placing pipelines. */
  readonly #nodeInfo = new Map<string, NodeInfo>();
  /** The node each channel's pipeline is placed on. */
  readonly #pins = new Map<string, string>();
  /** Spawns placed on each node and not claimed yet: load its heartbeat does not show yet. */
  readonly #placed = new Map<string, number>();
  readonly #subs: Subscription[] = [];
  readonly #work = new WorkEncoder();
  /** Spawns queued in this turn, by subject: they go in messages at its end, or once one is full. */
  readonly #gathering = new Map<string, Gathered[]>();
  #gatherFlush = false;
  #handlers: TransportHandlers | undefined;
  readonly #hostId = 1;
  #up = false;
  #lostAt: number | undefined;
  #failed = false;
  #closing = false;
  #nextRequest = 1;
  #tick: NodeJS.Timeout | undefined;
  #lastTick = Date.now();
  /** Result writes under way: close waits for them (within its grace). */
  readonly #storing = new Set<Promise<unknown>>();

  constructor(options: NatsTransportOptions) {
    this.#link = options.link;
    this.#runId = options.runId;
    this.#config = options.config;
    this.#resume = options.resume ?? false;
    this.#placeTimeoutMs = options.placeTimeoutMs ?? 60_000;
    this.#deadAfterMs = options.deadAfterMs ?? 15_000;
    this.#reconnectForMs = options.reconnectForMs ?? 30_000;
  }

  /** Nodes heard from within the dead-after window, by name. */
  get nodes(): readonly string[] {
    const now = Date.now();
    return [...this.#heard].filter(([, at]) => now - at < this.#deadAfterMs).map(([node]) => node);
  }

  /** What each live node last reported (capacity and load), by name. */
  get nodeLoads(): readonly NodeInfo[] {
    const live = new Set(this.nodes);
    return [...this.#nodeInfo.values()].filter((info) => live.has(info.node));
  }

  start(handlers: TransportHandlers): void {
    if (this.#handlers !== undefined || this.#closing) return;
    this.#handlers = handlers;
    const { nc } = this.#link;
    this.#subs.push(
      nc.subscribe(subjects.up(this.#runId), {
        callback: (error, msg) => {
          if (error === null) this.#receive(msg.data);
        },
      }),
      nc.subscribe(subjects.nodesBeat, {
        callback: (error, msg) => {
          if (error !== null) return;
          try {
            const info = decode(msg.data, NodeInfoSchema, 'A node heartbeat');
            this.#heard.set(info.node, Date.now());
            this.#nodeInfo.set(info.node, info);
          } catch {
            // A malformed heartbeat says nothing about any node.
          }
        },
      }),
    );
    // The nodes report now rather than at their next heartbeat (their answers come as heartbeats),
    // so the run's first burst of spawns is split among them.
    nc.publish(subjects.nodesPing, new Uint8Array(0), { reply: subjects.nodesBeat });
    void this.#watchConnection();
    this.#tick = setInterval(() => this.#onTick(), TICK_MS);
    this.#beat();
    this.#up = true;
    handlers.hostUp(this.#hostId);
  }

  hosts(): readonly number[] {
    return this.#up ? [this.#hostId] : [];
  }

  send(hostId: number, item: MainToWorkerInput): void {
    if (hostId !== this.#hostId || !this.#up) return;
    switch (item.type) {
      case 'role.define':
      case 'model.define':
        this.#defs.set(item.key, item);
        return;
      case 'actor.start':
        this.#queue(item);
        return;
      case 'actor.cancel': {
        const actor = this.#actors.get(item.actorId);
        if (actor === undefined) return;
        if (actor.owner === undefined) {
          // Not on any node: it ends here, and its spawn leaves the queue.
          this.#unqueue(actor);
          this.#end(actor, {
            stopReason: 'cancelled',
            final: '',
            usage: emptyUsage(),
            steps: 0,
            error: serializeError(new TroupeError('cancelled', item.reason)),
          });
          return;
        }
        actor.log.push(item);
        this.#down(actor.owner, item);
        return;
      }
      case 'mailbox.deliver':
      case 'channel.closed': {
        const actor = this.#actors.get(item.actorId);
        if (actor === undefined) return;
        actor.log.push(item);
        if (actor.owner !== undefined) this.#down(actor.owner, item);
        return;
      }
      case 'tool.progress': {
        const request = this.#requests.get(item.requestId);
        if (request !== undefined)
          this.#down(request.node, { ...item, requestId: request.requestId });
        return;
      }
      case 'publish.answered':
      case 'approval.answered':
      case 'spawn.answered':
      case 'child.answered':
      case 'tool.answered':
      case 'budget.answered':
      case 'journal.answered': {
        const request = this.#requests.get(item.requestId);
        if (request === undefined) return;
        this.#requests.delete(item.requestId);
        this.#requestsBack.delete(`${request.node}\n${request.requestId}`);
        this.#down(request.node, { ...item, requestId: request.requestId });
        return;
      }
      case 'journal.stored':
      case 'host.shutdown':
        return;
    }
  }

  // In the run's results stream, so a coordinator resumed on another machine reuses it (see readResults).
  storeResult(key: string, stored: object): void {
    if (this.#link.nc.isClosed()) return;
    const write = this.#link.writer
      .publish(subjects.result(this.#runId, key), encode(stored))
      .catch((error: unknown) => {
        this.#handlers?.error(
          new TroupeError(
            'runtime.protocol',
            `Could not keep the result of ${key} on NATS at ${this.#link.where} (a resume elsewhere runs it again): ${errorMessage(error)}`,
          ),
          false,
        );
      })
      .finally(() => this.#storing.delete(write));
    this.#storing.add(write);
  }

  terminate(_hostId: number, reason: string, actorId?: string): void {
    const actor = actorId === undefined ? undefined : this.#actors.get(actorId);
    if (actor === undefined) return;
    if (actor.owner === undefined) {
      this.#unqueue(actor);
      this.#end(actor, lostOutcome(new TroupeError('runtime.worker_exit', reason)));
      return;
    }
    // The node stops the thread the actor hangs in; its actors' ends come back as results.
    this.#down(actor.owner, { ...this.#placement(actor), type: 'node.drop', reason, kill: true });
  }

  async close(graceMs: number): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#tick);
    const { nc } = this.#link;
    const nodes = new Set([...this.#out.keys(), ...this.#heard.keys()]);
    for (const node of nodes) this.#down(node, { type: 'node.run_closed' });
    for (const batcher of this.#out.values()) batcher.close();
    for (const sub of this.#subs) sub.unsubscribe();
    if (!nc.isClosed()) {
      const cleanup = (async () => {
        await Promise.all(this.#storing);
        await nc.flush();
        // Spawns nobody took are the run's own: they go with it.
        await purgeWork(this.#link, this.#runId);
      })().catch(() => undefined);
      await withTimeout(cleanup, graceMs);
      await withTimeout(
        nc.drain().catch(() => undefined),
        graceMs,
      );
      if (!nc.isClosed()) await nc.close().catch(() => undefined);
    }
    this.#actors.clear();
  }

  #queue(start: Start): void {
    const role = this.#defs.get(start.role);
    const model = this.#defs.get(start.model);
    const actor: RemoteActor = {
      start,
      owner: undefined,
      waitingSince: Date.now(),
      log: [],
      consumedByOwner: 0,
      consumedPassed: 0,
      queued: undefined,
      generation: 0,
      target: undefined,
    };
    this.#actors.set(start.actorId, actor);
    if (role?.type !== 'role.define' || model?.type !== 'model.define') {
      this.#end(
        actor,
        lostOutcome(
          new TroupeError('internal', `${start.actorId}'s role or model was never defined.`),
        ),
      );
      return;
    }
    this.#target(
      actor,
      role.role.publishes.map((channel) => channel.name).concat(role.role.subscribes),
    );
    this.#publishWork(actor);
  }

  // Affinity: the members of a channel pipeline (actors publishing or subscribing to one channel)
  // go to one node, chosen least loaded when the first is queued, while that node has room; past
  // that, or with no node heard from, a member goes to the shared queue like any actor.
  #target(actor: RemoteActor, channels: readonly string[]): void {
    if (channels.length === 0) return;
    const pinned = channels
      .map((channel) => this.#pins.get(channel))
      .find((node) => node !== undefined && this.#hasRoom(node));
    const node =
      pinned ??
      (channels.some((channel) => this.#pins.has(channel)) ? undefined : this.#leastLoaded());
    if (node === undefined) return;
    for (const channel of channels) if (!this.#pins.has(channel)) this.#pins.set(channel, node);
    actor.target = node;
    this.#placed.set(node, (this.#placed.get(node) ?? 0) + 1);
  }

  #untarget(actor: RemoteActor): void {
    const node = actor.target;
    if (node === undefined) return;
    actor.target = undefined;
    this.#placed.set(node, Math.max(0, (this.#placed.get(node) ?? 0) - 1));
  }

  // A live node's load: its actors (as of its last heartbeat) and what was placed on it since.
  // A node of another wire never takes this coordinator's spawns: it has none.
  #load(node: string): { used: number; max: number } | undefined {
    const info = this.#nodeInfo.get(node);
    const heard = this.#heard.get(node);
    if (
      info === undefined ||
      info.wire !== NATS_WIRE_VERSION ||
      heard === undefined ||
      Date.now() - heard > this.#deadAfterMs
    ) {
      return undefined;
    }
    return { used: info.actors + (this.#placed.get(node) ?? 0), max: info.maxActors };
  }

  #hasRoom(node: string): boolean {
    const load = this.#load(node);
    return load !== undefined && load.used < load.max;
  }

  #leastLoaded(): string | undefined {
    let best: string | undefined;
    let bestShare = Number.POSITIVE_INFINITY;
    for (const node of [...this.#nodeInfo.keys()].sort()) {
      const load = this.#load(node);
      if (load === undefined || load.used >= load.max) continue;
      const share = load.used / load.max;
      if (share < bestShare) {
        best = node;
        bestShare = share;
      }
    }
    return best;
  }

  // Puts the actor's spawn in the work queue (again, after its node went silent or NATS was lost).
  // The spawns of a turn for one subject share a message, up to SPAWNS_PER_MESSAGE: a burst of a
  // thousand spawns is ~60 stream writes, not a thousand. Each spawn in it is still the actor's
  // own: whichever node takes the message claims each one, and only the claim of the actor's
  // latest spawn (its generation) counts.
  #publishWork(actor: RemoteActor): void {
    const { start } = actor;
    const role = this.#defs.get(start.role);
    const model = this.#defs.get(start.model);
    if (role?.type !== 'role.define' || model?.type !== 'model.define') return;
    const generation = actor.generation;
    const work: WorkItemInput = {
      wire: NATS_WIRE_VERSION,
      runId: this.#runId,
      session: this.session,
      config: this.#config,
      roleKey: role.key,
      role: role.role,
      modelKey: model.key,
      model: model.model,
      start,
      generation,
      readJournal: this.#resume || start.attempt > 1 || generation > 0,
    };
    const subject =
      actor.target === undefined
        ? subjects.work(this.#runId)
        : subjects.workOn(this.#runId, actor.target);
    let gathered = this.#gathering.get(subject);
    if (gathered === undefined) {
      gathered = [];
      this.#gathering.set(subject, gathered);
    }
    gathered.push({ actor, generation, spawn: this.#work.encode(work) });
    if (gathered.length >= SPAWNS_PER_MESSAGE) {
      // Full: it goes now, so the nodes start on a burst while the rest of it is still queued.
      this.#gathering.delete(subject);
      this.#sendWork(subject, gathered);
    } else if (!this.#gatherFlush) {
      this.#gatherFlush = true;
      queueMicrotask(() => this.#flushWork());
    }
  }

  // The end of a turn: what is left of each subject's spawns goes, split so that every live node
  // may take a share (the server hands one message to each node's pull in turn; a dozen spawns in
  // one message would all go to one node). Before any node was heard from, one spawn a message.
  #flushWork(): void {
    this.#gatherFlush = false;
    const all = [...this.#gathering];
    this.#gathering.clear();
    // Closed meanwhile: the run's spawns go with it (close purges what was queued).
    if (this.#closing) return;
    const live = this.nodeLoads.filter((info) => info.wire === NATS_WIRE_VERSION).length;
    const shared = subjects.work(this.#runId);
    for (const [subject, gathered] of all) {
      // A node's own subject (a pipeline's members placed on it) has one reader.
      const readers = subject === shared ? live : 1;
      const count = readers === 0 ? gathered.length : Math.min(readers, gathered.length);
      let from = 0;
      for (let part = 0; part < count; part += 1) {
        const to = Math.round(((part + 1) * gathered.length) / count);
        this.#sendWork(subject, gathered.slice(from, to));
        from = to;
      }
    }
  }

  #sendWork(subject: string, gathered: readonly Gathered[]): void {
    // Cancelled or queued again in the same turn: not sent.
    const members = gathered.filter(
      ({ actor, generation }) =>
        this.#actors.get(actor.start.actorId) === actor && actor.generation === generation,
    );
    if (members.length === 0) return;
    const message: WorkMessage = { seq: undefined, wanted: new Set() };
    for (const { actor } of members) {
      message.wanted.add(actor);
      actor.queued = message;
    }
    this.#link.writer.publish(subject, joinSpawns(members.map(({ spawn }) => spawn))).then(
      (ack) => {
        message.seq = ack.seq;
        // Cancelled or queued again while the publish was under way: take it back out.
        if (message.wanted.size === 0) this.#deleteWork(ack.seq);
      },
      (error: unknown) => {
        // NATS went away meanwhile: the spawns are queued again when it is back.
        if (this.#lostAt !== undefined) return;
        for (const { actor, generation } of members) {
          if (this.#actors.get(actor.start.actorId) !== actor || actor.generation !== generation)
            continue;
          this.#end(
            actor,
            lostOutcome(
              new TroupeError(
                'runtime.worker_exit',
                `Could not queue ${actor.start.actorId} on NATS at ${this.#link.where}: ${errorMessage(error)}`,
              ),
            ),
          );
        }
      },
    );
  }

  #deleteWork(seq: number): void {
    void this.#link.jsm.streams.deleteMessage(STREAMS.work, seq).catch(() => false);
  }

  // A fresh spawn for an actor whose node is gone: the old one leaves the queue, so nothing but
  // a claim of the new one counts, and whichever node takes it continues from the journal.
  #requeue(actor: RemoteActor): void {
    this.#unqueue(actor);
    // Again, it goes to whichever node takes it first.
    this.#untarget(actor);
    actor.owner = undefined;
    actor.generation += 1;
    actor.waitingSince = Date.now();
    this.#publishWork(actor);
  }

  // Its spawn is no longer wanted; the message it is in leaves the queue with the last of its spawns.
  #unqueue(actor: RemoteActor): void {
    const message = actor.queued;
    if (message === undefined) return;
    actor.queued = undefined;
    message.wanted.delete(actor);
    if (message.wanted.size === 0 && message.seq !== undefined) this.#deleteWork(message.seq);
  }

  // Ends an attempt from here (cancelled before placement, never placed, lost): its result, as a host would send it.
  #end(actor: RemoteActor, outcome: ActorOutcome): void {
    const actorId = actor.start.actorId;
    if (this.#actors.get(actorId) !== actor) return;
    this.#actors.delete(actorId);
    this.#untarget(actor);
    this.#handlers?.items(this.#hostId, [{ type: 'actor.result', actorId, outcome }]);
  }

  #down(node: string, item: DownItemInput): void {
    let batcher = this.#out.get(node);
    if (batcher === undefined) {
      const subject = subjects.down(this.#runId, node);
      batcher = new Batcher((items) => {
        if (!this.#link.nc.isClosed()) this.#link.nc.publish(subject, encode({ items }));
      });
      this.#out.set(node, batcher);
    }
    batcher.push(item);
  }

  #receive(data: Uint8Array): void {
    const handlers = this.#handlers;
    if (handlers === undefined || !this.#up) return;
    let batch: { node: string; items: unknown[] };
    try {
      batch = decode(data, UpBatchSchema, 'A batch from a worker node');
    } catch (error) {
      handlers.error(error as TroupeError, false);
      return;
    }
    const node = batch.node;
    this.#heard.set(node, Date.now());
    const out: WorkerWireItem[] = [];
    const rest: unknown[] = [];
    // Claims first: a claim precedes its actor's items, and no other actor's items depend on it.
    for (const raw of batch.items) {
      if (!isClaim(raw)) {
        rest.push(raw);
        continue;
      }
      const claim = NodeUpItemSchema.safeParse(raw);
      if (claim.success) this.#claim(node, claim.data, out);
      else rest.push(raw);
    }
    const { items, invalid } = parseWorkerMessage(rest);
    for (const problem of invalid) {
      handlers.error(
        new TroupeError('runtime.protocol', `Node ${node} sent an invalid item: ${problem}`),
        false,
      );
    }
    for (const item of items) {
      const accepted = this.#accept(node, item);
      if (accepted !== undefined) out.push(accepted);
    }
    if (out.length > 0) handlers.items(this.#hostId, out);
  }

  // An item from `node`, as the runtime should see it; undefined drops it (a stale node's, or the transport's own).
  #accept(node: string, item: WorkerWireItem): WorkerWireItem | undefined {
    if (isWireEvent(item)) {
      return this.#actors.get(item.agentId)?.owner === node ? item : undefined;
    }
    // (A node's hosts keep no run journal, so they send no `journal.lines`.)
    if (
      item.type === 'host.ready' ||
      item.type === 'journal.record' ||
      item.type === 'journal.lines'
    )
      return undefined;
    if (item.type === 'tool.cancelled') {
      const requestId = this.#requestsBack.get(`${node}\n${item.requestId}`);
      return requestId === undefined ? undefined : { ...item, requestId };
    }
    // A withdrawn budget ask names its request; a settled reservation names the runtime's own id.
    if (item.type === 'budget.settle' && item.requestId !== undefined) {
      const requestId = this.#requestsBack.get(`${node}\n${item.requestId}`);
      return requestId === undefined ? undefined : { ...item, requestId };
    }
    if (item.type === 'host.error') {
      this.#handlers?.error(
        new TroupeError('runtime.protocol', `Node ${node}: ${item.error.message}`),
        false,
      );
      return undefined;
    }
    const actor = this.#actors.get(item.actorId);
    if (actor?.owner !== node) return undefined;
    switch (item.type) {
      case 'actor.result':
        this.#actors.delete(item.actorId);
        return item;
      case 'mailbox.consumed': {
        // A node that took the actor over reads its mailbox again from the start: pass up only new reads.
        actor.consumedByOwner += item.count;
        const fresh = actor.consumedByOwner - actor.consumedPassed;
        if (fresh <= 0) return undefined;
        actor.consumedPassed += fresh;
        return { ...item, count: fresh };
      }
      case 'channel.publish':
      case 'approval.requested':
      case 'spawn.requested':
      case 'child.requested':
      case 'tool.requested':
      case 'budget.reserve':
      case 'journal.intent': {
        const requestId = this.#nextRequest;
        this.#nextRequest += 1;
        this.#requests.set(requestId, { node, requestId: item.requestId });
        this.#requestsBack.set(`${node}\n${item.requestId}`, requestId);
        return { ...item, requestId };
      }
      case 'actor.turn':
      case 'journal.entry':
      case 'budget.settle':
        return item;
    }
  }

  #claim(
    node: string,
    claim: {
      actorId: string;
      attempt: number;
      generation: number;
      session: string;
      replayed: number;
    },
    out: WorkerWireItem[],
  ): void {
    const actor = this.#actors.get(claim.actorId);
    if (
      actor === undefined ||
      claim.session !== this.session.id ||
      actor.start.attempt !== claim.attempt ||
      actor.generation !== claim.generation
    ) {
      this.#down(node, {
        type: 'node.drop',
        actorId: claim.actorId,
        attempt: claim.attempt,
        generation: claim.generation,
        session: claim.session,
        reason: 'the attempt is over',
        done: true,
      });
      return;
    }
    const previous = actor.owner;
    if (previous === node) return;
    if (previous !== undefined) {
      this.#down(previous, {
        ...this.#placement(actor),
        type: 'node.drop',
        reason: `it runs on ${node} now`,
      });
    }
    actor.owner = node;
    actor.waitingSince = undefined;
    this.#untarget(actor);
    actor.consumedByOwner = 0;
    for (const item of actor.log) this.#down(node, item);
    out.push(
      this.#progress(
        actor,
        previous === undefined && claim.replayed === 0
          ? `runs on node ${node}`
          : `continues on node ${node}; ${claim.replayed} model responses replayed from its journal`,
      ),
    );
  }

  // Which spawn of the actor a node.drop means: a node drops only that one, never a later one it took since.
  #placement(actor: RemoteActor): {
    actorId: string;
    attempt: number;
    generation: number;
    session: string;
  } {
    return {
      actorId: actor.start.actorId,
      attempt: actor.start.attempt,
      generation: actor.generation,
      session: this.session.id,
    };
  }

  #progress(actor: RemoteActor, note: string): WorkerWireItem {
    const role = this.#defs.get(actor.start.role);
    return makeEvent(
      {
        runId: this.#runId,
        agentId: actor.start.actorId,
        parentId: actor.start.parentId,
        role: role?.type === 'role.define' ? role.role.name : undefined,
      },
      { type: 'agent.progress', note },
    );
  }

  #beat(): void {
    if (this.#link.nc.isClosed()) return;
    this.#link.nc.publish(subjects.beat(this.#runId), encode({ session: this.session }));
  }

  #onTick(): void {
    const now = Date.now();
    const handlers = this.#handlers;
    if (handlers === undefined) return;
    if (this.#failed) return;
    if (this.#lostAt !== undefined) {
      if (now - this.#lostAt > this.#reconnectForMs) this.#giveUp(handlers);
      return;
    }
    this.#beat();
    // A late tick means this process was busy: what nodes sent meanwhile is still unread, so
    // their silence says nothing yet. Judge on the next tick.
    const late = now - this.#lastTick > 2 * TICK_MS;
    this.#lastTick = now;
    const out: WorkerWireItem[] = [];
    for (const actor of [...this.#actors.values()]) {
      const owner = actor.owner;
      if (owner !== undefined) {
        const heard = this.#heard.get(owner) ?? 0;
        if (!late && now - heard > this.#deadAfterMs) {
          this.#down(owner, {
            ...this.#placement(actor),
            type: 'node.drop',
            reason: 'its node went silent',
          });
          this.#requeue(actor);
          out.push(
            this.#progress(
              actor,
              `node ${owner} has been silent for ${Math.round((now - heard) / 1000)} s; queued again for another node`,
            ),
          );
        }
        continue;
      }
      // Placed on a node that has not taken it within the dead-after time: any node may.
      if (
        actor.target !== undefined &&
        actor.waitingSince !== undefined &&
        now - actor.waitingSince > this.#deadAfterMs
      ) {
        this.#requeue(actor);
        continue;
      }
      if (actor.waitingSince !== undefined && now - actor.waitingSince > this.#placeTimeoutMs) {
        this.#unqueue(actor);
        this.#end(
          actor,
          lostOutcome(
            new TroupeError(
              'runtime.unplaced',
              `No worker node took ${actor.start.actorId} within ${Math.round(this.#placeTimeoutMs / 1000)} s. ${this.#otherWires() ?? `Start one with: troupe worker --nats ${this.#link.where}`}`,
            ),
          ),
        );
      }
    }
    if (out.length > 0) handlers.items(this.#hostId, out);
  }

  // When every live node speaks another wire (another troupe version): they see none of this run's spawns.
  #otherWires(): string | undefined {
    const live = this.nodeLoads;
    if (live.some((info) => info.wire === NATS_WIRE_VERSION)) return undefined;
    const others = live.filter((info) => info.wire !== NATS_WIRE_VERSION);
    if (others.length === 0) return undefined;
    const names = others.map((info) => `${info.node} (troupe ${info.version}, wire ${info.wire})`);
    return `The live nodes ${names.join(', ')} speak another troupe NATS wire than this coordinator (troupe wire ${NATS_WIRE_VERSION}) and take none of its spawns: run the same troupe version on the coordinator and the nodes.`;
  }

  // A lost connection is not a lost actor: nodes stop their actors when they lose NATS, and when
  // it is back every actor is queued again and continues (on some node) from its journal.
  // Past `reconnectForMs` without NATS, the run fails clearly.
  async #watchConnection(): Promise<void> {
    for await (const status of this.#link.nc.status()) {
      if (this.#closing) return;
      if (status.type === 'disconnect' && this.#lostAt === undefined && !this.#failed) {
        this.#lostAt = Date.now();
        for (const actor of this.#actors.values()) {
          actor.owner = undefined;
          actor.waitingSince = this.#lostAt;
        }
      } else if (status.type === 'reconnect') {
        this.#lostAt = undefined;
        // Nodes could not beat while NATS was away: count from now.
        const now = Date.now();
        for (const node of this.#heard.keys()) this.#heard.set(node, now);
        for (const actor of [...this.#actors.values()]) this.#requeue(actor);
      }
    }
  }

  #giveUp(handlers: TransportHandlers): void {
    this.#failed = true;
    this.#up = false;
    const error = new TroupeError(
      'runtime.worker_exit',
      `NATS at ${this.#link.where} has been unreachable for ${Math.round(this.#reconnectForMs / 1000)} s; the run stops. Check the server, then resume the run (troupe run --resume ${this.#runId} --nats …).`,
    );
    handlers.error(error, true);
    for (const actor of [...this.#actors.values()]) this.#end(actor, lostOutcome(error));
  }
}

// Most items are the worker protocol's: only what says it is a claim is parsed as one.
function isClaim(raw: unknown): boolean {
  return (
    typeof raw === 'object' && raw !== null && (raw as { type?: unknown }).type === 'node.claimed'
  );
}

function lostOutcome(error: TroupeError): ActorOutcome {
  return {
    stopReason: 'error',
    final: '',
    usage: emptyUsage(),
    steps: 0,
    error: serializeError(error),
  };
}

async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
