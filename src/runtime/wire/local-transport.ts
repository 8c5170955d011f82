import {
  MessageChannel,
  type MessagePort,
  type ResourceLimits,
  receiveMessageOnPort,
} from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { errorMessage, isTroupeError, TroupeError } from '../../errors.js';
import { Batcher } from './batcher.js';
import {
  HOST_NAME_OFFSET,
  HOST_STATE,
  HOST_STATE_BYTES,
  type HostConfig,
  type HostTask,
  type MainToWorkerInput,
  parseHostMessage,
} from './protocol.js';
import {
  type AgentPoolShape,
  adoptPrestartedPool,
  agentWorkerUrl,
  createAgentPool,
} from './thread-start.js';
import type { Transport, TransportHandlers } from './transport.js';

export { agentWorkerUrl } from './thread-start.js';

/** Options for the local (worker-thread) transport. */
export interface LocalTransportOptions {
  /**
   * The most threads in the pool; each hosts many actors. One starts with
   * the transport, the others one at a time as `grow()` asks for them.
   */
  threads: number;
  /** Threads (hosts) started at once (default 1, at most `threads`). */
  startThreads?: number | undefined;
  /** What every host is built from: sent with each host's task. */
  config: HostConfig;
  /** Per-thread memory limits; a thread past them dies and is replaced. */
  resourceLimits?: ResourceLimits | undefined;
  /** The built worker entry (default dist/workers/agent-entry.cjs). */
  workerUrl?: URL | undefined;
  /**
   * A ready thread whose heartbeat stops this long is blocked: the watchdog
   * stops it, naming the actor and tool that held it when it can (absent:
   * no watchdog).
   */
  blockedMs?: number | undefined;
}

/** Why the watchdog stopped a host: its culprit when one was named, in the hostDown error's details. */
export interface BlockedHost {
  blockedMs: number;
  culprit?: { actorId: string; tool: string } | undefined;
}

// A host's heartbeat (every 100 ms) older than this: its busy figure is stale, the thread saturated.
const BUSY_BEAT_LATE_MS = 250;

interface LocalHost {
  id: number;
  port: MessagePort;
  batcher: Batcher<MainToWorkerInput>;
  // Aborting the host task stops its thread (or drops the task while it still waits for one).
  stop: AbortController;
  alive: boolean;
  ready: boolean;
  done: Promise<unknown>;
  stopReason: string | undefined;
  state: Int32Array;
  beat: number;
  beatAt: number;
  blocked: BlockedHost | undefined;
}

// Hosts that die before saying hello: after this many in a row, the threads cannot start at all.
const MAX_BOOT_FAILURES = 3;
// How long after a thread failed to start the next host starts.
const BOOT_RETRY_MS = 100;

/**
 * Actors on a piscina pool. Each thread runs one long-lived host task that
 * owns a private MessagePort (transferred at start): every protocol item in
 * both directions goes over it, batched per event-loop turn, so ordering per
 * host is the port's FIFO order. `atomics: 'disabled'` keeps an idle
 * thread's event loop running between messages. Actors are cancelled
 * cooperatively over the port; piscina's abort signal is used only to stop a
 * whole host (`terminate`), which is exactly what aborting its task does.
 */
export class LocalTransport implements Transport {
  readonly #options: LocalTransportOptions;
  readonly #hosts = new Map<number, LocalHost>();
  #pool: Piscina | undefined;
  #handlers: TransportHandlers | undefined;
  #nextHostId = 1;
  #bootFailures = 0;
  #shape: AgentPoolShape | undefined;
  // A host of the current pool said ready: its threads can start.
  #poolReady = false;
  // Host starts waiting after a thread failed to start (see #startAfterBootFailure).
  readonly #retries = new Set<NodeJS.Timeout>();
  #closing = false;
  // Hosts the pool keeps: starts at `startThreads`, one more at each grow(), at most `threads`.
  #wanted = 0;
  #watchdog: NodeJS.Timeout | undefined;
  #sweptAt = 0;

  constructor(options: LocalTransportOptions) {
    this.#options = options;
  }

  start(handlers: TransportHandlers): void {
    if (this.#pool !== undefined || this.#closing) return;
    this.#handlers = handlers;
    const threads = this.#options.threads;
    const shape = {
      filename: (this.#options.workerUrl ?? agentWorkerUrl()).href,
      threads,
      resourceLimits: this.#options.resourceLimits,
    };
    // Threads the CLI started while it loaded (thread-start.ts), when they have this shape.
    const prestarted = adoptPrestartedPool(shape);
    this.#shape = shape;
    const first = Math.max(1, Math.min(threads, this.#options.startThreads ?? 1));
    this.#pool = this.#listen(prestarted?.pool ?? createAgentPool(shape, first));
    for (const error of prestarted?.errors ?? []) {
      handlers.error(asTroupeError(error, 'The worker pool reported an error'), false);
    }
    this.#wanted = first;
    for (let index = 0; index < first; index += 1) this.#startHost();
    const blockedMs = this.#options.blockedMs;
    if (blockedMs !== undefined) {
      const every = Math.max(25, Math.min(1000, Math.floor(blockedMs / 4)));
      this.#sweptAt = performance.now();
      this.#watchdog = setInterval(() => this.#watch(blockedMs, every), every);
      this.#watchdog.unref();
    }
  }

  /** True when a host's heartbeat is late (a quarter of the watchdog's bound, at least 1 s): place elsewhere. */
  late(hostId: number): boolean {
    const host = this.#hosts.get(hostId);
    const blockedMs = this.#options.blockedMs;
    if (host === undefined || !host.ready || blockedMs === undefined) return false;
    this.#readBeat(host);
    return performance.now() - host.beatAt >= Math.max(1000, blockedMs / 4);
  }

  /**
   * How busy a ready host's thread was between its last two heartbeats
   * (0–1); 1 when its heartbeat is late (a thread too busy to run its timer
   * is saturated, whatever its last figure said); undefined before its first.
   */
  busy(hostId: number): number | undefined {
    const host = this.#hosts.get(hostId);
    if (host === undefined || !host.ready || Atomics.load(host.state, HOST_STATE.beat) === 0)
      return undefined;
    this.#readBeat(host);
    if (performance.now() - host.beatAt > BUSY_BEAT_LATE_MS) return 1;
    return Atomics.load(host.state, HOST_STATE.busy) / 1000;
  }

  /**
   * Starts one more host (its thread with it) while the pool has fewer than
   * `threads` and every host it has is ready: false when it is at its limit,
   * or one is still starting (a thread starting is already more work on the
   * cores; the next look decides again once it runs).
   */
  grow(): boolean {
    if (this.#pool === undefined || this.#closing) return false;
    if (this.#wanted >= this.#options.threads) return false;
    for (const host of this.#hosts.values()) if (host.alive && !host.ready) return false;
    this.#wanted += 1;
    this.#startHost();
    return true;
  }

  spareHosts(): number {
    return this.#pool === undefined || this.#closing
      ? 0
      : Math.max(0, this.#options.threads - this.#wanted);
  }

  /** Threads alive in the pool now (0 before start and after close). */
  get threadCount(): number {
    return this.#pool?.threads.length ?? 0;
  }

  hosts(): readonly number[] {
    const ids: number[] = [];
    for (const host of this.#hosts.values()) if (host.alive) ids.push(host.id);
    return ids;
  }

  send(hostId: number, item: MainToWorkerInput): void {
    const host = this.#hosts.get(hostId);
    if (host?.alive) host.batcher.push(item);
  }

  sendPorts(hostId: number, item: MainToWorkerInput, ports: readonly MessagePort[]): boolean {
    const host = this.#hosts.get(hostId);
    if (host === undefined || !host.alive || this.#closing) return false;
    host.batcher.flush();
    host.port.postMessage([item], [...ports]);
    return true;
  }

  terminate(hostId: number, reason: string): void {
    const host = this.#hosts.get(hostId);
    if (host === undefined || !host.alive) return;
    if (host.stopReason !== undefined) return;
    host.stopReason = reason;
    // Not by thread id: a host that has not said host.ready yet (its thread
    // still booting, or its task still queued) has none we know, and its
    // actor may block the thread the moment it starts. piscina knows where
    // the task runs: it stops that thread, or drops the task from its queue,
    // and the task's rejection reports hostDown like any crash.
    host.stop.abort(reason);
  }

  async close(graceMs: number): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#watchdog);
    for (const retry of this.#retries) clearTimeout(retry);
    this.#retries.clear();
    const pool = this.#pool;
    if (pool === undefined) return;
    const hosts = [...this.#hosts.values()].filter((host) => host.alive);
    for (const host of hosts) {
      host.batcher.push({ type: 'host.shutdown' });
      host.batcher.flush();
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.allSettled(hosts.map((host) => host.done)), timeout]);
    clearTimeout(timer);
    for (const host of this.#hosts.values()) this.#drain(host);
    await pool.destroy();
    for (const host of this.#hosts.values()) host.port.close();
    this.#hosts.clear();
    this.#pool = undefined;
  }

  // Unhandled, a pool 'error' event would take the process down.
  #listen(pool: Piscina): Piscina {
    pool.on('error', (error: unknown) => {
      this.#handlers?.error(asTroupeError(error, 'The worker pool reported an error'), false);
    });
    return pool;
  }

  // A thread died before its host said ready. piscina replaces a thread that
  // crashes while it runs, but not one whose entry module failed to load
  // (a missing or broken build): its pool is left with no thread and a task
  // queued for ever. So while no host of the pool has ever said ready, the
  // next host starts on a new pool (hosts still starting in the old one
  // start again on the new), a moment later.
  #startAfterBootFailure(): void {
    const retry = setTimeout(() => {
      this.#retries.delete(retry);
      const pool = this.#pool;
      if (pool === undefined || this.#closing || this.#shape === undefined) return;
      if (!this.#poolReady) {
        for (const other of this.#hosts.values())
          if (other.alive && !other.ready) other.stopReason ??= 'its pool was replaced';
        this.#pool = this.#listen(createAgentPool(this.#shape, this.#wanted));
        void pool.destroy().catch(() => {});
      }
      this.#startHost();
    }, BOOT_RETRY_MS);
    this.#retries.add(retry);
  }

  #startHost(): void {
    const pool = this.#pool;
    const handlers = this.#handlers;
    if (pool === undefined || handlers === undefined || this.#closing) return;
    const { port1, port2 } = new MessageChannel();
    const id = this.#nextHostId;
    this.#nextHostId += 1;
    const state = new SharedArrayBuffer(HOST_STATE_BYTES);
    const task: HostTask = { hostId: id, port: port2, state, config: this.#options.config };
    const stop = new AbortController();
    const host: LocalHost = {
      id,
      port: port1,
      // Small batches to the host: it starts building actors while the main thread still spawns.
      batcher: new Batcher((items) => port1.postMessage(items), 16),
      stop,
      alive: true,
      ready: false,
      done: pool.run(task, { transferList: [port2], signal: stop.signal }),
      stopReason: undefined,
      state: new Int32Array(state),
      beat: 0,
      beatAt: performance.now(),
      blocked: undefined,
    };
    this.#hosts.set(id, host);
    port1.on('message', (data: unknown) => this.#receive(host, data));
    host.done.then(
      () => this.#down(host, new TroupeError('runtime.worker_exit', 'The worker host ended.')),
      (error: unknown) => this.#down(host, this.#describeExit(host, error)),
    );
    handlers.hostUp(id);
  }

  #receive(host: LocalHost, data: unknown): void {
    const handlers = this.#handlers;
    if (handlers === undefined) return;
    const { items, invalid } = parseHostMessage(data);
    for (const problem of invalid) {
      handlers.error(
        new TroupeError('runtime.protocol', `Host ${host.id} sent an invalid item: ${problem}`),
        false,
      );
    }
    for (const item of items) {
      if (typeof item !== 'string' && item.type === 'host.ready') {
        host.ready = true;
        this.#poolReady = true;
        host.beatAt = performance.now();
        this.#bootFailures = 0;
      }
    }
    handlers.items(host.id, items);
  }

  // Stops ready hosts whose heartbeat has not moved for `blockedMs`. A sweep
  // that itself came late (this thread was busy, or the machine starved it)
  // judges nobody: the silence may be ours.
  #watch(blockedMs: number, every: number): void {
    const now = performance.now();
    const late = now - this.#sweptAt > every * 2 + 250;
    this.#sweptAt = now;
    for (const host of this.#hosts.values()) {
      if (!host.alive || !host.ready || host.stopReason !== undefined) continue;
      if (late) {
        this.#readBeat(host);
        host.beatAt = now;
        continue;
      }
      if (this.#readBeat(host) || now - host.beatAt < blockedMs) continue;
      const blocked: BlockedHost = { blockedMs: Math.round(now - host.beatAt) };
      const named = Atomics.load(host.state, HOST_STATE.named);
      if (named > 0) {
        const bytes = new Uint8Array(host.state.buffer, HOST_NAME_OFFSET, named).slice();
        const [actorId = '', tool = ''] = new TextDecoder().decode(bytes).split('\0');
        blocked.culprit = { actorId, tool };
      }
      host.blocked = blocked;
      const seconds = (blocked.blockedMs / 1000).toFixed(1);
      this.terminate(
        host.id,
        blocked.culprit === undefined
          ? `it was blocked for ${seconds} s while no tool call ran (code after an await, or troupe's own)`
          : `${blocked.culprit.actorId}'s tool \`${blocked.culprit.tool}\` blocked it for ${seconds} s`,
      );
    }
  }

  // True when the heartbeat moved since the last look.
  #readBeat(host: LocalHost): boolean {
    const beat = Atomics.load(host.state, HOST_STATE.beat);
    if (beat === host.beat) return false;
    host.beat = beat;
    host.beatAt = performance.now();
    return true;
  }

  // Messages the thread posted before it died are still queued on our end: read them first.
  #drain(host: LocalHost): void {
    for (;;) {
      const message = receiveMessageOnPort(host.port);
      if (message === undefined) return;
      this.#receive(host, message.message);
    }
  }

  #down(host: LocalHost, error: TroupeError): void {
    if (!host.alive) return;
    host.alive = false;
    host.batcher.close();
    if (this.#closing) return;
    this.#drain(host);
    host.port.close();
    this.#hosts.delete(host.id);
    const handlers = this.#handlers;
    if (handlers === undefined) return;
    handlers.hostDown(host.id, error);
    // A host stopped on purpose before it was ready says nothing about whether threads can start.
    if (!host.ready && host.stopReason === undefined) this.#bootFailures += 1;
    if (this.#bootFailures >= MAX_BOOT_FAILURES) {
      if (this.hosts().length === 0) {
        handlers.error(
          new TroupeError(
            'runtime.worker_exit',
            `Worker threads fail while starting (${this.#bootFailures} in a row; last: ${error.message}). Check that the project is built (npm run build) and that every tool module loads.`,
          ),
          true,
        );
      }
      return;
    }
    if (!host.ready && host.stopReason === undefined) {
      this.#startAfterBootFailure();
      return;
    }
    // The pool has replaced the thread; give it a host.
    this.#startHost();
  }

  #describeExit(host: LocalHost, error: unknown): TroupeError {
    const cause = errorMessage(error);
    const code = (error as { code?: unknown } | undefined)?.code;
    let what = `the worker thread crashed (${cause})`;
    if (host.stopReason !== undefined)
      what = `the worker thread was terminated: ${host.stopReason}`;
    else if (code === 'ERR_WORKER_OUT_OF_MEMORY')
      what = `the worker thread ran out of memory (${cause})`;
    else if (/exited with code/.test(cause)) what = `the worker thread exited (${cause})`;
    else if (!host.ready && (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'))
      what = `the worker thread could not load its code (${cause}); check that the project is built (npm run build)`;
    // `stopped`: the runtime stopped the thread on purpose (one actor's last resort), so its other actors are victims.
    return new TroupeError('runtime.worker_exit', what, {
      cause: error,
      details:
        host.stopReason === undefined
          ? { hostId: host.id }
          : {
              hostId: host.id,
              stopped: true,
              ...(host.blocked === undefined ? {} : { blocked: { ...host.blocked } }),
            },
    });
  }
}

function asTroupeError(error: unknown, context: string): TroupeError {
  if (isTroupeError(error)) return error;
  return new TroupeError('runtime.protocol', `${context}: ${errorMessage(error)}`, {
    cause: error,
  });
}
