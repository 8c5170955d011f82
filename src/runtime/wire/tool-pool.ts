import { MessageChannel, type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { type ErrorCode, errorMessage } from '../../errors.js';
import { Batcher } from './batcher.js';
import {
  type MainToTool,
  parseToolToMain,
  TOOL_STATE,
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
  /** Tool threads (default 2). */
  threads?: number | undefined;
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
}

/** What one tool call asks. */
export interface ToolCallRequest {
  tool: string;
  input: unknown;
  agentId: string;
  role?: string | undefined;
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
  /** When it was sent to its thread (the watchdog times it out from there). */
  sentAt: number;
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
  /** Why the main thread stopped it, with the call it blames (if any). */
  stopped: { why: string; culprit: number | undefined } | undefined;
  /** The fault the thread announced before it died. */
  fatal: { what: string; callId: number | undefined } | undefined;
}

// A safety net only: each fatal call is answered once it is named, so a
// call loses its thread at most once per fatal call of its neighbours.
const MAX_LOST = 100;
// Tool threads that die before saying ready: after this many in a row, they cannot start.
const MAX_BOOT_FAILURES = 3;

/** The built tool-thread entry (from source it points into dist/, from dist next door). */
export function toolWorkerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts')
    ? new URL('../../../dist/workers/tool-entry.cjs', here)
    : new URL('../../../workers/tool-entry.cjs', here);
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
 */
export class ToolPool {
  readonly #options: ToolPoolOptions;
  readonly #threads = new Map<number, ToolThread>();
  readonly #queue: Call[] = [];
  readonly #timeoutMs: number;
  readonly #blockedMs: number;
  readonly #maxPerThread: number;
  #pool: Piscina | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  #nextThread = 1;
  #nextCall = 1;
  #bootFailures = 0;
  #broken: string | undefined;
  #closing = false;

  constructor(options: ToolPoolOptions) {
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? 120_000;
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
      sentAt: 0,
      solo: false,
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
    this.#start();
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

  /** Stops every thread; calls still running are answered with `runtime.closed`. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#watchdog);
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

  #start(): void {
    if (this.#pool !== undefined) return;
    const threads = this.#options.threads ?? 2;
    this.#pool = new Piscina({
      filename: (this.#options.workerUrl ?? toolWorkerUrl()).href,
      minThreads: threads,
      maxThreads: threads,
      concurrentTasksPerWorker: 1,
      atomics: 'disabled',
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: this.#options.config,
      resourceLimits: { maxOldGenerationSizeMb: 256, ...this.#options.limits },
    });
    this.#pool.on('error', () => {
      // A thread's death is reported by its task's rejection; nothing more to do here.
    });
    for (let index = 0; index < threads; index += 1) this.#startThread();
    // One sweep for heartbeats and call timeouts: no timer per call.
    const bound = Math.min(this.#blockedMs, this.#timeoutMs);
    const every = Math.max(25, Math.min(1000, Math.floor(bound / 4)));
    this.#watchdog = setInterval(() => this.#watch(), every);
    this.#watchdog.unref();
  }

  #startThread(): void {
    const pool = this.#pool;
    if (pool === undefined || this.#closing) return;
    const { port1, port2 } = new MessageChannel();
    const state = new SharedArrayBuffer(8);
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
      stopped: undefined,
      fatal: undefined,
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
        this.#pump();
        return;
      case 'progress':
        thread.calls.get(item.callId)?.hooks.progress(item.note);
        return;
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
        thread.fatal ??= { what: item.what, callId: item.callId };
        return;
    }
  }

  // Places waiting calls: a suspect alone on an idle thread, others on the least-loaded thread with room.
  #pump(): void {
    for (let index = 0; index < this.#queue.length; ) {
      const call = this.#queue[index] as Call;
      const thread = this.#place(call.solo);
      if (thread === undefined) {
        if (call.solo) this.#reserve();
        index += 1;
        continue;
      }
      this.#queue.splice(index, 1);
      this.#send(call, thread);
    }
  }

  #place(solo: boolean): ToolThread | undefined {
    let best: ToolThread | undefined;
    for (const thread of this.#threads.values()) {
      if (!thread.alive || !thread.ready || thread.solo || thread.stopped !== undefined) continue;
      if (solo) {
        if (thread.calls.size === 0) return thread;
        continue;
      }
      if (thread.reserved || thread.calls.size >= this.#maxPerThread) continue;
      if (best === undefined || thread.calls.size < best.calls.size) best = thread;
    }
    return best;
  }

  // A suspect waits for an empty thread: the least-loaded one takes nothing new until it is.
  #reserve(): void {
    let best: ToolThread | undefined;
    for (const thread of this.#threads.values()) {
      if (!thread.alive || !thread.ready || thread.solo || thread.stopped !== undefined) continue;
      if (thread.reserved) return;
      if (best === undefined || thread.calls.size < best.calls.size) best = thread;
    }
    if (best !== undefined) best.reserved = true;
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
    });
    call.sentAt = performance.now();
  }

  // The call has not settled in time. A thread that still beats is only
  // waiting on it: answer, abort its signal, keep the thread. A thread that
  // does not beat is held by something: the watchdog decides (now).
  #timedOut(call: Call): void {
    const thread = call.thread;
    if (thread === undefined || call.settled) return;
    if (this.#blocked(thread)) {
      this.#stopBlocked(thread);
      return;
    }
    this.#leave(call);
    thread.batcher.push({ type: 'cancel', callId: call.id });
    this.#settle(call, {
      ok: false,
      code: 'tool.timeout',
      message: `${call.request.tool} did not finish within ${this.#timeoutMs} ms, so it was stopped (its signal was aborted). Try smaller input, or do the task another way.`,
    });
    this.#pump();
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
    const now = performance.now();
    for (const thread of [...this.#threads.values()]) {
      if (!thread.alive || !thread.ready || thread.stopped !== undefined) continue;
      if (this.#blocked(thread)) {
        this.#stopBlocked(thread);
        continue;
      }
      for (const call of [...thread.calls.values()])
        if (now - call.sentAt >= this.#timeoutMs) this.#timedOut(call);
    }
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
    const running = Atomics.load(thread.state, TOOL_STATE.running);
    const culprit = thread.calls.has(running)
      ? running
      : thread.calls.size === 1
        ? (thread.calls.keys().next().value as number)
        : undefined;
    const ms = Math.round(performance.now() - thread.beatAt);
    thread.stopped = { why: `blocked its thread for ${ms} ms`, culprit };
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
    let culprit = thread.stopped?.culprit ?? thread.fatal?.callId;
    if (culprit !== undefined && !thread.calls.has(culprit)) culprit = undefined;
    if (culprit === undefined && thread.calls.size === 1)
      culprit = thread.calls.keys().next().value as number;
    if (culprit === undefined && thread.stopped === undefined && thread.fatal === undefined) {
      const running = Atomics.load(thread.state, TOOL_STATE.running);
      if (thread.calls.has(running)) culprit = running;
    }
    const calls = [...thread.calls.values()];
    thread.calls.clear();
    for (const call of calls) {
      call.thread = undefined;
      if (call.id === culprit) {
        this.#settle(call, {
          ok: false,
          code: 'tool.failed',
          message: `${call.request.tool} ${what}; its thread was replaced. Its work was lost: do not call it the same way again.`,
        });
        continue;
      }
      call.lost += 1;
      if (call.lost > MAX_LOST) {
        this.#settle(call, {
          ok: false,
          code: 'tool.failed',
          message: `${call.request.tool} was run ${call.lost} times and each time another tool's fault took its thread (last: a tool ${what}).`,
        });
        continue;
      }
      // Nobody named: every call on the thread is a suspect and runs again alone.
      call.solo = culprit === undefined;
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

  #leave(call: Call): void {
    const thread = call.thread;
    if (thread === undefined) return;
    thread.calls.delete(call.id);
    if (call.solo) thread.solo = false;
    call.thread = undefined;
  }

  #settle(call: Call, answer: ToolCallAnswer): void {
    if (call.settled) return;
    call.settled = true;
    call.resolve(answer);
  }
}

function describeExit(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const cause = errorMessage(error);
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') return `ran its thread out of memory (${cause})`;
  if (/exited with code/.test(cause)) return `ended its thread (${cause})`;
  return `crashed its thread (${cause})`;
}
