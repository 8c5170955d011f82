import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Consumer, JsMsg } from '@nats-io/jetstream';
import type { Msg, Subscription } from '@nats-io/transport-node';
import {
  type JournalEntry as AgentJournalEntry,
  JournalEntrySchema as AgentJournalEntrySchema,
  readJournalLine,
} from '../../../agent/journal.js';
import { errorMessage, serializeError, TroupeError } from '../../../errors.js';
import { emptyUsage, type ModelResponse } from '../../../model/types.js';
import { Batcher } from '../batcher.js';
import { LocalTransport } from '../local-transport.js';
import {
  type ActorOutcome,
  type HostWireItem,
  isWireEvent,
  type MainToWorkerInput,
  type WorkerWireItem,
} from '../protocol.js';
import { DEFAULT_AGENT_THREAD_LIMITS } from '../thread-start.js';
import { ToolPool } from '../tool-pool.js';
import { JournalLog } from './journal-log.js';
import {
  ensureStreams,
  ensureWorkConsumer,
  type NatsLink,
  nodeConsumer,
  STREAMS,
  subjects,
  WORK_CONSUMER,
} from './nats-link.js';
import {
  BeatSchema,
  DownBatchSchema,
  type DownItem,
  decode,
  encode,
  joinSpawns,
  NATS_WIRE_VERSION,
  type NodeInfo,
  type JournalEntry as NodeJournalEntry,
  type Session,
  SPAWNS_PER_MESSAGE,
  splitSpawns,
  WorkDecoder,
  type WorkItem,
  withJournalRead,
} from './node-wire.js';

/** How a worker node is set up. */
export interface WorkerNodeOptions {
  /** An open connection (see connectNats); the node drains it when it stops. */
  link: NatsLink;
  /** The node's name, unique among the nodes of one NATS server. */
  name: string;
  /** Worker threads per run the node hosts actors of. */
  threads: number;
  /** Actors the node hosts at once; it takes no more spawns past this. */
  maxActors: number;
  /** Threads of each run's tool pool here, where its user tools run (default 2). */
  toolThreads?: number | undefined;
  /**
   * Silence after which this node counts as dead and its actors go to other
   * nodes, in milliseconds; the node heartbeats every third of it (default 15,000).
   */
  deadAfterMs?: number | undefined;
  /** The workspace file tools use here, when it is not at the coordinator's path. */
  workspace?: string | undefined;
  /** troupe's version, reported to `troupe nodes`. */
  version: string;
  /** The built worker entry (tests). */
  workerUrl?: URL | undefined;
  /** The built tool-thread entry (tests). */
  toolWorkerUrl?: URL | undefined;
  /** One line per notable thing (a run starts or ends, an actor is refused). */
  log?: ((line: string) => void) | undefined;
}

/**
 * How long an event waits for others before it goes up to the coordinator,
 * in milliseconds. Items an actor waits on (requests, a result, mailbox
 * room) go at the end of their turn and take the waiting events along.
 * A turn's batch per message made a thousand small messages a second in the
 * N = 1,000 fan-out; the server and both ends pay per message.
 */
const UP_LAZY_MS = 5;

/**
 * Messages one pull of the work queue asks for: up to 32 spawns on their
 * way at once, the second arriving while the first is taken.
 */
const MESSAGES_PER_PULL = 2;

// A message this node took from the work queue: one spawn, or the spawns a coordinator queued in
// one turn (SPAWNS_PER_MESSAGE). It stays unacknowledged while any of them runs here (the node
// heartbeats it), and is acknowledged once each is done with here and one of them was settled:
// finished, refused, or over. A spawn only let go (it runs elsewhere now, a later one replaced it)
// settles nothing, as a message of one such spawn was never acknowledged.
interface WorkLease {
  msg: JsMsg;
  /** How many spawns it holds. */
  spawns: number;
  /** Spawns of it not done with here yet. */
  open: number;
  settled: boolean;
}

// One actor attempt this node took from the queue.
interface NodeActor {
  actorId: string;
  work: WorkItem;
  /** The message its spawn came in, and its spawn's bytes there (what a hand-back queues again). */
  lease: WorkLease;
  spawn: Uint8Array;
  /** Its part of the lease is done with (see #endShare). */
  shareDone: boolean;
  run: NodeRun;
  hostId: number | undefined;
  /** Items for it that arrived before it had a thread. */
  pending: MainToWorkerInput[];
  /** Every model response of the actor so far (replayed and live): its journal. */
  journal: ModelResponse[];
  /**
   * The order it took its messages in (the run journal's inbox records, replayed and live),
   * kept beside its responses so a node that takes it over gives its replayed calls the same
   * messages; and how many of them this hosting's chain has written.
   */
  inbox: AgentJournalEntry[];
  inboxWritten: number;
  journalWrite: Promise<unknown>;
  /** This hosting's chain in the journal (see JournalLog), and whether it has written its first entry. */
  chain: string;
  chainStarted: boolean;
  /** It runs elsewhere now or its attempt is over: nothing of it goes up any more. */
  dropped: boolean;
}

// The node's share of one run: a thread pool built from the run's config and the actors on it.
interface NodeRun {
  runId: string;
  /** The coordinator session whose actors it hosts; a later one (a resumed coordinator) replaces it. */
  session: Session;
  transport: LocalTransport;
  /** The run's actor journals: written in batches, read when an actor is taken over. */
  journal: JournalLog;
  /** Where the run's user tools run on this node: its threads have direct lanes to the actor threads. */
  tools: ToolPool | undefined;
  hosts: Map<number, { load: number; defined: Set<string> }>;
  /** The current spawn of each actor id (running, waiting for a thread, or just dropped). */
  actors: Map<string, NodeActor>;
  /**
   * Dropped actors still in a thread until their result comes back: a later
   * spawn with the same id waits for that, since a thread hosts an id once.
   */
  ending: Map<string, NodeActor>;
  waiting: NodeActor[];
  requests: Map<number, { hostId: number; requestId: number }>;
  requestsBack: Map<string, number>;
  nextRequest: number;
  up: Batcher<unknown>;
  lastBeat: number;
}

/**
 * A worker node: takes spawns from the JetStream work queue, hosts their
 * actors on its own worker threads (a LocalTransport per run, built from
 * the run's config), and relays each actor's items between its thread and
 * the run's coordinator. A spawn stays unacknowledged while its actor runs
 * (the node heartbeats it), so if the node dies JetStream gives it to
 * another node, which continues from the actor's journal: every live model
 * response is written to the journal as it arrives.
 */
export class WorkerNode {
  readonly #options: WorkerNodeOptions;
  readonly #link: NatsLink;
  readonly #deadAfterMs: number;
  readonly #runs = new Map<string, NodeRun>();
  // The latest coordinator session seen of each run: work of an older one is stale, even once
  // the run it had here is closed (a resumed coordinator's run starts afresh on this node).
  readonly #sessions = new Map<string, Session>();
  readonly #subs: Subscription[] = [];
  readonly #hashes = new Map<string, string>();
  /** Messages to acknowledge at the end of this turn, after the batches of their actors' results. */
  #acks: JsMsg[] = [];
  readonly #work = new WorkDecoder();
  readonly #startedAt = Date.now();
  // Names this process's journal chains: a node restarted under the same name writes other ones.
  readonly #instance = randomBytes(4).toString('hex');
  #chains = 0;
  #held = 0;
  /** Pulls waiting for a free slot. */
  readonly #slotWaiters: (() => void)[] = [];
  /** Spawns asked for by pulls in flight and not yet taken: room they may fill. */
  #asked = 0;
  #stopping = false;
  #disconnected = false;
  #tick: NodeJS.Timeout | undefined;
  #lastTick = Date.now();
  #fetching: Promise<void> | undefined;

  constructor(options: WorkerNodeOptions) {
    this.#options = options;
    this.#link = options.link;
    this.#deadAfterMs = options.deadAfterMs ?? 15_000;
  }

  /** Actors hosted now. */
  get actors(): number {
    return this.#held;
  }

  /** What `troupe nodes` shows for this node. */
  info(): NodeInfo {
    return {
      node: this.#options.name,
      version: this.#options.version,
      wire: NATS_WIRE_VERSION,
      threads: this.#options.threads,
      maxActors: this.#options.maxActors,
      actors: this.#held,
      runs: this.#runs.size,
      startedAt: this.#startedAt,
    };
  }

  /** Sets up the streams, listens to coordinators and starts taking work. */
  async start(): Promise<void> {
    await ensureStreams(this.#link, this.#deadAfterMs);
    const { nc } = this.#link;
    this.#subs.push(
      nc.subscribe(subjects.downAll(this.#options.name), {
        callback: (error, msg) => {
          if (error === null) this.#fromCoordinator(msg);
        },
      }),
      nc.subscribe(subjects.beatAll, {
        callback: (error, msg) => {
          if (error === null) this.#onBeat(msg);
        },
      }),
      nc.subscribe(subjects.nodesPing, {
        callback: (error, msg) => {
          if (error === null) msg.respond(encode(this.info()));
        },
      }),
    );
    // Spawns a coordinator placed on this node (a pipeline's members, see NatsTransport) come on its own subject.
    const own = nodeConsumer(this.#options.name);
    await ensureWorkConsumer(
      this.#link,
      own,
      subjects.workOnAny(this.#options.name),
      this.#deadAfterMs,
    );
    const consumer = await this.#link.js.consumers.get(STREAMS.work, WORK_CONSUMER);
    const placed = await this.#link.js.consumers.get(STREAMS.work, own);
    this.#tick = setInterval(
      () => this.#onTick(),
      Math.max(100, Math.floor(this.#deadAfterMs / 3)),
    );
    this.#publishInfo();
    this.#fetching = this.#fetchLoop(consumer, placed);
    void this.#watchConnection();
  }

  // While disconnected, what actors send is lost or late: stop them. Their coordinators queue them
  // again (they lost NATS too, or they hear this node go silent), and they continue from their journals.
  async #watchConnection(): Promise<void> {
    const givenUp = new Set<WorkLease>();
    for await (const status of this.#link.nc.status()) {
      if (this.#stopping) return;
      if (status.type === 'disconnect') {
        this.#disconnected = true;
        for (const run of this.#runs.values()) {
          for (const actor of [...run.actors.values()]) {
            if (actor.dropped) continue;
            this.#drop(actor, 'the node lost its connection to NATS');
            this.#endShare(actor, false);
            givenUp.add(actor.lease);
          }
        }
        this.#log(
          'lost the connection to NATS; its actors stopped (their coordinators queue them again)',
        );
      } else if (status.type === 'reconnect') {
        this.#disconnected = false;
        // Coordinators could not beat while NATS was away: count from now.
        for (const run of this.#runs.values()) run.lastBeat = Date.now();
        // The coordinators queue these actors again: their old spawns are done with.
        for (const lease of givenUp) {
          lease.settled = true;
          if (lease.open === 0) this.#ackSoon(lease);
        }
        givenUp.clear();
        this.#log('reconnected to NATS');
      }
    }
  }

  /**
   * Stops taking work, gives running actors up to `graceMs` to finish, hands
   * the rest back to the queue (another node continues them from their
   * journals) and disconnects.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#slotFreed();
    const deadline = Date.now() + graceMs;
    while (this.#held > 0 && Date.now() < deadline) await delay(100);
    for (const run of [...this.#runs.values()]) {
      const back: NodeActor[] = [];
      for (const actor of [...run.actors.values()]) {
        if (actor.dropped) continue;
        this.#drop(actor, 'the node is shutting down');
        back.push(actor);
      }
      // Handed back at once, not after the ack wait: another node takes them now.
      await this.#handBack(back, 0);
      await this.#closeRun(run, 1000);
    }
    clearInterval(this.#tick);
    for (const sub of this.#subs) sub.unsubscribe();
    await this.#link.nc.flush().catch(() => undefined);
    await this.#fetching?.catch(() => undefined);
    await this.#link.nc.drain().catch(() => undefined);
  }

  // One pull of the shared queue in flight, of MESSAGES_PER_PULL messages: the server hands a
  // message to each waiting pull in turn, so nodes share a burst message by message (two pulls of
  // one node would take two messages in a row). The node's own queue has a pull of its own that
  // counts no room asked for by the other (a spawn that finds the node full goes back, see #take):
  // placed spawns never wait behind the shared ones.
  async #fetchLoop(shared: Consumer, placed: Consumer): Promise<void> {
    await Promise.all([this.#pull(shared), this.#pull(placed, false)]);
  }

  async #pull(consumer: Consumer, counted = true): Promise<void> {
    while (!this.#stopping) {
      const free = this.#options.maxActors - this.#held - (counted ? this.#asked : 0);
      if (free <= 0) {
        await new Promise<void>((resolve) => this.#slotWaiters.push(resolve));
        continue;
      }
      // Small batches: nodes that pull at once share the queue instead of one taking all. A
      // message holds up to SPAWNS_PER_MESSAGE spawns; one that does not fit goes back (#take).
      const asked = Math.max(1, Math.min(MESSAGES_PER_PULL, Math.floor(free / SPAWNS_PER_MESSAGE)));
      const room = Math.min(free, asked * SPAWNS_PER_MESSAGE);
      if (counted) this.#asked += room;
      let released = 0;
      try {
        const messages = await consumer.fetch({ max_messages: asked, expires: 2000 });
        for await (const msg of messages) {
          const share = Math.min(room - released, SPAWNS_PER_MESSAGE);
          released += share;
          if (counted) this.#asked -= share;
          if (this.#stopping) {
            msg.nak();
            continue;
          }
          this.#take(msg);
        }
      } catch {
        // Disconnected or the server restarts: try again shortly.
        if (!this.#stopping) await delay(250);
      } finally {
        if (counted) this.#asked -= room - released;
      }
    }
  }

  #slotFreed(): void {
    for (const wake of this.#slotWaiters.splice(0)) wake();
  }

  #take(msg: JsMsg): void {
    const spawns = splitSpawns(msg.data);
    const lease: WorkLease = { msg, spawns: spawns.length, open: spawns.length, settled: false };
    const over: Uint8Array[] = [];
    for (const spawn of spawns) {
      if (this.#held >= this.#options.maxActors) over.push(spawn);
      else this.#takeOne(lease, spawn);
    }
    // Full (pulls of the two queues met, or a message larger than the room asked for): the rest
    // goes back for later, or for another node (the whole message, when none of it fit).
    if (over.length > 0) void this.#requeue(lease, over, 500, false);
  }

  #takeOne(lease: WorkLease, spawn: Uint8Array): void {
    let work: WorkItem;
    try {
      work = this.#work.decode(spawn);
    } catch (error) {
      this.#log(`refused a spawn: ${errorMessage(error)}`);
      this.#letGo(lease, true);
      return;
    }
    const run = this.#runOf(work);
    if (run === undefined) {
      // A spawn of a coordinator session a resumed one replaced: nobody waits for it.
      this.#letGo(lease, true);
      return;
    }
    const actorId = work.start.actorId;
    const existing = run.actors.get(actorId);
    if (existing !== undefined && !existing.dropped && sameSpawn(existing.work, work)) {
      // Redelivered to the node that has it (the ack wait passed while it was busy): keep the one
      // running, whose own delivery of the message is acknowledged when it is done.
      return;
    }
    // An older spawn of the actor is still here (its drop is on the way): this one replaces it.
    if (existing !== undefined) {
      this.#drop(existing, 'a later spawn of it came');
      this.#endShare(existing, false);
    }
    this.#chains += 1;
    const actor: NodeActor = {
      actorId,
      work,
      lease,
      spawn,
      shareDone: false,
      run,
      hostId: undefined,
      pending: [],
      journal: [],
      inbox: [],
      inboxWritten: 0,
      journalWrite: Promise.resolve(),
      chain: `${this.#instance}.${this.#chains}`,
      chainStarted: false,
      dropped: false,
    };
    run.actors.set(actorId, actor);
    this.#held += 1;
    void this.#prepare(actor);
  }

  async #prepare(actor: NodeActor): Promise<void> {
    const { work, run } = actor;
    const refusal = this.#refusal(work);
    if (refusal !== undefined) {
      this.#log(`refused ${actor.actorId} of run ${run.runId}: ${refusal.message}`);
      this.#claim(actor, 0);
      this.#finish(actor, lost(refusal));
      return;
    }
    if (work.readJournal || actor.lease.msg.info.deliveryCount > 1) {
      try {
        actor.journal = await run.journal.read(journalKey(work));
        actor.inbox = run.journal.inboxOf(journalKey(work));
      } catch (error) {
        // Starting without its journal would pay for its finished calls again: let it come back.
        this.#log(
          `could not read the journal of ${actor.actorId}, retrying: ${errorMessage(error)}`,
        );
        if (!actor.dropped) {
          actor.dropped = true;
          run.actors.delete(actor.actorId);
          this.#held -= 1;
          this.#slotFreed();
          void this.#handBack([actor], 1000);
        }
        return;
      }
    }
    if (actor.dropped) return;
    this.#claim(actor, actor.journal.length);
    run.waiting.push(actor);
    this.#place(run);
  }

  // Its coordinator was replaced (a resumed session): what the old one left here is garbage now,
  // threads included. The new session's first spawn sets the run up again from its own config: a
  // coordinator resumed on another machine has another run folder (where write_file writes),
  // perhaps another workspace, and names other role and model keys.
  #replaceSession(run: NodeRun, session: Session): void {
    this.#sessions.set(run.runId, session);
    for (const actor of [...run.actors.values()]) {
      if (actor.dropped) continue;
      this.#drop(actor, 'its coordinator was replaced');
      this.#endShare(actor, true);
    }
    this.#log(`run ${run.runId}: a resumed coordinator took over; the old one's actors stopped`);
    void this.#closeRun(run, 2000);
  }

  // Why this node cannot host the work, if it cannot: another wire version or other tool code.
  #refusal(work: WorkItem): TroupeError | undefined {
    if (work.wire !== NATS_WIRE_VERSION) {
      return new TroupeError(
        'runtime.protocol',
        `node ${this.#options.name} speaks troupe NATS wire ${NATS_WIRE_VERSION}, the run uses ${work.wire}; run the same troupe version on the coordinator and the nodes.`,
      );
    }
    for (const module of work.config.toolModules) {
      const here = this.#hashOf(module.path);
      if (here !== module.sha256) {
        return new TroupeError(
          'runtime.protocol',
          here === undefined
            ? `node ${this.#options.name} has no tool module ${module.path}; deploy the coordinator's tool modules at the same path on every node.`
            : `node ${this.#options.name} has a different ${module.path} (sha256 ${here.slice(0, 12)}…, the coordinator's is ${module.sha256.slice(0, 12)}…); deploy the same code on every node.`,
        );
      }
    }
    return undefined;
  }

  #hashOf(path: string): string | undefined {
    let hash = this.#hashes.get(path);
    if (hash === undefined) {
      try {
        hash = createHash('sha256').update(readFileSync(path)).digest('hex');
      } catch {
        return undefined;
      }
      this.#hashes.set(path, hash);
    }
    return hash;
  }

  #claim(actor: NodeActor, replayed: number): void {
    // Nothing waits for a claim but the actor's own items, which follow it in the same batches.
    actor.run.up.pushLazy({
      type: 'node.claimed',
      actorId: actor.actorId,
      attempt: actor.work.start.attempt,
      generation: actor.work.generation,
      session: actor.work.session.id,
      replayed,
    });
  }

  // The node's share of the work's run, set up on first use; undefined for a replaced session's work.
  #runOf(work: WorkItem): NodeRun | undefined {
    const latest = this.#sessions.get(work.runId);
    if (
      latest !== undefined &&
      latest.id !== work.session.id &&
      work.session.startedAt < latest.startedAt
    )
      return undefined;
    let run = this.#runs.get(work.runId);
    if (run !== undefined && run.session.id !== work.session.id) {
      if (work.session.startedAt < run.session.startedAt) return undefined;
      this.#replaceSession(run, work.session);
      run = undefined;
    }
    if (run !== undefined) return run;
    this.#sessions.set(work.runId, work.session);
    const config = work.config;
    const transport = new LocalTransport({
      threads: this.#options.threads,
      // All at once: the node places its actors over the hosts it has (least loaded), and its
      // capacity (--max-actors) is what the coordinator sends it work by.
      startThreads: this.#options.threads,
      config: {
        runId: work.runId,
        workspace: this.#options.workspace ?? config.workspace,
        ...(config.outDir === undefined ? {} : { outDir: config.outDir }),
        grants: config.grants,
        toolModules: config.toolModules.map((module) => module.path),
        hasApprove: config.hasApprove,
        // Pooled user tools run on the coordinator's tool pool: their calls go up like any request.
        ...(config.isolateTools === true ? { isolateTools: true } : {}),
        ...(config.unsafeNoSandbox === true ? { unsafeNoSandbox: true } : {}),
        ...(config.sandbox === undefined ? {} : { sandbox: config.sandbox }),
        ...(config.mcp === undefined ? {} : { mcp: config.mcp }),
        // Budgeted calls reserve their room with the coordinator: the request goes up like any other.
        ...(config.budget === true ? { budget: true } : {}),
        // The run keeps a journal: its hosts record (entries and intents go up to the coordinator),
        // and a spawn taken over replays the order its messages were taken in (see #writeJournal).
        ...(config.journal === true ? { journal: true } : {}),
      },
      resourceLimits: { ...DEFAULT_AGENT_THREAD_LIMITS },
      workerUrl: this.#options.workerUrl,
    });
    const subject = subjects.up(work.runId);
    const created: NodeRun = {
      runId: work.runId,
      session: work.session,
      transport,
      journal: new JournalLog({
        link: this.#link,
        runId: work.runId,
        node: this.#options.name,
        log: (line) => this.#log(line),
      }),
      tools: undefined,
      hosts: new Map(),
      actors: new Map(),
      ending: new Map(),
      waiting: [],
      requests: new Map(),
      requestsBack: new Map(),
      nextRequest: 0,
      up: new Batcher(
        (items) => {
          if (!this.#link.nc.isClosed()) {
            this.#link.nc.publish(subject, encode({ node: this.#options.name, items }));
          }
        },
        1024,
        { lazyMs: UP_LAZY_MS },
      ),
      lastBeat: Date.now(),
    };
    this.#runs.set(work.runId, created);
    this.#log(`run ${work.runId}: hosting its actors on ${this.#options.threads} threads`);
    // User tools run here, on the node's own tool threads, called straight from the actor threads:
    // a call crosses no network (only a suspect, run alone, still goes to the coordinator's pool).
    if (config.isolateTools === true) created.tools = this.#toolPool(work, transport);
    transport.start({
      items: (hostId, items) => this.#fromHost(created, hostId, items),
      hostDown: (hostId, error) => {
        created.tools?.hostDown(hostId);
        this.#hostDown(created, hostId, error);
      },
      hostUp: (hostId) => {
        created.hosts.set(hostId, { load: 0, defined: new Set() });
        created.tools?.hostUp(hostId);
        this.#place(created);
      },
      error: (error, fatal) => {
        this.#log(`run ${created.runId}: ${error.message}`);
        if (!fatal) return;
        for (const actor of created.waiting.splice(0)) this.#finish(actor, lost(error));
      },
    });
    created.tools?.start();
    return created;
  }

  #toolPool(work: WorkItem, transport: LocalTransport): ToolPool {
    const { config } = work;
    return new ToolPool({
      threads: this.#options.toolThreads ?? 2,
      lanes: {
        hosts: () => transport.hosts(),
        open: (hostId, lane) =>
          transport.sendPorts(
            hostId,
            { type: 'tool.lane', thread: lane.thread, port: lane.port, state: lane.state },
            [lane.port],
          ),
        down: (hostId, item) => transport.send(hostId, item),
      },
      config: {
        runId: work.runId,
        workspace: this.#options.workspace ?? config.workspace,
        ...(config.outDir === undefined ? {} : { outDir: config.outDir }),
        grants: config.grants,
        toolModules: config.toolModules.map((module) => module.path),
        hasApprove: config.hasApprove,
        ...(config.unsafeNoSandbox === true ? { unsafeNoSandbox: true } : {}),
        ...(config.sandbox === undefined ? {} : { sandbox: config.sandbox }),
        // Bounded before it crosses, as on the coordinator's pool.
        maxResultChars: 64_000,
      },
      ...(this.#options.toolWorkerUrl === undefined
        ? {}
        : { workerUrl: this.#options.toolWorkerUrl }),
    });
  }

  // Starts waiting actors on the least-loaded threads (an actor whose older spawn is ending waits for it).
  #place(run: NodeRun): void {
    const blocked: NodeActor[] = [];
    this.#placeFree(run, blocked);
    run.waiting.unshift(...blocked);
  }

  #placeFree(run: NodeRun, blocked: NodeActor[]): void {
    while (run.waiting.length > 0) {
      const next = run.waiting[0] as NodeActor;
      if (next.dropped) {
        run.waiting.shift();
        continue;
      }
      if (run.ending.has(next.actorId)) {
        blocked.push(next);
        run.waiting.shift();
        continue;
      }
      let best: number | undefined;
      let bestLoad = Number.POSITIVE_INFINITY;
      for (const hostId of run.transport.hosts()) {
        const load = run.hosts.get(hostId)?.load ?? 0;
        if (run.hosts.has(hostId) && load < bestLoad) {
          best = hostId;
          bestLoad = load;
        }
      }
      if (best === undefined) return;
      run.waiting.shift();
      this.#startOn(next, best);
    }
  }

  #startOn(actor: NodeActor, hostId: number): void {
    const { run, work } = actor;
    const host = run.hosts.get(hostId);
    if (host === undefined) return;
    host.load += 1;
    actor.hostId = hostId;
    const send = (item: MainToWorkerInput): void => run.transport.send(hostId, item);
    if (!host.defined.has(work.roleKey)) {
      host.defined.add(work.roleKey);
      send({ type: 'role.define', key: work.roleKey, role: work.role });
    }
    if (!host.defined.has(work.modelKey)) {
      host.defined.add(work.modelKey);
      send({ type: 'model.define', key: work.modelKey, model: work.model });
    }
    // Field by field: V8 makes a spread followed by a new key (journal) slow, ~10 µs per spawn.
    const { start } = work;
    const item: Extract<MainToWorkerInput, { type: 'actor.start' }> = {
      type: 'actor.start',
      actorId: start.actorId,
      role: work.roleKey,
      model: work.modelKey,
      task: start.task,
      attempt: start.attempt,
      journal: { replay: actor.journal, record: true },
    };
    if (start.parentId !== undefined) item.parentId = start.parentId;
    if (start.key !== undefined) item.key = start.key;
    const entries = entriesOf(start.entries, actor.inbox);
    if (entries !== undefined) item.entries = entries;
    send(item);
    for (const item of actor.pending.splice(0)) send(item);
  }

  #fromHost(run: NodeRun, hostId: number, items: readonly HostWireItem[]): void {
    // The actor an item of this thread belongs to, while it counts (not dropped, and not an ending one's).
    const live = (actorId: string): NodeActor | undefined => {
      const actor = run.actors.get(actorId);
      return actor !== undefined && !actor.dropped && actor.hostId === hostId ? actor : undefined;
    };
    for (const entry of items) {
      // A node's hosts send events as objects (their config has no eventText); a text is read the same.
      const item = typeof entry === 'string' ? (JSON.parse(entry) as WorkerWireItem) : entry;
      if (isWireEvent(item)) {
        // Nobody waits for an event: it may wait a few milliseconds for company (see UP_LAZY_MS).
        if (live(item.agentId) !== undefined) run.up.pushLazy(item);
        continue;
      }
      switch (item.type) {
        case 'host.ready':
          break;
        case 'host.error':
          run.up.push(item);
          break;
        case 'journal.record': {
          const actor = live(item.actorId);
          const stored = (): void =>
            run.transport.send(hostId, {
              type: 'journal.stored',
              actorId: item.actorId,
              step: item.step,
            });
          // The call returns once its response is stored (or when there is nothing to store it for).
          if (actor === undefined || item.step !== actor.journal.length + 1) {
            stored();
            break;
          }
          actor.journal.push(item.response);
          void this.#writeJournal(actor, 1).then(stored);
          break;
        }
        case 'actor.result': {
          const ending = run.ending.get(item.actorId);
          if (ending?.hostId === hostId) {
            this.#ended(ending);
            break;
          }
          const actor = run.actors.get(item.actorId);
          if (actor?.hostId !== hostId) break;
          this.#finish(actor, item.outcome);
          break;
        }
        case 'channel.publish':
        case 'approval.requested':
        case 'spawn.requested':
        case 'child.requested':
        case 'tool.requested':
        case 'budget.reserve':
        case 'journal.intent': {
          if (live(item.actorId) === undefined) break;
          // Ids are per thread; the coordinator sees this node's, unique across its threads.
          const requestId = nextRequestId(run);
          run.requests.set(requestId, { hostId, requestId: item.requestId });
          run.requestsBack.set(`${hostId}:${item.requestId}`, requestId);
          run.up.push({ ...item, requestId });
          break;
        }
        case 'tool.cancelled': {
          const requestId = run.requestsBack.get(`${hostId}:${item.requestId}`);
          if (requestId !== undefined) run.up.push({ ...item, requestId });
          break;
        }
        case 'budget.settle': {
          // A withdrawn ask names its request (renumbered here); a settled reservation, the runtime's own id.
          if (item.requestId === undefined) {
            run.up.push(item);
            break;
          }
          const requestId = run.requestsBack.get(`${hostId}:${item.requestId}`);
          if (requestId !== undefined) run.up.push({ ...item, requestId });
          break;
        }
        case 'journal.entry': {
          const actor = live(item.actorId);
          if (actor === undefined) break;
          run.up.pushLazy(item);
          const inbox = inboxRecord(item);
          if (inbox !== undefined) {
            actor.inbox.push(inbox);
            void this.#writeJournal(actor, 0);
          }
          break;
        }
        case 'actor.turn':
          if (live(item.actorId) !== undefined) run.up.pushLazy(item);
          break;
        case 'mailbox.consumed':
          // A sender may be waiting for the room.
          if (live(item.actorId) !== undefined) run.up.push(item);
          break;
      }
    }
  }

  // The `fresh` new responses and any new inbox records, in this turn's batch of the run's journal;
  // a chain's first entry holds every response from call 1 and every inbox record, those it
  // replayed too, so a reader needs no other chain to replay it.
  #writeJournal(actor: NodeActor, fresh: number): Promise<unknown> {
    const from = actor.chainStarted ? actor.journal.length - fresh + 1 : 1;
    const inboxFrom = actor.chainStarted ? actor.inboxWritten : 0;
    actor.chainStarted = true;
    actor.inboxWritten = actor.inbox.length;
    const entry: NodeJournalEntry = {
      key: journalKey(actor.work),
      chain: actor.chain,
      from,
      responses: actor.journal.slice(from - 1),
    };
    if (actor.inbox.length > inboxFrom) entry.inbox = actor.inbox.slice(inboxFrom);
    actor.journalWrite = actor.run.journal.write(entry);
    return actor.journalWrite;
  }

  // The attempt ended here: its result goes up, then (posted, and its journal written) the spawn is acknowledged.
  #finish(actor: NodeActor, outcome: ActorOutcome): void {
    const { run } = actor;
    if (run.actors.get(actor.actorId) !== actor) return;
    run.actors.delete(actor.actorId);
    this.#release(actor);
    if (actor.dropped) return;
    run.up.push({ type: 'actor.result', actorId: actor.actorId, outcome });
    void actor.journalWrite.then(() => this.#endShare(actor, true));
  }

  // The actor's part of its message is done with here: `settled` (finished, refused, over) or only
  // let go. Once per actor.
  #endShare(actor: NodeActor, settled: boolean): void {
    if (actor.shareDone) return;
    actor.shareDone = true;
    this.#letGo(actor.lease, settled);
  }

  #letGo(lease: WorkLease, settled: boolean): void {
    lease.open -= 1;
    if (settled) lease.settled = true;
    if (lease.open === 0 && lease.settled) this.#ackSoon(lease);
  }

  /**
   * Hands actors' spawns back to the queue (after `delayMs`), for this node later or another:
   * a message whose every spawn goes back goes back whole (`nak`); else the spawns go back as a
   * message of their own, and their part of this one is done once it is stored. Its actors are
   * dropped already.
   */
  async #handBack(actors: readonly NodeActor[], delayMs: number): Promise<void> {
    const byLease = new Map<WorkLease, Uint8Array[]>();
    for (const actor of actors) {
      if (actor.shareDone) continue;
      actor.shareDone = true;
      const spawns = byLease.get(actor.lease) ?? [];
      if (spawns.length === 0) byLease.set(actor.lease, spawns);
      spawns.push(actor.spawn);
    }
    await Promise.all(
      [...byLease].map(([lease, spawns]) => this.#requeue(lease, spawns, delayMs, true)),
    );
  }

  // `started`: their actors began here, so whichever node takes them continues from the journal
  // (a message that comes back whole says so by its delivery count).
  async #requeue(
    lease: WorkLease,
    spawns: Uint8Array[],
    delayMs: number,
    started: boolean,
  ): Promise<void> {
    if (spawns.length === lease.spawns && lease.open === lease.spawns) {
      lease.open = 0;
      lease.msg.nak(delayMs);
      return;
    }
    if (delayMs > 0) await delay(delayMs);
    const again =
      started || lease.msg.info.deliveryCount > 1 ? spawns.map(withJournalRead) : spawns;
    try {
      await this.#link.writer.publish(lease.msg.subject, joinSpawns(again));
    } catch (error) {
      // Not queued again: the message stays unacknowledged here, and JetStream hands it on after
      // its ack wait once nothing of it runs here (a node does not heartbeat a message it idles).
      this.#log(`could not hand ${spawns.length} spawns back: ${errorMessage(error)}`);
      return;
    }
    for (let index = 0; index < spawns.length; index += 1) this.#letGo(lease, true);
  }

  // The result goes with this turn's batch (the results of a turn share a message), and before the
  // spawn's ack on the same connection, which the server reads in order: it never has the ack
  // without the result (no PING round trip per actor needed to know it). The acks of a turn go
  // together too: one socket write for all, not one per actor.
  #ackSoon(lease: WorkLease): void {
    this.#acks.push(lease.msg);
    if (this.#acks.length > 1) return;
    setImmediate(() => {
      const acks = this.#acks;
      this.#acks = [];
      for (const run of this.#runs.values()) run.up.flush();
      // A closed connection left the spawns unacknowledged: JetStream hands them on, as for a death.
      if (this.#link.nc.isClosed()) return;
      for (const msg of acks) msg.ack();
    });
  }

  #release(actor: NodeActor): void {
    if (actor.hostId !== undefined) {
      const host = actor.run.hosts.get(actor.hostId);
      if (host !== undefined) host.load -= 1;
      actor.hostId = undefined;
    }
    this.#held -= 1;
    this.#slotFreed();
  }

  // Stops hosting an actor without a word up: cancelled in its thread, its result (when it comes) ignored.
  #drop(actor: NodeActor, reason: string, kill = false): void {
    if (actor.dropped) return;
    actor.dropped = true;
    const { run } = actor;
    if (run.actors.get(actor.actorId) === actor) run.actors.delete(actor.actorId);
    if (actor.hostId === undefined) {
      // Not started yet (its journal is being read, or no thread is up): it ends here.
      this.#held -= 1;
      this.#slotFreed();
      return;
    }
    // In its thread until its result comes back (#ended).
    run.ending.set(actor.actorId, actor);
    if (kill) run.transport.terminate(actor.hostId, reason);
    else run.transport.send(actor.hostId, { type: 'actor.cancel', actorId: actor.actorId, reason });
  }

  // A dropped actor's thread let it go: its slot is free, and a later spawn of it can start.
  #ended(actor: NodeActor): void {
    const { run } = actor;
    if (run.ending.get(actor.actorId) === actor) run.ending.delete(actor.actorId);
    this.#release(actor);
    this.#place(run);
  }

  #hostDown(run: NodeRun, hostId: number, error: TroupeError): void {
    run.hosts.delete(hostId);
    for (const actor of [...run.ending.values()]) if (actor.hostId === hostId) this.#ended(actor);
    for (const actor of [...run.actors.values()]) {
      if (actor.hostId === hostId) this.#finish(actor, lost(error));
    }
  }

  #fromCoordinator(msg: Msg): void {
    const runId = msg.subject.split('.')[2] ?? '';
    const run = this.#runs.get(runId);
    if (run === undefined) return;
    let items: DownItem[];
    try {
      items = decode(msg.data, DownBatchSchema, 'A batch from the coordinator').items;
    } catch (error) {
      this.#log(`run ${runId}: ${errorMessage(error)}`);
      return;
    }
    for (const item of items) this.#handleDown(run, item);
  }

  #handleDown(run: NodeRun, item: DownItem): void {
    switch (item.type) {
      case 'node.drop': {
        const actor = run.actors.get(item.actorId);
        if (
          actor === undefined ||
          actor.work.start.attempt !== item.attempt ||
          actor.work.generation !== item.generation ||
          actor.work.session.id !== item.session
        ) {
          return;
        }
        this.#drop(actor, item.reason, item.kill === true);
        // Done: the attempt is over. Else it runs elsewhere now, perhaps from this very message.
        this.#endShare(actor, item.done === true);
        return;
      }
      case 'node.run_closed':
        for (const actor of [...run.actors.values()]) {
          if (actor.dropped) continue;
          this.#drop(actor, 'the run is closed');
          this.#endShare(actor, true);
        }
        void this.#closeRun(run, 5000);
        return;
      case 'tool.progress': {
        const request = run.requests.get(item.requestId);
        if (request !== undefined) {
          run.transport.send(request.hostId, { ...item, requestId: request.requestId });
        }
        return;
      }
      case 'publish.answered':
      case 'approval.answered':
      case 'spawn.answered':
      case 'child.answered':
      case 'tool.answered':
      case 'budget.answered':
      case 'journal.answered': {
        const request = run.requests.get(item.requestId);
        if (request === undefined) return;
        run.requests.delete(item.requestId);
        run.requestsBack.delete(`${request.hostId}:${request.requestId}`);
        run.transport.send(request.hostId, { ...item, requestId: request.requestId });
        return;
      }
      case 'actor.cancel':
      case 'mailbox.deliver':
      case 'channel.closed': {
        const actor = run.actors.get(item.actorId);
        if (actor === undefined || actor.dropped) return;
        if (actor.hostId === undefined) actor.pending.push(item);
        else run.transport.send(actor.hostId, item);
        return;
      }
      case 'role.define':
      case 'model.define':
      case 'actor.start':
      case 'journal.stored':
      case 'host.shutdown':
        // Starts come from the work queue, never down a run's subject.
        return;
    }
  }

  async #closeRun(run: NodeRun, graceMs: number): Promise<void> {
    if (this.#runs.get(run.runId) !== run) return;
    this.#runs.delete(run.runId);
    run.up.close();
    this.#log(`run ${run.runId}: closed`);
    await run.transport.close(graceMs);
    await run.tools?.close();
  }

  #onBeat(msg: Msg): void {
    const runId = msg.subject.split('.')[2] ?? '';
    const run = this.#runs.get(runId);
    if (run === undefined) return;
    let session: Session;
    try {
      session = decode(msg.data, BeatSchema, 'A coordinator heartbeat').session;
    } catch {
      // A malformed heartbeat keeps nothing alive.
      return;
    }
    if (session.id === run.session.id) run.lastBeat = Date.now();
    // A resumed coordinator beats from its start: the old one's actors stop before the new one's spawns come.
    else if (session.startedAt > run.session.startedAt) this.#replaceSession(run, session);
  }

  #onTick(): void {
    const now = Date.now();
    // A late tick: this process was busy, and the coordinators' beats may be unread yet.
    const late = now - this.#lastTick > 2 * Math.max(100, Math.floor(this.#deadAfterMs / 3));
    this.#lastTick = now;
    for (const run of this.#runs.values()) {
      const leases = new Set<WorkLease>();
      for (const actor of run.actors.values()) if (!actor.dropped) leases.add(actor.lease);
      for (const lease of leases) lease.msg.working();
      if (!late && !this.#disconnected && now - run.lastBeat > this.#deadAfterMs) {
        // The coordinator is gone: stop paying for its actors. A resumed one queues them again.
        this.#log(`run ${run.runId}: its coordinator is silent; stopping its actors`);
        for (const actor of [...run.actors.values()]) {
          if (actor.dropped) continue;
          this.#drop(actor, 'its coordinator is gone');
          this.#endShare(actor, true);
        }
        void this.#closeRun(run, 2000);
      }
    }
    this.#publishInfo();
  }

  #publishInfo(): void {
    if (!this.#link.nc.isClosed()) this.#link.nc.publish(subjects.nodesBeat, encode(this.info()));
  }

  #log(line: string): void {
    this.#options.log?.(line);
  }
}

// The entries an actor starts with: the coordinator's (a resumed run's journal), with the order
// of its messages as the node journal has it when that holds any (it was taken over), since the
// node journal's responses are the ones it replays.
function entriesOf(
  entries: readonly AgentJournalEntry[] | undefined,
  inbox: readonly AgentJournalEntry[],
): AgentJournalEntry[] | undefined {
  if (inbox.length === 0) return entries === undefined ? undefined : [...entries];
  return [...(entries ?? []).filter((entry) => entry.kind !== 'inbox'), ...inbox];
}

// An inbox record among a host's journal entries (the order an actor took its messages in), checked whole.
function inboxRecord(
  item: Extract<WorkerWireItem, { type: 'journal.entry' }>,
): AgentJournalEntry | undefined {
  let entry: unknown = item.entry;
  if (item.line !== undefined) {
    // Most lines are model responses and tool results: only a line that may be an inbox record is read.
    if (!item.line.includes('"inbox"')) return undefined;
    entry = readJournalLine(item.line)?.entry;
  }
  if ((entry as { kind?: unknown } | undefined)?.kind !== 'inbox') return undefined;
  const parsed = AgentJournalEntrySchema.safeParse(entry);
  return parsed.success ? parsed.data : undefined;
}

function journalKey(work: WorkItem): string {
  return work.start.key ?? work.start.actorId;
}

function nextRequestId(run: NodeRun): number {
  run.nextRequest += 1;
  return run.nextRequest;
}

function lost(error: TroupeError): ActorOutcome {
  return {
    stopReason: 'error',
    final: '',
    usage: emptyUsage(),
    steps: 0,
    error: serializeError(error),
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// The same spawn of an actor (delivered again), not a later one.
function sameSpawn(a: WorkItem, b: WorkItem): boolean {
  return (
    a.session.id === b.session.id &&
    a.start.attempt === b.start.attempt &&
    a.generation === b.generation
  );
}
