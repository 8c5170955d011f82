import { AsyncLocalStorage } from 'node:async_hooks';
import { type ErrorCode, errorMessage, isTroupeError } from '../../errors.js';
import type { AnyTool, ToolContext } from '../../tools/tool.js';
import { truncateMiddle } from '../../util/truncate.js';
import { Batcher } from '../wire/batcher.js';
import {
  type LaneToTool,
  type MainToTool,
  parseLaneToTool,
  parseMainToTool,
  TOOL_STATE,
  type ToolHostConfig,
  type ToolToMain,
} from '../wire/tool-protocol.js';
import type { HostPort } from './actor-host.js';

// How often the thread says it is alive (the main thread's watchdog reads it).
const BEAT_MS = 100;
// Progress notes one item carries at most: a tool reporting in a loop still
// sends several messages, so the receiver starts on the first.
const NOTES_PER_ITEM = 1024;
// The main thread's lane: calls it relays (from remote hosts, and suspects run alone).
const MAIN = 0;

type CallItem = Extract<MainToTool, { type: 'call' }>;

/** Where calls come from and their answers go: the main thread's port, or a lane to one actor host. */
interface Lane {
  id: number;
  port: HostPort;
  out: Batcher<ToolToMain>;
  /** Its calls this thread holds (running or waiting), by the caller's id. */
  calls: Map<number, Running>;
}

interface Running {
  lane: Lane;
  call: CallItem;
  /** Made on the tool's first read of its signal (see #context). */
  controller: AbortController | undefined;
  /** The call was stopped: a signal made from now on starts aborted. */
  aborted: boolean;
  approvals: Map<number, (approved: boolean) => void> | undefined;
  /** When it started (the timeout counts from there); 0 while it waits for a place. */
  startedAt: number;
}

/**
 * Runs user tool calls inside a tool thread, many at once, apart from the
 * actors. Calls come from the main thread or straight from actor threads on
 * lanes (a port per actor thread), and each answer goes back where its call
 * came from. What a call does to its thread is attributed to it: its code
 * runs inside an AsyncLocalStorage scope, so an uncaught exception, an
 * unhandled rejection or a process.exit names its call before the thread
 * dies (let it crash: the thread is not patched up, the main thread replaces
 * it), and the shared `running` slot names the call whose synchronous code
 * holds the thread (a busy loop, an allocation storm). A call that has not
 * settled in `timeoutMs` is answered with a timeout here, where it runs.
 */
export class ToolHost {
  readonly #config: ToolHostConfig;
  readonly #port: HostPort;
  readonly #state: Int32Array;
  readonly #tools: ReadonlyMap<string, AnyTool>;
  readonly #loadError: string | undefined;
  readonly #main: Lane;
  readonly #lanes = new Map<number, Lane>();
  readonly #scope = new AsyncLocalStorage<Running>();
  // Calls past maxCalls, oldest first; a Set, so a cancelled one leaves in O(1) (no indexOf and splice).
  readonly #waiting = new Set<Running>();
  readonly #env: NodeJS.ProcessEnv | undefined;
  readonly #timeoutMs: number;
  readonly #maxCalls: number;
  // Calls started and not ended, and those of them from the main thread (mirrored in the shared state).
  #active = 0;
  #nextApproval = 1;
  #solo: Running | undefined;
  #beat: NodeJS.Timeout | undefined;
  #sweep: NodeJS.Timeout | undefined;
  #shutdown: (() => void) | undefined;

  constructor(
    config: ToolHostConfig,
    port: HostPort,
    state: SharedArrayBuffer,
    tools: readonly AnyTool[],
    loadError?: string | undefined,
  ) {
    this.#config = config;
    this.#port = port;
    this.#state = new Int32Array(state);
    this.#tools = new Map(tools.map((tool) => [tool.name, tool]));
    this.#loadError = loadError;
    this.#env = config.env === undefined ? undefined : { ...config.env };
    this.#timeoutMs = config.timeoutMs ?? 120_000;
    this.#maxCalls = config.maxCalls ?? 32;
    this.#main = {
      id: MAIN,
      port,
      out: new Batcher((items) => port.postMessage(items)),
      calls: new Map(),
    };
  }

  /**
   * Installs the thread-wide hooks that attribute a fatal fault to its call
   * and say so before the thread goes. Only for a real tool thread: the
   * hooks are process-wide.
   */
  watchFaults(): void {
    const exit = process.exit.bind(process);
    const last = (what: string): void => {
      const running = this.#scope.getStore();
      const callId = running?.call.callId ?? this.#slot(TOOL_STATE.running);
      const lane = running?.lane.id ?? this.#slot(TOOL_STATE.lane) ?? MAIN;
      // The answers already made go out first, so no finished call is run again.
      for (const other of this.#lanes.values()) other.out.flush();
      this.#main.out.flush();
      const item: ToolToMain =
        callId === undefined ? { type: 'fatal', what } : { type: 'fatal', callId, lane, what };
      this.#port.postMessage([item]);
    };
    process.on('uncaughtException', (error) => {
      last(`threw an uncaught exception (${errorMessage(error)})`);
      exit(1);
    });
    process.on('unhandledRejection', (reason) => {
      last(`left an unhandled promise rejection (${errorMessage(reason)})`);
      exit(1);
    });
    process.exit = ((code?: number | string | null) => {
      last(`called process.exit(${code ?? ''})`);
      return exit(code ?? undefined);
    }) as typeof process.exit;
  }

  /** Serves calls until `shutdown`, then resolves. */
  run(): Promise<void> {
    const stopped = new Promise<void>((resolve) => {
      this.#shutdown = resolve;
    });
    let loop = performance.eventLoopUtilization();
    this.#beat = setInterval(() => {
      // How busy this thread was since the last beat: the pool grows on it.
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, loop).utilization;
      loop = now;
      Atomics.store(this.#state, TOOL_STATE.busy, Math.round(busy * 1000));
      Atomics.add(this.#state, TOOL_STATE.beat, 1);
    }, BEAT_MS);
    // One sweep for call timeouts: no timer per call.
    const every = Math.max(25, Math.min(1000, Math.floor(this.#timeoutMs / 4)));
    this.#sweep = setInterval(() => this.#expire(), every);
    this.#port.on('message', (data) => this.#receive(data));
    this.#port.postMessage([{ type: 'ready' } satisfies ToolToMain]);
    return stopped.then(() => {
      clearInterval(this.#beat);
      clearInterval(this.#sweep);
      this.#main.out.close();
      for (const lane of this.#lanes.values()) this.#closeLane(lane);
    });
  }

  #slot(index: number): number | undefined {
    const value = Atomics.load(this.#state, index);
    return value === 0 ? undefined : value;
  }

  #receive(data: unknown): void {
    const items = parseMainToTool(data);
    if (items === undefined) return;
    for (const item of items) this.#handle(this.#main, item);
  }

  #receiveLane(lane: Lane, data: unknown): void {
    const items = parseLaneToTool(data);
    if (items === undefined) return;
    for (const item of items) this.#handle(lane, item);
  }

  #handle(lane: Lane, item: MainToTool | LaneToTool): void {
    switch (item.type) {
      case 'call':
        this.#accept(lane, item);
        return;
      case 'cancel': {
        // The caller gave up: it hears nothing more of this call.
        const running = lane.calls.get(item.callId);
        if (running !== undefined && this.#end(running)) this.#abort(running);
        return;
      }
      case 'approval.answered': {
        const approvals = lane.calls.get(item.callId)?.approvals;
        const answer = approvals?.get(item.requestId);
        approvals?.delete(item.requestId);
        answer?.(item.approved);
        return;
      }
      case 'lane.open': {
        const port = item.port;
        const opened: Lane = {
          id: item.lane,
          port,
          out: new Batcher((items) => port.postMessage(items)),
          calls: new Map(),
        };
        this.#lanes.set(item.lane, opened);
        port.on('message', (data: unknown) => this.#receiveLane(opened, data));
        return;
      }
      case 'lane.close': {
        const closing = this.#lanes.get(item.lane);
        if (closing !== undefined) this.#closeLane(closing);
        return;
      }
      case 'shutdown':
        for (const running of [...this.#main.calls.values()])
          if (this.#end(running)) this.#abort(running);
        for (const other of this.#lanes.values()) this.#closeLane(other);
        this.#shutdown?.();
        return;
    }
  }

  #closeLane(lane: Lane): void {
    this.#lanes.delete(lane.id);
    for (const running of [...lane.calls.values()]) if (this.#end(running)) this.#abort(running);
    lane.out.close();
    lane.port.close();
  }

  #accept(lane: Lane, call: CallItem): void {
    // While the thread is kept for a suspect, a lane's call goes back to be placed elsewhere.
    if (
      lane.id !== MAIN &&
      (this.#solo !== undefined || Atomics.load(this.#state, TOOL_STATE.closed) !== 0)
    ) {
      lane.out.push({ type: 'moved', callId: call.callId });
      return;
    }
    const running: Running = {
      lane,
      call,
      controller: undefined,
      aborted: false,
      approvals: undefined,
      startedAt: 0,
    };
    lane.calls.set(call.callId, running);
    Atomics.add(this.#state, TOOL_STATE.inflight, 1);
    if (lane.id === MAIN) Atomics.add(this.#state, TOOL_STATE.inflightMain, 1);
    if (this.#active >= this.#maxCalls) {
      this.#waiting.add(running);
      return;
    }
    this.#start(running);
  }

  #start(running: Running): void {
    const { call } = running;
    const callId = call.callId;
    this.#active += 1;
    running.startedAt = performance.now();
    if (call.solo === true) this.#solo = running;
    const tool = this.#tools.get(call.tool);
    if (tool === undefined || this.#loadError !== undefined) {
      const content =
        this.#loadError ?? `There is no tool named "${call.tool}" in the run's tool modules.`;
      this.#done(running, false, content, 'tool.failed');
      return;
    }
    const context = this.#context(running);
    let pending: Promise<unknown>;
    // The slots name this call while its synchronous code holds the thread.
    Atomics.store(this.#state, TOOL_STATE.lane, running.lane.id);
    Atomics.store(this.#state, TOOL_STATE.running, callId);
    try {
      pending = this.#scope.run(running, () => Promise.resolve(tool.execute(call.input, context)));
    } catch (error) {
      pending = Promise.reject(error);
    } finally {
      Atomics.store(this.#state, TOOL_STATE.running, 0);
      Atomics.store(this.#state, TOOL_STATE.lane, 0);
    }
    pending.then(
      (output) => this.#done(running, true, stringify(output)),
      (error: unknown) =>
        this.#done(
          running,
          false,
          errorMessage(error),
          isTroupeError(error) ? error.code : 'tool.failed',
        ),
    );
  }

  // Answers calls that outlived the timeout: their signal is aborted, the thread goes on.
  #expire(): void {
    const now = performance.now();
    const expired: Running[] = [];
    for (const lane of [this.#main, ...this.#lanes.values()])
      for (const running of lane.calls.values())
        if (running.startedAt > 0 && now - running.startedAt >= this.#timeoutMs)
          expired.push(running);
    for (const running of expired) {
      if (!this.#end(running)) continue;
      this.#abort(running);
      running.lane.out.push({
        type: 'done',
        callId: running.call.callId,
        ok: false,
        content: `${running.call.tool} did not finish within ${this.#timeoutMs} ms, so it was stopped (its signal was aborted). Try smaller input, or do the task another way.`,
        code: 'tool.timeout',
      });
    }
  }

  #done(running: Running, ok: boolean, content: string, code?: ErrorCode): void {
    if (!this.#end(running)) return;
    const callId = running.call.callId;
    const text = truncateMiddle(content, this.#config.maxResultChars);
    running.lane.out.push(
      code === undefined
        ? { type: 'done', callId, ok, content: text }
        : { type: 'done', callId, ok, content: text, code },
    );
  }

  // Forgets a call (it ended, was cancelled or timed out) and starts the next waiting one;
  // false when it had ended already.
  #end(running: Running): boolean {
    const lane = running.lane;
    if (lane.calls.get(running.call.callId) !== running) return false;
    lane.calls.delete(running.call.callId);
    Atomics.sub(this.#state, TOOL_STATE.inflight, 1);
    if (lane.id === MAIN) Atomics.sub(this.#state, TOOL_STATE.inflightMain, 1);
    if (this.#solo === running) this.#solo = undefined;
    if (running.startedAt === 0) {
      this.#waiting.delete(running);
      return true;
    }
    this.#active -= 1;
    const next = this.#waiting.values().next().value;
    if (next !== undefined) {
      this.#waiting.delete(next);
      this.#start(next);
    } else this.#idleWhenClosed();
    return true;
  }

  // Kept empty for a suspect, the thread says when it is: the main thread places it at once.
  #idleWhenClosed(): void {
    if (
      Atomics.load(this.#state, TOOL_STATE.closed) !== 0 &&
      Atomics.load(this.#state, TOOL_STATE.inflight) === 0
    )
      this.#main.out.push({ type: 'idle' });
  }

  // Stops a call's work: its signal aborts (now, or made aborted if the tool asks for it later).
  #abort(running: Running): void {
    running.aborted = true;
    running.controller?.abort();
  }

  #context(running: Running): ToolContext {
    const config = this.#config;
    const { call, lane } = running;
    const context: ToolContext = {
      // Made when the tool first reads it: most calls never do, and an
      // AbortController per call was the tool thread's largest cost per call.
      get signal(): AbortSignal {
        if (running.controller === undefined) {
          running.controller = new AbortController();
          if (running.aborted) running.controller.abort();
        }
        return running.controller.signal;
      },
      runId: config.runId,
      agentId: call.agentId,
      role: call.role,
      workspace: config.workspace,
      grants: config.grants,
      progress: (note) => {
        // Joins the call's item queued last when it is still the batch's last.
        const last = lane.out.last();
        if (
          last?.type === 'progress' &&
          last.callId === call.callId &&
          last.notes.length < NOTES_PER_ITEM
        )
          last.notes.push(note);
        else lane.out.push({ type: 'progress', callId: call.callId, notes: [note] });
      },
    };
    if (config.hasApprove) {
      context.approve = (request) =>
        new Promise<boolean>((resolve) => {
          const requestId = this.#nextApproval;
          this.#nextApproval += 1;
          running.approvals ??= new Map();
          running.approvals.set(requestId, resolve);
          lane.out.push({
            type: 'approval.requested',
            callId: call.callId,
            requestId,
            tool: request.tool,
            summary: request.summary,
          });
        });
    }
    if (config.outDir !== undefined) context.outputDir = config.outDir;
    if (config.unsafeNoSandbox === true) context.unsafeNoSandbox = true;
    if (config.sandbox !== undefined) context.sandbox = config.sandbox;
    if (this.#env !== undefined) context.env = this.#env;
    return context;
  }
}

function stringify(output: unknown): string {
  if (typeof output === 'string') return output;
  if (output === undefined) return '(no output)';
  try {
    return JSON.stringify(output, null, 2) ?? String(output);
  } catch {
    return String(output);
  }
}
