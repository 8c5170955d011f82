import type { CallAsk, CallGrant } from '../../agent/allowance.js';
import {
  type AgentJournal,
  type JournalEntry,
  journalLine,
  journalLineEncoder,
} from '../../agent/journal.js';
import { errorMessage, isTroupeError, serializeError, TroupeError } from '../../errors.js';
import { checkEvent } from '../../events/event-check.js';
import type { UnsequencedEvent } from '../../events/schema.js';
import type { McpRoleAccess } from '../../mcp/config.js';
import type { McpHub } from '../../mcp/hub.js';
import { createModel, type Model, type ModelSpec } from '../../model/model.js';
import { ScriptedModel } from '../../model/providers/scripted.js';
import { emptyUsage, type ModelResponse } from '../../model/types.js';
import type { DelegateInput } from '../../roles/delegation-tools.js';
import type { ActorResult } from '../../roles/result.js';
import { ToolRegistry } from '../../tools/registry.js';
import { type AnyTool, type ToolContext, withExecute } from '../../tools/tool.js';
import { loadToolModules } from '../../tools/tool-modules.js';
import { captureWarnings } from '../../util/warnings.js';
import { Batcher } from '../wire/batcher.js';
import {
  type ChildAnswer,
  HOST_NAME_OFFSET,
  HOST_STATE,
  type HostConfig,
  type HostWireItem,
  type MainToWorker,
  parseMainMessage,
  type RoleSpec,
  type WorkerWireItem,
} from '../wire/protocol.js';
import { HostedActor, type HostRequests, roleTools } from './hosted-actor.js';
import { PooledTools } from './pooled-tools.js';
import { ReplayModel } from './replay-model.js';

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
  /** Shared with the main thread's watchdog (HOST_STATE): heartbeat and whose tool runs. */
  state?: SharedArrayBuffer | undefined;
  /** The MCP clients of the config's servers (`ActorHost.create` makes them when it has some). */
  mcp?: McpHub | undefined;
}

// How often the thread says it is alive (the main thread's watchdog reads it).
const BEAT_MS = 100;

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
  readonly #roles = new Map<
    string,
    { spec: RoleSpec; tools: ToolRegistry | undefined; mcp?: McpRoleAccess[] | undefined }
  >();
  // The MCP clients of this thread: a server starts when the first actor that needs it does.
  readonly #mcp: McpHub | undefined;
  readonly #models = new Map<string, { spec: ModelSpec; shared: Model | undefined }>();
  readonly #running = new Set<Promise<void>>();
  readonly #pending = new Map<number, Pending>();
  // Journaled model calls waiting for their record to be stored, by actor and call number.
  readonly #stored = new Map<string, () => void>();
  // Calls of user tools that run on the tool pool: on lanes, or through the main thread.
  readonly #pooledTools: PooledTools;
  readonly #out: Batcher<HostWireItem>;
  // Events go out as their JSON text (HostConfig.eventText).
  readonly #eventText: boolean;
  // This batch's journal lines (see #journalLine), until the batch is posted.
  #journalLines: { type: 'journal.lines'; text: string } | undefined;
  // This batch's one journal intent (see #intent), until the batch is posted.
  #batchIntent: Promise<void> | undefined;
  readonly #env: NodeJS.ProcessEnv | undefined;
  #nextRequest = 1;
  #shutdown: (() => void) | undefined;
  #stopping = false;
  #loadError: TroupeError | undefined;
  readonly #state: Int32Array | undefined;
  #beat: NodeJS.Timeout | undefined;

  constructor(config: HostConfig, port: HostPort, options: ActorHostOptions) {
    this.#config = config;
    this.#port = port;
    this.#tools = new ToolRegistry(options.tools);
    this.#env = config.env === undefined ? undefined : { ...config.env };
    this.#eventText = config.eventText === true;
    const state = options.state === undefined ? undefined : new Int32Array(options.state);
    this.#state = state;
    // A post is a heartbeat too: a thread whose event-loop turn is long but busy sending
    // (50,000 actors' timers firing at once at N = 100,000) is working, not blocked. A
    // blocking tool or loop posts nothing, so the watchdog still sees it.
    this.#out = new Batcher((items) => {
      // Lines recorded from here on go in the next batch's own item, and their intents in its own.
      this.#journalLines = undefined;
      this.#batchIntent = undefined;
      port.postMessage(items);
      if (state !== undefined) Atomics.add(state, HOST_STATE.beat, 1);
    });
    this.#pooledTools = new PooledTools({
      nextRequestId: () => {
        const id = this.#nextRequest;
        this.#nextRequest += 1;
        return id;
      },
      post: (item) => this.#out.push(item),
      approve: (actorId, request) => this.#requests.approve(actorId, request),
    });
    this.#mcp = options.mcp;
    // Posted at once, not batched: an actor that blocks the thread from its
    // first turn must not hide that the thread started (a thread that dies
    // before it says so counts as one that cannot start).
    const ready: WorkerWireItem = { type: 'host.ready', threadId: options.threadId ?? 0 };
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
    options: {
      builtins: readonly AnyTool[];
      threadId?: number | undefined;
      state?: SharedArrayBuffer | undefined;
    },
  ): Promise<ActorHost> {
    let tools: AnyTool[] = [...options.builtins];
    let loadError: TroupeError | undefined;
    // Set once the host is built: pooled tools call through it.
    let built: ActorHost | undefined;
    try {
      let user = await loadToolModules(config.toolModules);
      if (config.isolateTools === true) {
        user = user.map((tool) =>
          withExecute(tool, (input: unknown, context: ToolContext) => {
            if (built === undefined) throw new TroupeError('internal', 'The host is not built.');
            return built.#pooled(tool.name, input, context);
          }),
        );
      }
      // A user tool with a built-in's name replaces it.
      const userNames = new Set(user.map((tool) => tool.name));
      tools = [...tools.filter((tool) => !userNames.has(tool.name)), ...user];
    } catch (error) {
      loadError = isTroupeError(error)
        ? error
        : new TroupeError('usage.invalid_option', errorMessage(error), { cause: error });
    }
    if (options.state !== undefined) tools = namedTools(tools, options.state);
    // Loaded only by a run with MCP servers: most threads never need the MCP client code.
    const mcp =
      config.mcp === undefined || Object.keys(config.mcp).length === 0
        ? undefined
        : new (await import('../../mcp/hub.js')).McpHub({
            servers: config.mcp,
            workspace: config.workspace,
            grants: config.grants,
            env: config.env === undefined ? process.env : { ...config.env },
            unsafeNoSandbox: config.unsafeNoSandbox,
          });
    const host = new ActorHost(config, port, {
      tools,
      threadId: options.threadId,
      state: options.state,
      mcp,
    });
    built = host;
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
    const state = this.#state;
    if (state !== undefined) {
      let loop = performance.eventLoopUtilization();
      this.#beat = setInterval(() => {
        // How busy this thread was since the last beat: the scheduler places more actors on it while it has time.
        const now = performance.eventLoopUtilization();
        const busy = performance.eventLoopUtilization(now, loop).utilization;
        loop = now;
        Atomics.store(state, HOST_STATE.busy, Math.round(busy * 1000));
        Atomics.add(state, HOST_STATE.beat, 1);
      }, BEAT_MS);
    }
    // Warnings raised in this thread become events of the actor whose work raised them
    // (or of the newest actor), never text on the terminal under the live view.
    const release = captureWarnings(
      (warning) => [...this.#actors.values()].at(-1)?.warn(warning) ?? false,
    );
    return stopped.then(async () => {
      while (this.#running.size > 0) await Promise.all([...this.#running]);
      clearInterval(this.#beat);
      await this.#mcp?.close();
      this.#out.close();
      release();
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
      case 'role.define':
        this.#roles.set(item.key, { spec: item.role, tools: undefined });
        return;
      case 'model.define':
        this.#models.set(item.key, { spec: item.model, shared: undefined });
        return;
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
      case 'child.answered':
        this.#answer(item.requestId, item.answer);
        return;
      case 'tool.progress':
        this.#pooledTools.progress(item);
        return;
      case 'tool.answered':
        this.#pooledTools.answered(item);
        return;
      case 'tool.lane':
        this.#pooledTools.open(item);
        return;
      case 'tool.lane.down':
        this.#pooledTools.down(item);
        return;
      case 'journal.answered':
        if (item.refused === undefined) this.#answer(item.requestId, undefined);
        else this.#refuse(item.requestId, new TroupeError('io.write_failed', item.refused));
        return;
      case 'budget.answered':
        this.#answer(item.requestId, item);
        return;
      case 'journal.stored': {
        const key = `${item.actorId}\n${item.step}`;
        this.#stored.get(key)?.();
        this.#stored.delete(key);
        return;
      }
      case 'host.shutdown':
        this.#stop();
        return;
    }
  }

  // A user tool's call, run on the tool pool: whatever the tool does to its
  // thread costs this call only. A cancel does not wait for it.
  #pooled(tool: string, input: unknown, context: ToolContext): Promise<string> {
    if (!crossable(input)) {
      return Promise.reject(
        new TroupeError(
          'tool.invalid_input',
          `The arguments of ${tool} hold a function or symbol after parsing, so they cannot reach the tool pool.`,
        ),
      );
    }
    if (this.#stopping) {
      return Promise.reject(new TroupeError('runtime.closed', 'The runtime is shutting down.'));
    }
    return this.#pooledTools.call(tool, input, context);
  }

  #start(start: Extract<MainToWorker, { type: 'actor.start' }>): void {
    if (this.#stopping || this.#actors.has(start.actorId)) return;
    const id = start.actorId;
    let actor: HostedActor;
    try {
      if (this.#loadError !== undefined) throw this.#loadError;
      actor = new HostedActor({
        start,
        ...this.#roleOf(start.role),
        model: this.#journaled(start, this.#modelOf(start.model)),
        config: this.#config,
        emit: this.#emit,
        consumed: (count) => this.#out.push({ type: 'mailbox.consumed', actorId: id, count }),
        turn: (final) => this.#out.push({ type: 'actor.turn', actorId: id, final }),
        requests: this.#requests,
        env: this.#env,
        journal: this.#config.journal === true ? this.#journalOf(start) : undefined,
      });
    } catch (error) {
      // A role or model this host cannot build fails the actor, not the thread.
      const outcome = {
        stopReason: 'error' as const,
        final: '',
        usage: emptyUsage(),
        steps: 0,
        error: serializeError(error),
      };
      this.#out.push({ type: 'actor.result', actorId: id, outcome });
      return;
    }
    this.#actors.set(id, actor);
    const running = actor.run().then((outcome) => {
      this.#actors.delete(id);
      // After every event of the actor, on the same port: the end-of-stream marker.
      this.#out.push({ type: 'actor.result', actorId: id, outcome });
    });
    this.#running.add(running);
    void running.finally(() => this.#running.delete(running));
  }

  #roleOf(key: string): {
    role: RoleSpec;
    tools: ToolRegistry;
    ready?: Promise<void> | undefined;
  } {
    const entry = this.#roles.get(key);
    if (entry === undefined)
      throw new TroupeError('runtime.protocol', `Role ${key} was never defined on this host.`);
    if (entry.tools === undefined) {
      entry.tools = roleTools(this.#tools, entry.spec, this.#requests);
      const access = this.#mcp?.access(entry.spec.name, entry.spec.mcp ?? []) ?? [];
      if (this.#mcp !== undefined && access.length > 0) {
        entry.tools = this.#mcp.registry(entry.tools, access);
        entry.mcp = access;
      }
    }
    // Asked per actor: a server that failed to start is tried again by its connection's restarts.
    const ready = entry.mcp === undefined ? undefined : this.#mcp?.ensure(entry.mcp);
    ready?.catch(() => undefined);
    return { role: entry.spec, tools: entry.tools, ready };
  }

  // A scripted model keeps state (its used steps), so each actor gets its own;
  // every other provider is stateless per request and shared on the host.
  #modelOf(key: string): Model {
    const entry = this.#models.get(key);
    if (entry === undefined)
      throw new TroupeError('runtime.protocol', `Model ${key} was never defined on this host.`);
    if (entry.spec.provider === 'scripted') return new ScriptedModel(entry.spec.script);
    entry.shared ??= createModel(entry.spec, this.#env);
    return entry.shared;
  }

  // A journaled actor (on a NATS worker node) replays its recorded responses, then records live ones.
  #journaled(start: Extract<MainToWorker, { type: 'actor.start' }>, model: Model): Model {
    const journal = start.journal;
    if (journal === undefined) return model;
    const actorId = start.actorId;
    const record = journal.record
      ? (step: number, response: ModelResponse) =>
          new Promise<void>((resolve) => {
            this.#stored.set(`${actorId}\n${step}`, resolve);
            this.#out.push({ type: 'journal.record', actorId, step, response });
          })
      : undefined;
    return new ReplayModel(model, journal.replay, record);
  }

  // The actor's side of the run's journal: records go to the main thread ahead of their events.
  #journalOf(start: Extract<MainToWorker, { type: 'actor.start' }>): AgentJournal {
    const actorId = start.actorId;
    const key = start.key;
    if (key !== undefined && start.journal === undefined) {
      // Encoded here, off the main thread, and sent with the batch's other actors' lines as one
      // text (one item, one append): the main thread writes it as it came.
      const encode = journalLineEncoder(key);
      const line = (entry: JournalEntry): void => this.#journalLine(encode(entry));
      return {
        recorded: start.entries ?? [],
        record: line,
        intend: (entry) => {
          line(entry);
          return this.#intent(actorId);
        },
      };
    }
    // Encoded here, off the main thread, which writes the line as it comes.
    const record =
      key === undefined
        ? (entry: JournalEntry) => ({ entry })
        : (entry: JournalEntry) => ({ line: journalLine(key, entry) });
    return {
      // On a NATS worker node the node's journal replays the model responses (ReplayModel): of these
      // entries only the order messages were taken in replays (InboxOrder); the rest only record.
      recorded:
        start.journal === undefined
          ? (start.entries ?? [])
          : (start.entries ?? []).filter((entry) => entry.kind === 'inbox'),
      record: (entry) => this.#out.push({ type: 'journal.entry', actorId, ...record(entry) }),
      intend: (entry) =>
        this.#request<void>((requestId) => ({
          type: 'journal.intent',
          requestId,
          actorId,
          ...record(entry),
        })),
    };
  }

  // A group commit: every intent of this batch waits on one `journal.intent` item, placed after
  // the batch's `journal.lines` (which holds their lines), and answered once the main thread has
  // written the batch: one request, one answer and one promise per batch instead of per tool call.
  #intent(actorId: string): Promise<void> {
    const shared = this.#batchIntent;
    if (shared !== undefined) return shared;
    if (this.#stopping) {
      return Promise.reject(new TroupeError('runtime.closed', 'The runtime is shutting down.'));
    }
    const requestId = this.#nextRequest;
    this.#nextRequest += 1;
    let settle: Pending | undefined;
    const intent = new Promise<void>((resolve, reject) => {
      settle = { resolve: resolve as (value: unknown) => void, reject };
    });
    this.#pending.set(requestId, settle as Pending);
    // Set before the push: a push that fills the batch posts it at once (and clears this).
    this.#batchIntent = intent;
    this.#out.push({ type: 'journal.intent', requestId, actorId });
    return intent;
  }

  // Appends a journal line to this batch's `journal.lines` item, made (ahead of what follows it in
  // the batch) by the first line: the main thread appends the lines before it reads the events
  // that announce them, and before the intents that wait for them.
  #journalLine(line: string): void {
    const lines = this.#journalLines;
    if (lines !== undefined) {
      lines.text += line;
      return;
    }
    const item = { type: 'journal.lines' as const, text: line };
    // Set before the push: a push that fills the batch posts it at once (and clears this).
    this.#journalLines = item;
    this.#out.push(item);
  }

  // Validated here, in the worker: the main thread only stamps the seq.
  readonly #emit = (event: UnsequencedEvent): void => {
    const checked = checkEvent(event);
    this.#out.push(this.#eventText ? (eventText(checked) ?? checked) : checked);
  };

  readonly #requests: HostRequests = {
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
        ...(request.detail === undefined ? {} : { detail: request.detail }),
        ...(request.role === undefined ? {} : { role: request.role }),
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
    child: (actorId, request) =>
      this.#request<ChildAnswer>((requestId) => ({
        type: 'child.requested',
        requestId,
        actorId,
        request,
      })),
    reserve: (actorId, ask, signal) => this.#reserve(actorId, ask, signal),
  };

  // A round trip per budgeted model call: the main thread holds the one tree
  // budget, so calls of every thread share it exactly (see ARCHITECTURE, Budgets).
  #reserve(actorId: string, ask: CallAsk, signal: AbortSignal): Promise<CallGrant> {
    if (this.#stopping)
      return Promise.resolve({ ok: false, reason: 'The runtime is shutting down.' });
    const requestId = this.#nextRequest;
    this.#nextRequest += 1;
    return new Promise<CallGrant>((resolve) => {
      const onAbort = (): void => {
        if (!this.#pending.delete(requestId)) return;
        this.#out.push({ type: 'budget.settle', actorId, requestId, outcome: 'aborted' });
        resolve({
          ok: false,
          reason: 'The call was cancelled while it waited for room in the budget.',
        });
      };
      this.#pending.set(requestId, {
        resolve: (value) => {
          signal.removeEventListener('abort', onAbort);
          const answer = value as Extract<MainToWorker, { type: 'budget.answered' }>;
          const { reservation, maxTokens } = answer;
          if (!answer.ok || reservation === undefined || maxTokens === undefined) {
            resolve({ ok: false, reason: answer.reason ?? "The run's budget is used up." });
            return;
          }
          resolve({
            ok: true,
            maxTokens,
            settle: (outcome) =>
              this.#out.push({ type: 'budget.settle', actorId, reservation, outcome }),
          });
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          resolve({ ok: false, reason: error.message });
        },
      });
      this.#out.push({ type: 'budget.reserve', requestId, actorId, ...ask });
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #request<TAnswer>(build: (requestId: number) => WorkerWireItem): Promise<TAnswer> {
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

  #refuse(requestId: number, error: TroupeError): void {
    const pending = this.#pending.get(requestId);
    if (pending === undefined) return;
    this.#pending.delete(requestId);
    pending.reject(error);
  }

  #stop(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    for (const actor of this.#actors.values()) actor.cancel('the runtime is shutting down');
    const closed = new TroupeError('runtime.closed', 'The runtime is shutting down.');
    for (const pending of this.#pending.values()) pending.reject(closed);
    this.#pending.clear();
    this.#pooledTools.close();
    for (const resolve of this.#stored.values()) resolve();
    this.#stored.clear();
    this.#shutdown?.();
  }
}

// Every tool, wrapped so that while its synchronous code runs the shared
// state names its actor and itself: if that code blocks the thread (a busy
// loop, a catastrophic regex), the watchdog can say whose tool it was.
function namedTools(tools: readonly AnyTool[], state: SharedArrayBuffer): AnyTool[] {
  const slots = new Int32Array(state);
  const bytes = new Uint8Array(state, HOST_NAME_OFFSET);
  const encoder = new TextEncoder();
  return tools.map((tool) =>
    withExecute(tool, (input: unknown, context: ToolContext) => {
      const { written } = encoder.encodeInto(`${context.agentId}\0${tool.name}`, bytes);
      Atomics.store(slots, HOST_STATE.named, written);
      try {
        return tool.execute(input, context);
      } finally {
        Atomics.store(slots, HOST_STATE.named, 0);
      }
    }),
  );
}

// True when `value` survives a structured clone: no function or symbol inside (zod output is plain data).
function crossable(value: unknown, depth = 0): boolean {
  if (typeof value === 'function' || typeof value === 'symbol') return false;
  if (typeof value !== 'object' || value === null || depth > 32) return true;
  for (const item of Array.isArray(value) ? value : Object.values(value))
    if (!crossable(item, depth + 1)) return false;
  return true;
}

// An event's JSON text; undefined for one JSON cannot write (a BigInt or a
// cycle in a free-form field), which then crosses as an object, as before.
function eventText(event: UnsequencedEvent): string | undefined {
  try {
    return JSON.stringify(event);
  } catch {
    return undefined;
  }
}
