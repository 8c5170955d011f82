import { errorMessage, serializeError, TroupeError } from '../errors.js';
import type { UnsequencedEvent } from '../events/schema.js';
import { ToolRegistry } from '../tools/registry.js';
import type { AnyTool } from '../tools/tool.js';
import type { ActorResult } from './actor.js';
import { Batcher } from './batcher.js';
import type { DelegateInput } from './delegation.js';
import { HostedActor, type HostRequests } from './hosted-actor.js';
import {
  type HostConfig,
  type MainToWorker,
  parseMainMessage,
  type WorkerToMain,
} from './protocol.js';
import { loadToolModules } from './tool-modules.js';

/** The port a host talks over: a worker_threads MessagePort, or either end of a MessageChannel in tests. */
export interface HostPort {
  postMessage(value: unknown): void;
  on(event: 'message', listener: (value: unknown) => void): unknown;
  close(): void;
}

/** What a host is built from besides its config. */
export interface ActorHostOptions {
  /** Tools every actor's set is narrowed from (the built-in catalogue and user modules). */
  tools: readonly AnyTool[];
  /** The thread's id, for the main thread's supervisor (0 when hosted in-process). */
  threadId?: number | undefined;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: TroupeError): void;
}

/**
 * Hosts many actors inside one thread. It parses every message from the main
 * thread, starts and cancels actors, routes their mailboxes and sends their
 * events back batched per event-loop turn. All the logic of a worker lives
 * here, so tests drive it in-process over a MessageChannel.
 */
export class ActorHost {
  readonly #config: HostConfig;
  readonly #port: HostPort;
  readonly #tools: ToolRegistry;
  readonly #actors = new Map<string, HostedActor>();
  readonly #running = new Set<Promise<void>>();
  readonly #pending = new Map<number, Pending>();
  readonly #out: Batcher<WorkerToMain>;
  readonly #env: NodeJS.ProcessEnv | undefined;
  #nextRequest = 1;
  #shutdown: (() => void) | undefined;
  #stopping = false;
  #loadError: TroupeError | undefined;

  constructor(config: HostConfig, port: HostPort, options: ActorHostOptions) {
    this.#config = config;
    this.#port = port;
    this.#tools = new ToolRegistry(options.tools);
    this.#env = config.env === undefined ? undefined : { ...config.env };
    this.#out = new Batcher((items) => port.postMessage(items));
    // Posted at once, not batched: an actor that blocks the thread from its
    // first turn must not keep the supervisor from knowing which thread to stop.
    const ready: WorkerToMain = { type: 'host.ready', threadId: options.threadId ?? 0 };
    port.postMessage([ready]);
  }

  /**
   * Builds a host, loading the user tool modules first. A module that fails
   * to load does not kill the thread: the host reports it and fails every
   * actor it is asked to start with that error.
   */
  static async create(
    config: HostConfig,
    port: HostPort,
    options: { builtins: readonly AnyTool[]; threadId?: number | undefined },
  ): Promise<ActorHost> {
    let tools: AnyTool[] = [...options.builtins];
    let loadError: TroupeError | undefined;
    try {
      const user = await loadToolModules(config.toolModules);
      // A user tool with a built-in's name replaces it.
      const userNames = new Set(user.map((tool) => tool.name));
      tools = [...tools.filter((tool) => !userNames.has(tool.name)), ...user];
    } catch (error) {
      loadError =
        error instanceof TroupeError
          ? error
          : new TroupeError('usage.invalid_option', errorMessage(error), { cause: error });
    }
    const host = new ActorHost(config, port, { tools, threadId: options.threadId });
    if (loadError !== undefined) {
      host.#loadError = loadError;
      host.#out.push({ type: 'host.error', error: serializeError(loadError) });
    }
    return host;
  }

  /** Listens to the port until `host.shutdown`, then ends every actor and resolves. */
  run(): Promise<void> {
    const stopped = new Promise<void>((resolve) => {
      this.#shutdown = resolve;
    });
    this.#port.on('message', (data) => this.#receive(data));
    return stopped.then(async () => {
      while (this.#running.size > 0) await Promise.all([...this.#running]);
      this.#out.close();
    });
  }

  #receive(data: unknown): void {
    let items: MainToWorker[];
    try {
      items = parseMainMessage(data);
    } catch (error) {
      this.#out.push({ type: 'host.error', error: serializeError(error) });
      return;
    }
    for (const item of items) this.#handle(item);
  }

  #handle(item: MainToWorker): void {
    switch (item.type) {
      case 'actor.start':
        this.#start(item);
        return;
      case 'actor.cancel':
        this.#actors.get(item.actorId)?.cancel(item.reason);
        return;
      case 'mailbox.deliver':
        this.#actors.get(item.actorId)?.deliver(item);
        return;
      case 'channel.closed':
        this.#actors.get(item.actorId)?.closeChannel(item.channel);
        return;
      case 'publish.answered':
        this.#answer(item.requestId, { ok: item.ok, message: item.message, code: item.code });
        return;
      case 'approval.answered':
        this.#answer(item.requestId, item.approved);
        return;
      case 'spawn.answered':
        this.#answer(item.requestId, item.results);
        return;
      case 'host.shutdown':
        this.#stop();
        return;
    }
  }

  #start(start: Extract<MainToWorker, { type: 'actor.start' }>): void {
    if (this.#stopping || this.#actors.has(start.actorId)) return;
    const id = start.actorId;
    const emit = (event: UnsequencedEvent): void => this.#out.push({ type: 'event', event });
    const actor = new HostedActor({
      start,
      config: this.#config,
      tools: this.#tools,
      emit,
      consumed: (count) => this.#out.push({ type: 'mailbox.consumed', actorId: id, count }),
      turn: (final) => this.#out.push({ type: 'actor.turn', actorId: id, final }),
      requests: this.#requests(),
      env: this.#env,
    });
    this.#actors.set(id, actor);
    this.#out.push({ type: 'actor.started', actorId: id });
    const loadError = this.#loadError;
    const running = (async () => {
      const outcome =
        loadError === undefined
          ? await actor.run()
          : {
              stopReason: 'error' as const,
              final: '',
              usage: { inputTokens: 0, outputTokens: 0 },
              steps: 0,
              error: serializeError(loadError),
            };
      this.#actors.delete(id);
      // After every event of the actor, on the same port: the end-of-stream marker.
      this.#out.push({ type: 'actor.result', actorId: id, outcome });
    })();
    this.#running.add(running);
    void running.finally(() => this.#running.delete(running));
  }

  #requests(): HostRequests {
    return {
      publish: (actorId, channel, payload) =>
        this.#request((requestId) => ({
          type: 'channel.publish',
          requestId,
          actorId,
          channel,
          payload,
        })),
      approve: (actorId, request) =>
        this.#request((requestId) => ({
          type: 'approval.requested',
          requestId,
          actorId,
          tool: request.tool,
          summary: request.summary,
        })),
      spawn: (actorId, input: DelegateInput) =>
        this.#request<ActorResult[]>((requestId) => ({
          type: 'spawn.requested',
          requestId,
          actorId,
          tasks: input.tasks,
          ...(input.policy === undefined ? {} : { policy: input.policy }),
          ...(input.quorum === undefined ? {} : { quorum: input.quorum }),
        })),
    };
  }

  #request<TAnswer>(build: (requestId: number) => WorkerToMain): Promise<TAnswer> {
    if (this.#stopping) {
      return Promise.reject(new TroupeError('runtime.closed', 'The runtime is shutting down.'));
    }
    const requestId = this.#nextRequest;
    this.#nextRequest += 1;
    return new Promise<TAnswer>((resolve, reject) => {
      this.#pending.set(requestId, { resolve: resolve as (value: unknown) => void, reject });
      this.#out.push(build(requestId));
    });
  }

  #answer(requestId: number, value: unknown): void {
    const pending = this.#pending.get(requestId);
    if (pending === undefined) return;
    this.#pending.delete(requestId);
    pending.resolve(value);
  }

  #stop(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const actor of this.#actors.values()) actor.cancel('the runtime is shutting down');
    const closed = new TroupeError('runtime.closed', 'The runtime is shutting down.');
    for (const pending of this.#pending.values()) pending.reject(closed);
    this.#pending.clear();
    this.#shutdown?.();
  }
}
