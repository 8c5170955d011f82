import { AsyncLocalStorage } from 'node:async_hooks';
import { type ErrorCode, errorMessage, isTroupeError } from '../../errors.js';
import type { AnyTool, ToolContext } from '../../tools/tool.js';
import { truncateMiddle } from '../../util/truncate.js';
import { Batcher } from '../wire/batcher.js';
import {
  type MainToTool,
  parseMainToTool,
  TOOL_STATE,
  type ToolHostConfig,
  type ToolToMain,
} from '../wire/tool-protocol.js';
import type { HostPort } from './actor-host.js';

// How often the thread says it is alive (the main thread's watchdog reads it).
const BEAT_MS = 100;

interface Running {
  controller: AbortController;
  approvals: Map<number, (approved: boolean) => void>;
}

/**
 * Runs user tool calls inside a tool thread, many at once, apart from the
 * actors. What a call does to its thread is attributed to it: its code runs
 * inside an AsyncLocalStorage scope, so an uncaught exception, an unhandled
 * rejection or a process.exit names its call before the thread dies (let it
 * crash: the thread is not patched up, the main thread replaces it), and
 * the shared `running` slot names the call whose synchronous code holds the
 * thread (a busy loop, an allocation storm).
 */
export class ToolHost {
  readonly #config: ToolHostConfig;
  readonly #port: HostPort;
  readonly #state: Int32Array;
  readonly #tools: ReadonlyMap<string, AnyTool>;
  readonly #loadError: string | undefined;
  readonly #out: Batcher<ToolToMain>;
  readonly #scope = new AsyncLocalStorage<number>();
  readonly #running = new Map<number, Running>();
  readonly #env: NodeJS.ProcessEnv | undefined;
  #nextApproval = 1;
  #beat: NodeJS.Timeout | undefined;
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
    this.#out = new Batcher((items) => port.postMessage(items));
  }

  /**
   * Installs the thread-wide hooks that attribute a fatal fault to its call
   * and say so before the thread goes. Only for a real tool thread: the
   * hooks are process-wide.
   */
  watchFaults(): void {
    const exit = process.exit.bind(process);
    const last = (what: string): void => {
      const callId = this.#scope.getStore() ?? this.#runningNow();
      const item: ToolToMain =
        callId === undefined ? { type: 'fatal', what } : { type: 'fatal', callId, what };
      this.#out.flush();
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
    this.#beat = setInterval(() => Atomics.add(this.#state, TOOL_STATE.beat, 1), BEAT_MS);
    this.#port.on('message', (data) => this.#receive(data));
    this.#port.postMessage([{ type: 'ready' } satisfies ToolToMain]);
    return stopped.then(() => {
      clearInterval(this.#beat);
      this.#out.close();
    });
  }

  #runningNow(): number | undefined {
    const id = Atomics.load(this.#state, TOOL_STATE.running);
    return id === 0 ? undefined : id;
  }

  #receive(data: unknown): void {
    const items = parseMainToTool(data);
    if (items === undefined) return;
    for (const item of items) this.#handle(item);
  }

  #handle(item: MainToTool): void {
    switch (item.type) {
      case 'call':
        this.#call(item);
        return;
      case 'cancel':
        this.#running.get(item.callId)?.controller.abort();
        return;
      case 'approval.answered': {
        const running = this.#running.get(item.callId);
        const answer = running?.approvals.get(item.requestId);
        running?.approvals.delete(item.requestId);
        answer?.(item.approved);
        return;
      }
      case 'shutdown':
        for (const running of this.#running.values()) running.controller.abort();
        this.#shutdown?.();
        return;
    }
  }

  #call(call: Extract<MainToTool, { type: 'call' }>): void {
    const { callId } = call;
    const tool = this.#tools.get(call.tool);
    if (tool === undefined || this.#loadError !== undefined) {
      const content =
        this.#loadError ?? `There is no tool named "${call.tool}" in the run's tool modules.`;
      this.#out.push({ type: 'done', callId, ok: false, content, code: 'tool.failed' });
      return;
    }
    const running: Running = { controller: new AbortController(), approvals: new Map() };
    this.#running.set(callId, running);
    const context = this.#context(call, running);
    let pending: Promise<unknown>;
    // The slot names this call while its synchronous code holds the thread.
    Atomics.store(this.#state, TOOL_STATE.running, callId);
    try {
      pending = this.#scope.run(callId, () => Promise.resolve(tool.execute(call.input, context)));
    } catch (error) {
      pending = Promise.reject(error);
    } finally {
      Atomics.store(this.#state, TOOL_STATE.running, 0);
    }
    pending.then(
      (output) => this.#done(callId, true, stringify(output)),
      (error: unknown) =>
        this.#done(
          callId,
          false,
          errorMessage(error),
          isTroupeError(error) ? error.code : 'tool.failed',
        ),
    );
  }

  #done(callId: number, ok: boolean, content: string, code?: ErrorCode): void {
    if (!this.#running.delete(callId)) return;
    const text = truncateMiddle(content, this.#config.maxResultChars);
    this.#out.push(
      code === undefined
        ? { type: 'done', callId, ok, content: text }
        : { type: 'done', callId, ok, content: text, code },
    );
  }

  #context(call: Extract<MainToTool, { type: 'call' }>, running: Running): ToolContext {
    const config = this.#config;
    const context: ToolContext = {
      signal: running.controller.signal,
      runId: config.runId,
      agentId: call.agentId,
      role: call.role,
      workspace: config.workspace,
      grants: config.grants,
      progress: (note) => this.#out.push({ type: 'progress', callId: call.callId, note }),
    };
    if (config.hasApprove) {
      context.approve = (request) =>
        new Promise<boolean>((resolve) => {
          const requestId = this.#nextApproval;
          this.#nextApproval += 1;
          running.approvals.set(requestId, resolve);
          this.#out.push({
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
