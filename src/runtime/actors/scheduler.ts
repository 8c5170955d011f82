import type { EventLoopUtilization } from 'node:perf_hooks';
import type { MessagePort } from 'node:worker_threads';
import type { CompressionSetting } from '../../agent/history.js';
import type { JournalEntry } from '../../agent/journal.js';
import type { TroupeError } from '../../errors.js';
import type { ModelSpec } from '../../model/model.js';
import { type AnyRole, toRoleSpec } from '../../roles/role.js';
import { Fifo } from '../../util/fifo.js';
import type { HostWireItem, MainToWorkerInput } from '../wire/protocol.js';
import type { Transport } from '../wire/transport.js';
import type { ActorRecord } from './actor.js';

/** What the scheduler reports up to the runtime. */
export interface SchedulerEvents {
  items(hostId: number, items: HostWireItem[]): void;
  hostDown(hostId: number, error: TroupeError): void;
  /** A host is up (optional). */
  hostUp?(hostId: number): void;
  error(error: TroupeError, fatal: boolean): void;
  /** Channels already closed for an actor (a (re)started attempt is told again). */
  closedFor(actorId: string): readonly string[];
  /** An actor starts an attempt after its first (its publications made again are not delivered again). */
  restarted(actorId: string): void;
  /** What the run's journal holds for an actor, replayed by a (re)started attempt. */
  journalFor(record: ActorRecord): readonly JournalEntry[] | undefined;
}

/** Actors a host may hold at first when its transport says how busy it is (`Transport.busy`). */
export const FIRST_ROOM = 1024;
/** How often the scheduler looks whether a full host has time for more, in milliseconds. */
const ROOM_LOOK_MS = 100;
/** Busier than this (event-loop utilisation), a host has no time for more actors. */
const SATURATED = 0.9;
/**
 * Looks in a row (ROOM_LOOK_MS apart) that found every host saturated while
 * they held actors before the transport adds a host even with nothing
 * waiting: a second of it, so a burst that a thread works off between model
 * calls does not start one, and work that keeps a thread busy does.
 */
const SATURATED_LOOKS = 10;

/**
 * Admission and placement: a FIFO queue of actors waiting for a place, and
 * the count of actors on each host. An actor goes to the least-loaded host
 * with room; with no room anywhere, it waits. Hosts start with the
 * first actor, so a runtime that spawns nothing starts no thread.
 *
 * A host's room is `maxPerHost` when the transport cannot say how busy its
 * hosts are. When it can, a host's room starts at FIRST_ROOM and grows, up
 * to `maxPerHost`, each time the scheduler finds the host full with actors
 * waiting and neither its event loop nor the main thread's (which every
 * actor's events cross) was saturated since the last look (by up to four times, in
 * proportion to the time it had to spare). Actors waiting on slow
 * models leave a thread idle, so its room grows within a few looks to what
 * they need; a thread busy every moment gains nothing from more actors at
 * once but memory and collection work (100,000 agents spawned together all
 * held by two threads cost twice the memory of ~1,500 at a time each, for
 * the same work), so there the rest wait here, as small records.
 */
export class Scheduler {
  readonly #transport: Transport;
  readonly #events: SchedulerEvents;
  readonly #maxPerHost: number;
  // The run's history compression, under each role's own (toRoleSpec merges them).
  readonly #compression: CompressionSetting | undefined;
  readonly #queue = new Fifo<ActorRecord>();
  readonly #load = new Map<number, number>();
  readonly #roleKeys = new WeakMap<AnyRole, string>();
  readonly #modelKeys = new WeakMap<object, string>();
  // The role and model keys each host has been sent already.
  readonly #defined = new Map<number, Set<string>>();
  #nextKey = 1;
  #started = false;
  #pumpQueued = false;
  // Per host: how many actors it may hold now (see the class comment).
  readonly #room = new Map<number, number>();
  // Per host: when it was first found full with actors waiting (its busy figure counts from then).
  readonly #fullSince = new Map<number, number>();
  #look: NodeJS.Timeout | undefined;
  // While the transport may add hosts: a look at how busy they are (see #watchSaturation).
  #watch: NodeJS.Timeout | undefined;
  #hotLooks = 0;
  // The main thread's event-loop use when the pending look was set (see #grow).
  #mainSince: EventLoopUtilization | undefined;
  #closed = false;

  constructor(
    transport: Transport,
    events: SchedulerEvents,
    maxPerHost: number,
    compression?: CompressionSetting,
  ) {
    this.#transport = transport;
    this.#events = events;
    this.#maxPerHost = maxPerHost;
    this.#compression = compression;
  }

  // How busy the main thread was since the pending look was set (event-loop utilisation, 0 to 1).
  #mainBusy(): number {
    const since = this.#mainSince;
    if (since === undefined) return 0;
    return (
      performance.eventLoopUtilization(performance.eventLoopUtilization(), since)?.utilization ?? 0
    );
  }

  /** Actors waiting for a place. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * Actors waiting that no host could take even at `maxPerHost` (what
   * `maxQueued` bounds): those held back only while their hosts' room grows
   * do not count.
   */
  get overflow(): number {
    // What the hosts hold now, and the hosts the transport may still add.
    let spare = this.#maxPerHost * (this.#started ? (this.#transport.spareHosts?.() ?? 0) : 0);
    for (const hostId of this.hosts())
      spare += Math.max(0, this.#maxPerHost - (this.#load.get(hostId) ?? 0));
    return Math.max(0, this.#queue.length - spare);
  }

  /** True once the transport was started. */
  get started(): boolean {
    return this.#started;
  }

  /** Queues an actor (state `queued`) and places what can be placed. */
  enqueue(record: ActorRecord): void {
    this.#queue.push(record);
    this.start();
    this.pump();
  }

  /** Starts the transport (threads, hosts) if it is not started yet; idempotent. */
  start(): void {
    if (!this.#started) {
      this.#started = true;
      this.#transport.start({
        items: (hostId, items) => this.#events.items(hostId, items),
        hostDown: (hostId, error) => {
          this.#load.delete(hostId);
          this.#room.delete(hostId);
          this.#fullSince.delete(hostId);
          this.#defined.delete(hostId);
          this.#events.hostDown(hostId, error);
          this.pump();
        },
        hostUp: (hostId) => {
          this.#load.set(hostId, 0);
          this.#events.hostUp?.(hostId);
          this.pump();
        },
        error: (error, fatal) => this.#events.error(error, fatal),
      });
    }
  }

  /** Removes and returns every queued actor (when no host will ever come). */
  drain(): ActorRecord[] {
    return this.#queue.drain();
  }

  /** Places queued actors while some host has room. */
  pump(): void {
    while (this.#queue.length > 0) {
      const hostId = this.#pickHost();
      if (hostId === undefined) {
        // Every host holds all it ever may: only another host makes room. (None at all: they
        // are being replaced, or their threads fail to start; the transport sees to that.)
        const hosts = this.#transport.hosts();
        if (hosts.length > 0 && hosts.every((id) => this.roomOf(id) >= this.#maxPerHost))
          this.#addHost();
        this.#lookLater();
        return;
      }
      const record = this.#queue.shift() as ActorRecord;
      if (record.state === 'queued') this.#startOn(record, hostId);
    }
  }

  /** How many actors a host may hold now. */
  roomOf(hostId: number): number {
    const room = this.#room.get(hostId);
    if (room !== undefined) return room;
    return this.#transport.busy === undefined
      ? this.#maxPerHost
      : Math.min(this.#maxPerHost, FIRST_ROOM);
  }

  // While actors wait and some host's room may still grow: look again in a moment.
  #lookLater(): void {
    if (this.#look !== undefined || this.#closed || this.#transport.busy === undefined) return;
    const hosts = this.#transport.hosts();
    if (!hosts.some((hostId) => this.roomOf(hostId) < this.#maxPerHost)) return;
    this.#mainSince = performance.eventLoopUtilization();
    this.#look = setTimeout(() => {
      this.#look = undefined;
      this.#grow();
      this.pump();
    }, ROOM_LOOK_MS);
  }

  // A host full for a while that had time to spare in that while gets twice the room. Its busy
  // figure covers its last heartbeat's window: only one that began after it was full counts.
  // When every host was full that long and saturated, with actors waiting, the transport adds a
  // host instead, when it can. Actor threads start as the work needs them: actors mostly wait
  // on models, so one thread holds a thousand of them with time to spare, and each thread more
  // is an isolate to warm up and feed (1 thread against 2 at N = 1,000 on two cores: less CPU
  // per agent and ~26 MiB less peak RSS; docs/PERFORMANCE.md).
  #grow(): void {
    const now = performance.now();
    // Every actor's events cross the main thread: while it is saturated, more actors at once
    // would only wait there, in memory (100,000 at once held 1.5-2 GiB for no gain in time).
    const mainBusy = this.#mainBusy();
    const hosts = this.#transport.hosts();
    // Judged before any room grows below (a host that gets room had time to spare anyway).
    const crowded =
      this.#queue.length > 0 && hosts.length > 0 && hosts.every((id) => this.#crowded(id, now));
    for (const hostId of hosts) {
      const room = this.roomOf(hostId);
      if (room >= this.#maxPerHost || (this.#load.get(hostId) ?? 0) < room) {
        this.#fullSince.delete(hostId);
        continue;
      }
      const since = this.#fullSince.get(hostId);
      if (since === undefined) {
        this.#fullSince.set(hostId, now);
        continue;
      }
      if (now - since < 2 * ROOM_LOOK_MS) continue;
      const busy = this.#transport.busy?.(hostId);
      if (busy !== undefined && busy < SATURATED && mainBusy < SATURATED) {
        // In proportion to the time it had to spare: a host idle 80% of the time takes four times as many.
        const factor = Math.min(4, Math.max(1.25, SATURATED / Math.max(busy, 0.01)));
        this.#room.set(hostId, Math.min(this.#maxPerHost, Math.ceil(room * factor)));
        this.#fullSince.delete(hostId);
      }
    }
    if (crowded) this.#addHost();
  }

  // Asks the transport for one more host; the watch's count of saturated looks starts again
  // from a host added (by any of the rules), so it measures a second with the new one too.
  #addHost(): void {
    if (this.#transport.grow?.() === true) this.#hotLooks = 0;
  }

  // A full host that only another host can relieve: at maxActorsPerThread, or full for two looks
  // and saturated since.
  #crowded(hostId: number, now: number): boolean {
    const room = this.roomOf(hostId);
    if ((this.#load.get(hostId) ?? 0) < room) return false;
    if (room >= this.#maxPerHost) return true;
    const since = this.#fullSince.get(hostId);
    if (since === undefined || now - since < 2 * ROOM_LOOK_MS) return false;
    const busy = this.#transport.busy?.(hostId);
    return busy !== undefined && busy >= SATURATED;
  }

  /** Sends an item to the host the actor runs on; false when it runs nowhere now. */
  send(record: ActorRecord, item: MainToWorkerInput): boolean {
    if (record.state !== 'running' || record.hostId === undefined) return false;
    this.#transport.send(record.hostId, item);
    return true;
  }

  /** Answers a host directly (replies to its requests). */
  reply(hostId: number, item: MainToWorkerInput): void {
    this.#transport.send(hostId, item);
  }

  /** Live hosts. */
  hosts(): readonly number[] {
    return this.#started ? this.#transport.hosts() : [];
  }

  /** Sends an item carrying ports to a host; false when it cannot take them (see Transport.sendPorts). */
  sendPorts(hostId: number, item: MainToWorkerInput, ports: readonly MessagePort[]): boolean {
    return this.#transport.sendPorts?.(hostId, item, ports) ?? false;
  }

  /**
   * Frees the actor's place on its host, and gives it to the next actor
   * waiting (in a microtask: the actor that leaves finishes first, so a
   * child it cancels on the way out is not started for nothing).
   */
  release(record: ActorRecord): void {
    if (record.hostId === undefined) return;
    const load = this.#load.get(record.hostId);
    if (load !== undefined) this.#load.set(record.hostId, load - 1);
    record.hostId = undefined;
    if (this.#queue.length > 0 && !this.#pumpQueued) {
      this.#pumpQueued = true;
      queueMicrotask(() => {
        this.#pumpQueued = false;
        this.pump();
      });
    }
  }

  /** Stops the host an actor runs on (the last resort for a hung actor). */
  terminate(record: ActorRecord, reason: string): void {
    if (record.hostId !== undefined) this.#transport.terminate(record.hostId, reason, record.id);
  }

  /** Shuts the hosts down (when they were ever started). */
  async close(graceMs: number): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#look);
    this.#look = undefined;
    clearInterval(this.#watch);
    this.#watch = undefined;
    if (this.#started) await this.#transport.close(graceMs);
  }

  // The least-loaded host with room; hosts whose heartbeat is late only when no other has room.
  #pickHost(): number | undefined {
    let best: number | undefined;
    let bestLoad = Number.POSITIVE_INFINITY;
    let lateBest: number | undefined;
    let lateLoad = Number.POSITIVE_INFINITY;
    for (const hostId of this.#transport.hosts()) {
      const load = this.#load.get(hostId) ?? 0;
      if (load >= this.roomOf(hostId) || (load >= bestLoad && load >= lateLoad)) continue;
      if (this.#transport.late?.(hostId) === true) {
        if (load < lateLoad) {
          lateBest = hostId;
          lateLoad = load;
        }
      } else if (load < bestLoad) {
        best = hostId;
        bestLoad = load;
      }
    }
    return best ?? lateBest;
  }

  // Actors run and the transport may still add hosts: looks every ROOM_LOOK_MS whether every host
  // has been saturated with actors on it for SATURATED_LOOKS looks in a row, and adds one then.
  // Actors stay where they started, so this is for what comes next: the actors spawned from then
  // on go to the new host (the least loaded) while the busy one works off its own.
  #watchSaturation(): void {
    const transport = this.#transport;
    if (this.#watch !== undefined || this.#closed) return;
    if (transport.grow === undefined || transport.busy === undefined) return;
    if ((transport.spareHosts?.() ?? 0) === 0) return;
    this.#watch = setInterval(() => this.#lookAtSaturation(), ROOM_LOOK_MS);
    this.#watch.unref();
  }

  #lookAtSaturation(): void {
    const transport = this.#transport;
    if (this.#closed || (transport.spareHosts?.() ?? 0) === 0) {
      clearInterval(this.#watch);
      this.#watch = undefined;
      return;
    }
    let held = 0;
    let hot = true;
    for (const hostId of transport.hosts()) {
      held += this.#load.get(hostId) ?? 0;
      const busy = transport.busy?.(hostId);
      if (busy === undefined || busy < SATURATED) hot = false;
    }
    this.#hotLooks = hot && held >= 2 ? this.#hotLooks + 1 : 0;
    if (this.#hotLooks >= SATURATED_LOOKS) this.#addHost();
  }

  #startOn(record: ActorRecord, hostId: number): void {
    this.#watchSaturation();
    record.state = 'running';
    record.hostId = hostId;
    record.attempt += 1;
    this.#load.set(hostId, (this.#load.get(hostId) ?? 0) + 1);
    if (record.attempt > 1) this.#events.restarted(record.id);
    const send = (item: MainToWorkerInput): void => this.#transport.send(hostId, item);
    const journal = this.#events.journalFor(record);
    send({
      type: 'actor.start',
      actorId: record.id,
      ...(record.parentId === undefined ? {} : { parentId: record.parentId }),
      role: this.#defineRole(hostId, record.role),
      model: this.#defineModel(hostId, record.model),
      task: record.task,
      attempt: record.attempt,
      ...(record.key === undefined ? {} : { key: record.key }),
      ...(journal === undefined || journal.length === 0 ? {} : { entries: [...journal] }),
    });
    // Behind the start, on the same port: every message the actor was sent so
    // far (a restarted attempt reads them again), then its closed channels.
    record.consumed = 0;
    record.mailbox.reset(record.log.length);
    for (const item of record.log) send(item);
    for (const channel of this.#events.closedFor(record.id)) {
      send({ type: 'channel.closed', actorId: record.id, channel });
    }
    if (record.stop !== undefined) {
      send({ type: 'actor.cancel', actorId: record.id, reason: record.stop.error.message });
    }
  }

  // Roles and models cross to a host once; actors name them by key.
  #defineRole(hostId: number, role: AnyRole): string {
    let key = this.#roleKeys.get(role);
    if (key === undefined) {
      key = `${role.name}#${this.#nextKey++}`;
      this.#roleKeys.set(role, key);
    }
    const defined = this.#definedOn(hostId);
    if (!defined.has(key)) {
      defined.add(key);
      this.#transport.send(hostId, {
        type: 'role.define',
        key,
        role: toRoleSpec(role, this.#compression),
      });
    }
    return key;
  }

  #defineModel(hostId: number, model: ModelSpec): string {
    let key = this.#modelKeys.get(model);
    if (key === undefined) {
      key = `model#${this.#nextKey++}`;
      this.#modelKeys.set(model, key);
    }
    const defined = this.#definedOn(hostId);
    if (!defined.has(key)) {
      defined.add(key);
      this.#transport.send(hostId, { type: 'model.define', key, model });
    }
    return key;
  }

  #definedOn(hostId: number): Set<string> {
    let defined = this.#defined.get(hostId);
    if (defined === undefined) {
      defined = new Set();
      this.#defined.set(hostId, defined);
    }
    return defined;
  }
}
