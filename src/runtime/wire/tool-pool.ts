import { MessageChannel, type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { type ErrorCode, errorMessage } from '../../errors.js';
import { troupeFileUrl } from '../../util/package-files.js';
import { Batcher } from './batcher.js';
import {
  culpritMessage,
  lostMessage,
  MAX_LOST_THREADS,
  type MainToTool,
  parseToolToMain,
  TOOL_STATE,
  TOOL_STATE_BYTES,
  type ToolHostConfig,
  type ToolHostTask,
  type ToolToMain,
} from './tool-protocol.js';

/** Memory limits of each tool thread (Node's `resourceLimits`), in megabytes. */
export interface ToolThreadLimits {
  maxOldGenerationSizeMb?: number;
  maxYoungGenerationSizeMb?: number;
  stackSizeMb?: number;
}

/** How a tool pool is built. */
export interface ToolPoolOptions {
  /**
   * The most tool threads (default 2). The pool starts `startThreads` and
   * starts one more each time every thread it has is busy, up to this.
   */
  threads?: number | undefined;
  /** Tool threads started with the pool (default 1, at most `threads`). */
  startThreads?: number | undefined;
  /** The workerData every tool thread is built from. */
  config: ToolHostConfig;
  /** A call that has not settled after this long is answered with a timeout (default 120,000 ms). */
  timeoutMs?: number | undefined;
  /** A thread whose heartbeat stops this long is blocked and stopped (default 5,000 ms). */
  blockedMs?: number | undefined;
  /** Calls on one thread at once (default 32); more wait. */
  maxCallsPerThread?: number | undefined;
  /** Per-thread memory limits (default a 256 MiB old generation). */
  limits?: ToolThreadLimits | undefined;
  /** The built tool-thread entry (default dist/workers/tool-entry.cjs). */
  workerUrl?: URL | undefined;
  /** Actor hosts that take direct lanes to the tool threads (absent: every call goes through `call`). */
  lanes?: ToolLaneLinks | undefined;
}

/** A tool thread's death as an actor host with a lane to it hears it. */
export interface ToolLaneDown {
  type: 'tool.lane.down';
  thread: number;
  what: string;
  blame: 'named' | 'sole' | 'nobody';
  /** The host's own call that caused it, when it was named. */
  culprit?: number;
}

/**
 * How the pool reaches actor hosts for lanes: a MessageChannel per pair of
 * actor thread and tool thread, so a call costs no hop through the main thread.
 */
export interface ToolLaneLinks {
  /** Actor hosts alive now that may take a lane. */
  hosts(): readonly number[];
  /** Gives a host its end of a lane to tool thread `thread`; false when the host cannot take it. */
  open(
    hostId: number,
    lane: { thread: number; port: MessagePort; state: SharedArrayBuffer },
  ): boolean;
  /** Tells a host that a tool thread it has a lane to is gone. */
  down(hostId: number, item: ToolLaneDown): void;
}

/** What one tool call asks. */
export interface ToolCallRequest {
  tool: string;
  input: unknown;
  agentId: string;
  role?: string | undefined;
  /** A suspect of a thread's death: it runs alone on an empty thread. */
  solo?: boolean | undefined;
}

/** What a caller hears while its call runs. */
export interface ToolCallHooks {
  progress(note: string): void;
  /** Asks for approval of a risky action (absent: the run has no approver). */
  approve?: ((tool: string, summary: string) => Promise<boolean>) | undefined;
}

/** How a call ended: a result, or an error the model reads (never a throw). */
export type ToolCallAnswer =
  | { ok: true; content: string }
  | { ok: false; code: ErrorCode; message: string };

/** A running call: its answer, and a way to give up on it. */
export interface ToolCallHandle {
  answer: Promise<ToolCallAnswer>;
  cancel(): void;
}

interface Call {
  id: number;
  request: ToolCallRequest;
  hooks: ToolCallHooks;
  resolve(answer: ToolCallAnswer): void;
  thread: ToolThread | undefined;
  /** Retried alone: it was on a thread that died of a fault nobody could be named for. */
  solo: boolean;
  /** Times a neighbour's fault took its thread while it ran. */
  lost: number;
  settled: boolean;
}

interface ToolThread {
  id: number;
  port: MessagePort;
  batcher: Batcher<MainToTool>;
  stop: AbortController;
  state: Int32Array;
  done: Promise<unknown>;
  ready: boolean;
  alive: boolean;
  calls: Map<number, Call>;
  /** Runs one suspect call alone; takes nothing else meanwhile. */
  solo: boolean;
  /** Kept empty for a suspect waiting to run alone. */
  reserved: boolean;
  beat: number;
  beatAt: number;
  /** The heartbeat the last growth look saw. */
  growBeat: number;
  /** Why the main thread stopped it, with the call it blames (if any). */
  stopped: { why: string; culprit: Origin | undefined } | undefined;
  /** The fault the thread announced before it died, with the call it names (if any). */
  fatal: { what: string; culprit: Origin | undefined } | undefined;
  /** Actor hosts with a lane to it. */
  lanes: Set<number>;
}

/** A call as a tool thread knows it: its lane (0: the main thread's) and the caller's id. */
interface Origin {
  lane: number;
  callId: number;
}

// Tool threads that die before saying ready: after this many in a row, they cannot start.
const MAX_BOOT_FAILURES = 3;
// How often the pool looks whether all its threads are busy, and how busy
// (event-loop utilisation in thousandths) counts as busy.
const GROW_EVERY_MS = 100;
const GROW_BUSY = 600;
const GROW_LOOKS = 3;

/** The built tool-thread entry (dist/'s, from source and from the bundles alike). */
export function toolWorkerUrl(): URL {
  return troupeFileUrl('dist/workers/tool-entry.cjs');
}

/**
 * User tool code off the actor threads: a piscina pool of tool threads, each
 * running many calls at once. A fault costs one tool call of one agent, never
 * its neighbours:
 *
 * - a throw or rejection is the call's error result;
 * - a call that never settles is answered with a timeout after `timeoutMs`
 *   (its signal aborted; the thread goes on);
 * - a thread whose heartbeat stops for `blockedMs` (a busy loop, a GC storm)
 *   is stopped by the watchdog;
 * - a thread that dies (uncaught exception, unhandled rejection,
 *   process.exit, out of memory) is replaced.
 *
 * When a thread is stopped or dies, the call that caused it is named (the
 * thread says so before it dies, or the shared slot says whose synchronous
 * code held it) and answered with what happened; every other call on it is
 * run again at once on another thread. When no call can be named, each is
 * run again alone, so the culprit shows itself without taking anyone along.
 *
 * With `lanes`, actor threads call the tool threads directly: each pair has
 * a MessageChannel, opened when either side starts. The pool keeps the
 * supervision: it still sees every tool thread die or block, names the
 * culprit (a lane's call by its lane and id) and tells each host with a lane
 * to that thread, which answers its culprit and runs its other calls again.
 * Calls still come through `call` from hosts with no lane (remote nodes) and
 * for suspects, which run here alone.
 */
export class ToolPool {
  readonly #options: ToolPoolOptions;
  readonly #threads = new Map<number, ToolThread>();
  readonly #queue: Call[] = [];
  readonly #blockedMs: number;
  readonly #maxPerThread: number;
  #pool: Piscina | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  #growth: NodeJS.Timeout | undefined;
  #busyLooks = 0;
  #nextThread = 1;
  #nextCall = 1;
  #bootFailures = 0;
  #broken: string | undefined;
  #closing = false;

  constructor(options: ToolPoolOptions) {
    this.#options = options;
    this.#blockedMs = options.blockedMs ?? 5000;
    this.#maxPerThread = options.maxCallsPerThread ?? 32;
  }

  /** Runs one tool call on the pool (started on first use). */
  call(request: ToolCallRequest, hooks: ToolCallHooks): ToolCallHandle {
    let resolve: (answer: ToolCallAnswer) => void = () => {};
    const answer = new Promise<ToolCallAnswer>((done) => {
      resolve = done;
    });
    const call: Call = {
      id: this.#nextCall,
      request,
      hooks,
      resolve,
      thread: undefined,
      solo: request.solo === true,
      lost: 0,
      settled: false,
    };
    this.#nextCall += 1;
    if (this.#closing || this.#broken !== undefined) {
      this.#settle(call, {
        ok: false,
        code: 'tool.failed',
        message: this.#broken ?? `${request.tool} was not run: the runtime is closing.`,
      });
      return { answer, cancel: () => {} };
    }
    this.start();
    this.#queue.push(call);
    this.#pump();
    return { answer, cancel: () => this.#cancel(call) };
  }

  /** Tool threads alive now. */
  get threadCount(): number {
    let count = 0;
    for (const thread of this.#threads.values()) if (thread.alive) count += 1;
    return count;
  }

  /** A new actor host: it gets a lane to every tool thread that is ready. */
  hostUp(hostId: number): void {
    for (const thread of this.#threads.values()) this.#openLane(thread, hostId);
  }

  /** An actor host is gone: its lanes are closed and their calls aborted in the tool threads. */
  hostDown(hostId: number): void {
    for (const thread of this.#threads.values()) {
      if (!thread.lanes.delete(hostId)) continue;
      thread.batcher.push({ type: 'lane.close', lane: hostId });
    }
  }

  /** Stops every thread; calls still running are answered with `runtime.closed`. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#watchdog);
    clearInterval(this.#growth);
    const closed: ToolCallAnswer = {
      ok: false,
      code: 'runtime.closed',
      message: 'The tool was stopped: the runtime is closing.',
    };
    for (const call of this.#queue.splice(0)) this.#settle(call, closed);
    for (const thread of this.#threads.values()) {
      for (const call of thread.calls.values()) this.#settle(call, closed);
      thread.calls.clear();
      thread.batcher.push({ type: 'shutdown' });
      thread.batcher.close();
    }
    const pool = this.#pool;
    this.#pool = undefined;
    if (pool !== undefined) await pool.destroy();
    for (const thread of this.#threads.values()) thread.port.close();
    this.#threads.clear();
  }

  /** Starts the tool threads now (idempotent); otherwise the first call does. */
  start(): void {
    if (this.#pool !== undefined || this.#closing) return;
    const threads = this.#maxThreads;
    const start = Math.max(1, Math.min(threads, this.#options.startThreads ?? 1));
    this.#pool = new Piscina({
      filename: (this.#options.workerUrl ?? toolWorkerUrl()).href,
      minThreads: threads,
      maxThreads: threads,
      concurrentTasksPerWorker: 1,
      atomics: 'disabled',
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: {
        ...this.#options.config,
        ...(this.#options.timeoutMs === undefined ? {} : { timeoutMs: this.#options.timeoutMs }),
        maxCalls: this.#maxPerThread,
      } satisfies ToolHostConfig,
      resourceLimits: { maxOldGenerationSizeMb: 256, ...this.#options.limits },
    });
    this.#pool.on('error', () => {
      // A thread's death is reported by its task's rejection; nothing more to do here.
    });
    for (let index = 0; index < start; index += 1) this.#startThread();
    // Most runs' tools wait on I/O and one thread serves them all; a thread
    // costs ~23 MiB and its start-up, so more start only when needed.
    if (start < threads) {
      this.#growth = setInterval(() => this.#grow(), GROW_EVERY_MS);
      this.#growth.unref();
    }
    // One sweep for heartbeats (calls time out in their thread): no timer per call.
    const every = Math.max(25, Math.min(1000, Math.floor(this.#blockedMs / 4)));
    this.#watchdog = setInterval(() => this.#watch(), every);
    this.#watchdog.unref();
  }

  get #maxThreads(): number {
    return this.#options.threads ?? 2;
  }

  // One more thread when every thread has been busy for GROW_LOOKS looks in a
  // row: its event loop was at least GROW_BUSY utilised over its last heartbeat, or it holds a call and its
  // heartbeat has not moved since the last look (synchronous code holds it).
  // Calls waiting in its port are not counted anywhere yet, so busy is the sign.
  #grow(): void {
    if (this.#closing || this.#broken !== undefined) return;
    let alive = 0;
    let busy = 0;
    for (const thread of this.#threads.values()) {
      if (!thread.alive || thread.stopped !== undefined) continue;
      alive += 1;
      // A thread still starting: wait for it before judging.
      if (!thread.ready) return;
      const beat = Atomics.load(thread.state, TOOL_STATE.beat);
      const stalled =
        beat === thread.growBeat && Atomics.load(thread.state, TOOL_STATE.inflight) > 0;
      thread.growBeat = beat;
      if (stalled || Atomics.load(thread.state, TOOL_STATE.busy) >= GROW_BUSY) busy += 1;
    }
    if (alive >= this.#maxThreads) {
      clearInterval(this.#growth);
      this.#growth = undefined;
      return;
    }
    // Busy for GROW_LOOKS looks in a row: a burst of quick calls is not a reason.
    this.#busyLooks = alive > 0 && busy === alive ? this.#busyLooks + 1 : 0;
    if (this.#busyLooks < GROW_LOOKS) return;
    this.#busyLooks = 0;
    this.#startThread();
  }

  #startThread(): void {
    const pool = this.#pool;
    if (pool === undefined || this.#closing) return;
    const { port1, port2 } = new MessageChannel();
    const state = new SharedArrayBuffer(TOOL_STATE_BYTES);
    const stop = new AbortController();
    const task: ToolHostTask = { port: port2, state };
    const thread: ToolThread = {
      id: this.#nextThread,
      port: port1,
      batcher: new Batcher((items) => port1.postMessage(items)),
      stop,
      state: new Int32Array(state),
      done: pool.run(task, { transferList: [port2], signal: stop.signal }),
      ready: false,
      alive: true,
      calls: new Map(),
      solo: false,
      reserved: false,
      beat: 0,
      beatAt: performance.now(),
      growBeat: -1,
      stopped: undefined,
      fatal: undefined,
      lanes: new Set(),
    };
    this.#nextThread += 1;
    this.#threads.set(thread.id, thread);
    port1.on('message', (data: unknown) => this.#receive(thread, data));
    // The port keeps no event loop alive: a run waits on its calls, not on idle tool threads.
    port1.unref();
    thread.done.then(
      () => this.#down(thread, 'ended'),
      (error: unknown) => this.#down(thread, describeExit(error)),
    );
  }

  // A MessageChannel between a ready tool thread and an actor host: one end to each.
  #openLane(thread: ToolThread, hostId: number): void {
    const links = this.#options.lanes;
    if (links === undefined || !thread.alive || !thread.ready || thread.lanes.has(hostId)) return;
    const { port1, port2 } = new MessageChannel();
    if (
      !links.open(hostId, {
        thread: thread.id,
        port: port2,
        state: thread.state.buffer as SharedArrayBuffer,
      })
    ) {
      port1.close();
      port2.close();
      return;
    }
    thread.lanes.add(hostId);
    // Behind what is queued for the thread, with the port transferred.
    thread.batcher.flush();
    const open: MainToTool = { type: 'lane.open', lane: hostId, port: port1 };
    thread.port.postMessage([open], [port1]);
  }

  #receive(thread: ToolThread, data: unknown): void {
    const items = parseToolToMain(data);
    if (items === undefined) return;
    for (const item of items) this.#handle(thread, item);
  }

  #handle(thread: ToolThread, item: ToolToMain): void {
    switch (item.type) {
      case 'ready':
        thread.ready = true;
        thread.beatAt = performance.now();
        this.#bootFailures = 0;
        for (const hostId of this.#options.lanes?.hosts() ?? []) this.#openLane(thread, hostId);
        this.#pump();
        return;
      case 'progress': {
        const hooks = thread.calls.get(item.callId)?.hooks;
        if (hooks !== undefined) for (const note of item.notes) hooks.progress(note);
        return;
      }
      case 'approval.requested': {
        const call = thread.calls.get(item.callId);
        if (call === undefined) return;
        const asked = call.hooks.approve?.(item.tool, item.summary) ?? Promise.resolve(false);
        void asked
          .catch(() => false)
          .then((approved) =>
            thread.batcher.push({
              type: 'approval.answered',
              callId: item.callId,
              requestId: item.requestId,
              approved,
            }),
          );
        return;
      }
      case 'done': {
        const call = thread.calls.get(item.callId);
        if (call === undefined) return;
        this.#leave(call);
        this.#settle(
          call,
          item.ok
            ? { ok: true, content: item.content }
            : { ok: false, code: item.code ?? 'tool.failed', message: item.content },
        );
        this.#pump();
        return;
      }
      case 'fatal':
        thread.fatal ??= {
          what: item.what,
          culprit:
            item.callId === undefined ? undefined : { lane: item.lane ?? 0, callId: item.callId },
        };
        return;
      case 'idle':
        this.#pump();
        return;
      case 'moved':
        // Only lanes hear it.
        return;
    }
  }

  // Places waiting calls: a suspect alone on an empty thread, others on the least-loaded thread with room.
  #pump(): void {
    // No suspect waits any more (ran, or was cancelled): reserved threads open again.
    if (!this.#queue.some((call) => call.solo)) {
      for (const thread of this.#threads.values()) {
        if (!thread.reserved) continue;
        thread.reserved = false;
        if (!thread.solo) Atomics.store(thread.state, TOOL_STATE.closed, 0);
      }
    }
    for (let index = 0; index < this.#queue.length; ) {
      const call = this.#queue[index] as Call;
      let thread = this.#place(call.solo);
      if (thread === undefined && call.solo) {
        this.#reserve();
        thread = this.#place(true);
      }
      if (thread === undefined) {
        index += 1;
        continue;
      }
      this.#queue.splice(index, 1);
      this.#send(call, thread);
    }
  }

  #place(solo: boolean): ToolThread | undefined {
    let best: ToolThread | undefined;
    let bestLoad = 0;
    for (const thread of this.#threads.values()) {
      if (!thread.alive || !thread.ready || thread.solo || thread.stopped !== undefined) continue;
      // Every call the thread holds, the lanes' included.
      const load = Math.max(thread.calls.size, Atomics.load(thread.state, TOOL_STATE.inflight));
      if (solo) {
        if (thread.reserved && load === 0) return thread;
        continue;
      }
      if (thread.reserved || thread.calls.size >= this.#maxPerThread) continue;
      if (best === undefined || load < bestLoad) {
        best = thread;
        bestLoad = load;
      }
    }
    return best;
  }

  // A suspect waits for an empty thread: the least-loaded one is closed to
  // new calls (lanes read the flag; the thread sends back what still comes)
  // until it is empty; the watchdog's sweep places the suspect then.
  #reserve(): void {
    let best: ToolThread | undefined;
    for (const thread of this.#threads.values()) {
      if (!thread.alive || !thread.ready || thread.solo || thread.stopped !== undefined) continue;
      if (thread.reserved) return;
      if (
        best === undefined ||
        Atomics.load(thread.state, TOOL_STATE.inflight) <
          Atomics.load(best.state, TOOL_STATE.inflight)
      )
        best = thread;
    }
    if (best === undefined) return;
    best.reserved = true;
    Atomics.store(best.state, TOOL_STATE.closed, 1);
  }

  #send(call: Call, thread: ToolThread): void {
    call.thread = thread;
    thread.calls.set(call.id, call);
    if (call.solo) {
      thread.solo = true;
      thread.reserved = false;
    }
    const { tool, input, agentId, role } = call.request;
    thread.batcher.push({
      type: 'call',
      callId: call.id,
      tool,
      input,
      agentId,
      ...(role === undefined ? {} : { role }),
      ...(call.solo ? { solo: true } : {}),
    });
  }

  #cancel(call: Call): void {
    if (call.settled) return;
    const thread = call.thread;
    const index = this.#queue.indexOf(call);
    if (index !== -1) this.#queue.splice(index, 1);
    if (thread !== undefined) {
      this.#leave(call);
      thread.batcher.push({ type: 'cancel', callId: call.id });
    }
    this.#settle(call, {
      ok: false,
      code: 'cancelled',
      message: `${call.request.tool} was stopped: the agent was cancelled.`,
    });
    this.#pump();
  }

  #watch(): void {
    for (const thread of [...this.#threads.values()]) {
      if (!thread.alive || !thread.ready || thread.stopped !== undefined) continue;
      if (this.#blocked(thread)) this.#stopBlocked(thread);
    }
    // A suspect waits for its reserved thread to empty: look again.
    if (this.#queue.length > 0) this.#pump();
  }

  // Reads the heartbeat; true when it has not moved for `blockedMs`.
  #blocked(thread: ToolThread): boolean {
    const beat = Atomics.load(thread.state, TOOL_STATE.beat);
    const now = performance.now();
    if (beat !== thread.beat) {
      thread.beat = beat;
      thread.beatAt = now;
      return false;
    }
    return now - thread.beatAt >= this.#blockedMs;
  }

  #stopBlocked(thread: ToolThread): void {
    const ms = Math.round(performance.now() - thread.beatAt);
    thread.stopped = { why: `blocked its thread for ${ms} ms`, culprit: runningOn(thread) };
    // Aborting the host task stops its thread; the rejection comes to #down.
    thread.stop.abort(new Error(`tool thread ${thread.id} blocked for ${ms} ms`));
  }

  #down(thread: ToolThread, exit: string): void {
    if (!thread.alive) return;
    thread.alive = false;
    thread.batcher.close();
    // What it posted before it died (its last words) is still on our end of the port.
    for (;;) {
      const message = receiveMessageOnPort(thread.port);
      if (message === undefined) break;
      this.#receive(thread, message.message);
    }
    thread.port.close();
    this.#threads.delete(thread.id);
    if (this.#closing) return;
    const what = thread.stopped?.why ?? thread.fatal?.what ?? exit;
    let culprit = thread.stopped?.culprit ?? thread.fatal?.culprit;
    if (culprit === undefined && thread.stopped === undefined && thread.fatal === undefined)
      culprit = runningOn(thread);
    // A call of ours that is no longer on the thread (it ended) is no culprit.
    if (culprit?.lane === 0 && !thread.calls.has(culprit.callId)) culprit = undefined;
    // A thread that held one call: that one, when nothing else names a culprit.
    let sole = false;
    if (culprit === undefined && Atomics.load(thread.state, TOOL_STATE.inflight) <= 1) {
      const ours = Atomics.load(thread.state, TOOL_STATE.inflightMain);
      if (thread.calls.size === 1 && ours >= 1)
        culprit = { lane: 0, callId: thread.calls.keys().next().value as number };
      else if (thread.calls.size === 0 && ours === 0) sole = true;
    }
    this.#tellLanes(thread, what, culprit, sole);
    const calls = [...thread.calls.values()];
    thread.calls.clear();
    for (const call of calls) {
      call.thread = undefined;
      if (culprit?.lane === 0 && call.id === culprit.callId) {
        this.#settle(call, {
          ok: false,
          code: 'tool.failed',
          message: culpritMessage(call.request.tool, what),
        });
        continue;
      }
      call.lost += 1;
      if (call.lost > MAX_LOST_THREADS) {
        this.#settle(call, {
          ok: false,
          code: 'tool.failed',
          message: lostMessage(call.request.tool, call.lost, what),
        });
        continue;
      }
      // Nobody named: every call on the thread is a suspect and runs again alone.
      call.solo = culprit === undefined && !sole;
      this.#queue.unshift(call);
    }
    if (!thread.ready && thread.stopped === undefined) this.#bootFailures += 1;
    if (this.#bootFailures >= MAX_BOOT_FAILURES) {
      // Threads that cannot start are not started again; the ready ones (if any) go on serving.
      const ready = [...this.#threads.values()].some((other) => other.alive && other.ready);
      if (!ready) {
        this.#broken = `The tool threads fail while starting (${this.#bootFailures} in a row; last: ${what}). Check that the project is built (npm run build) and that every tool module loads.`;
        const broken: ToolCallAnswer = { ok: false, code: 'tool.failed', message: this.#broken };
        for (const call of this.#queue.splice(0)) this.#settle(call, broken);
        for (const other of this.#threads.values()) other.stop.abort(new Error(this.#broken));
      }
      this.#pump();
      return;
    }
    this.#startThread();
    this.#pump();
  }

  // Every host with a lane to the dead thread hears who is to blame; its own calls are its to answer or run again.
  #tellLanes(thread: ToolThread, what: string, culprit: Origin | undefined, sole: boolean): void {
    const links = this.#options.lanes;
    if (links === undefined) return;
    const blame = culprit !== undefined ? 'named' : sole ? 'sole' : 'nobody';
    for (const hostId of thread.lanes) {
      const item: ToolLaneDown = { type: 'tool.lane.down', thread: thread.id, what, blame };
      if (culprit?.lane === hostId) item.culprit = culprit.callId;
      links.down(hostId, item);
    }
    thread.lanes.clear();
  }

  #leave(call: Call): void {
    const thread = call.thread;
    if (thread === undefined) return;
    thread.calls.delete(call.id);
    if (call.solo) {
      thread.solo = false;
      // More suspects wait: the thread stays closed for the next, which starts at once.
      if (this.#queue.some((waiting) => waiting.solo)) thread.reserved = true;
      if (!thread.reserved) Atomics.store(thread.state, TOOL_STATE.closed, 0);
    }
    call.thread = undefined;
  }

  #settle(call: Call, answer: ToolCallAnswer): void {
    if (call.settled) return;
    call.settled = true;
    call.resolve(answer);
  }
}

// The call whose synchronous code holds the thread now, by the shared slots.
function runningOn(thread: ToolThread): Origin | undefined {
  const callId = Atomics.load(thread.state, TOOL_STATE.running);
  if (callId === 0) return undefined;
  return { lane: Atomics.load(thread.state, TOOL_STATE.lane), callId };
}

function describeExit(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const cause = errorMessage(error);
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') return `ran its thread out of memory (${cause})`;
  if (/exited with code/.test(cause)) return `ended its thread (${cause})`;
  return `crashed its thread (${cause})`;
}
