import { availableParallelism } from 'node:os';
import { errorMessage, TroupeError } from '../errors.js';
import { EventBus, type Unsubscribe } from '../events/bus.js';
import type {
  AgentStatus,
  AgentStopReason,
  EventPayload,
  UnsequencedEvent,
} from '../events/schema.js';
import { describeModel, type ModelSpec } from '../model/model.js';
import { builtinRoles } from '../roles/builtin.js';
import { type AnyRole, isRole, parseRoleOutput, toRoleSpec } from '../roles/role.js';
import type { ApprovalRequest, PermissionTier } from '../tools/tool.js';
import { createRunId } from '../util/ids.js';
import { ActorRecord, type ActorResult, type AgentRef, type SpawnOptions } from './actor.js';
import { type DelegateInput, runDelegation } from './delegation.js';
import { Mailbox } from './mailbox.js';
import type { ActorOutcome, RoleSpec, WorkerToMain } from './protocol.js';
import { ResultStore } from './result-store.js';
import { Router } from './router.js';
import { plainError, ToolIndex } from './runtime-support.js';
import { Supervisor } from './supervisor.js';
import type { Transport } from './transport.js';
import { LocalTransport } from './transports/local.js';
import { type BudgetCrossing, TreeBudget, type TreeBudgetLimits } from './tree-budget.js';
import { type ModelPrice, UsageLedger, type UsageTotals } from './usage-ledger.js';

/** Memory limits of each worker thread (Node's `resourceLimits`), in megabytes. */
export interface ThreadLimits {
  maxOldGenerationSizeMb?: number;
  maxYoungGenerationSizeMb?: number;
  codeRangeSizeMb?: number;
  stackSizeMb?: number;
}

/** How a Runtime is built. */
export interface RuntimeOptions {
  /** The model of roles that name none. */
  model: ModelSpec;
  /** Roles added to the built-ins (a role with a built-in's name replaces it). */
  roles?: readonly AnyRole[] | undefined;
  /** Worker threads (default the available cores, at most 4). */
  threads?: number | undefined;
  /** Absolute path of the workspace; file tools stay inside it. */
  workspace: string;
  /** Absolute path of the run's output folder; writes are confined to it. */
  outDir?: string | undefined;
  /** The permission tiers this run grants. */
  grants: readonly PermissionTier[];
  /** Absolute paths of ESM modules exporting tools; every thread loads them. */
  toolModules?: readonly string[] | undefined;
  /** One budget for the whole tree. */
  budget?: TreeBudgetLimits | undefined;
  /** US dollars per million tokens, per model name. */
  prices?: Readonly<Record<string, ModelPrice>> | undefined;
  runId?: string | undefined;
  /** The bus every event goes to (default a new one). */
  bus?: EventBus | undefined;
  /** Answers approval requests of tools in any thread. */
  approve?: ((request: ApprovalRequest) => Promise<boolean>) | undefined;
  /** Store completed results in `dir`; with `reuse`, a spawn whose result is stored returns it at once. */
  results?: { dir: string; reuse: boolean } | undefined;
  /** How deep delegation may go below the coordinator (default 3). */
  maxDepth?: number | undefined;
  /** The environment models and tools see (default process.env). */
  env?: NodeJS.ProcessEnv | undefined;
  /** Where actors run (default worker threads on this machine). */
  transport?: Transport | undefined;
  /** Per-thread memory limits; a thread past them dies, its actors fail, the pool replaces it. */
  threadLimits?: ThreadLimits | undefined;
  /** How long a cancelled actor gets to stop before its thread is stopped, in milliseconds (default 5,000). */
  cancelGraceMs?: number | undefined;
  /** Actors per thread at once; more wait in the admission queue (default 5,000). */
  maxActorsPerThread?: number | undefined;
  /** Spawns waiting for a place before more are refused (default 100,000). */
  maxQueued?: number | undefined;
}

interface Node {
  depth: number;
  key: string;
  children: Set<string>;
}

type Finish = { final: string; steps: number; stopReason: AgentStopReason; output?: unknown };

/**
 * Hosts actors (sub-agents) on a pool of worker threads, routes their
 * channel messages, rolls their events into one EventBus with a global
 * gap-free seq, keeps their usage, enforces one budget for the tree and
 * supervises failures: every actor reaches exactly one terminal status.
 *
 * @example
 * const runtime = new Runtime({ model, workspace: process.cwd(), grants: ['read'] });
 * const ref = runtime.spawn('researcher', 'Summarize notes/a.md');
 * const result = await ref.result;
 * await runtime.close();
 */
export class Runtime {
  readonly bus: EventBus;
  readonly runId: string;
  readonly #options: RuntimeOptions;
  readonly #roles = new Map<string, AnyRole>();
  readonly #specs = new WeakMap<AnyRole, RoleSpec>();
  readonly #records = new Map<string, ActorRecord>();
  readonly #roots = new Map<string, Node>();
  readonly #counters = new Map<string, number>();
  readonly #queue: ActorRecord[] = [];
  readonly #load = new Map<number, number>();
  readonly #router: Router;
  readonly #ledger: UsageLedger;
  readonly #budget: TreeBudget;
  readonly #supervisor = new Supervisor();
  readonly #store: ResultStore | undefined;
  readonly #transport: Transport;
  readonly #tools: ToolIndex;
  readonly #budgetListeners = new Set<(crossing: BudgetCrossing) => void>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #startedAt = Date.now();
  readonly #graceMs: number;
  readonly #maxPerHost: number;
  #started = false;
  #closed = false;
  #closing: Promise<void> | undefined;
  #fatal: TroupeError | undefined;
  #nextMessage = 1;

  constructor(options: RuntimeOptions) {
    this.#options = options;
    this.bus = options.bus ?? new EventBus();
    this.runId = options.runId ?? createRunId();
    for (const role of [...builtinRoles(), ...(options.roles ?? [])]) {
      if (!isRole(role))
        throw new TroupeError('usage.invalid_role', 'roles must be made with defineRole().');
      this.#roles.set(role.name, role);
    }
    this.#graceMs = options.cancelGraceMs ?? 5000;
    this.#maxPerHost = options.maxActorsPerThread ?? 5000;
    this.#budget = new TreeBudget(options.budget);
    this.#ledger = new UsageLedger(options.prices);
    this.#store = options.results === undefined ? undefined : new ResultStore(options.results);
    this.#tools = new ToolIndex(options.toolModules ?? []);
    this.#router = new Router({
      deliver: (actorId, message) => this.#deliver(actorId, message),
      close: (actorId, channel) =>
        this.#send(actorId, { type: 'channel.closed', actorId, channel }),
      sent: (from, channel, messageId, payload) =>
        this.#emitFor(from, { type: 'message.sent', channel, messageId, payload }),
    });
    const threads = options.threads ?? Math.min(4, Math.max(1, availableParallelism()));
    this.#transport =
      options.transport ??
      new LocalTransport({
        threads,
        config: {
          runId: this.runId,
          workspace: options.workspace,
          ...(options.outDir === undefined ? {} : { outDir: options.outDir }),
          grants: [...options.grants],
          toolModules: [...(options.toolModules ?? [])],
          ...(options.env === undefined ? {} : { env: definedEnv(options.env) }),
          hasApprove: options.approve !== undefined,
        },
        resourceLimits: options.threadLimits,
      });
    this.bus.on('model.response', (event) => {
      this.#ledger.record(event.agentId, event.usage);
      if (this.#budget.active) this.#checkBudget(event.agentId);
    });
    const timeMs = this.#budget.limits.timeMs;
    if (timeMs !== undefined) {
      const soft = timeMs * (this.#budget.limits.softRatio ?? 0.8);
      for (const delay of [soft, timeMs]) {
        const timer = setTimeout(() => this.#checkBudget(this.#rootId()), delay);
        timer.unref();
        this.#timers.push(timer);
      }
    }
  }

  /** The model of roles that name none. */
  get defaultModel(): ModelSpec {
    return this.#options.model;
  }

  /** What tools outside the pool (the coordinator's) need to run like the actors' do. */
  get toolSettings(): {
    workspace: string;
    outDir: string | undefined;
    grants: readonly PermissionTier[];
    env: NodeJS.ProcessEnv | undefined;
    approve: ((request: ApprovalRequest) => Promise<boolean>) | undefined;
  } {
    const { workspace, outDir, grants, env, approve } = this.#options;
    return { workspace, outDir, grants, env, approve };
  }

  /** Every role this runtime knows, built-ins first. */
  get roles(): readonly AnyRole[] {
    return [...this.#roles.values()];
  }

  /** The role called `name`, if known. */
  role(name: string): AnyRole | undefined {
    return this.#roles.get(name);
  }

  /** The first hard limit of the tree budget that was reached, if any. */
  get budgetExceeded(): BudgetCrossing | undefined {
    return this.#budget.exceeded;
  }

  /** Calls `listener` once when the tree budget's hard limit is reached. */
  onBudgetExceeded(listener: (crossing: BudgetCrossing) => void): Unsubscribe {
    this.#budgetListeners.add(listener);
    return () => this.#budgetListeners.delete(listener);
  }

  /** Wall time since the runtime was made, in milliseconds. */
  get elapsedMs(): number {
    return Date.now() - this.#startedAt;
  }

  /** Totals of the whole run, or of one agent alone. */
  usage(agentId?: string): UsageTotals {
    return agentId === undefined ? this.#ledger.total() : this.#ledger.self(agentId);
  }

  /** Totals of an agent and all its descendants. */
  subtreeUsage(agentId: string): UsageTotals {
    return this.#ledger.subtree(agentId);
  }

  /**
   * Registers an agent that runs outside the pool (the coordinator, in the
   * main thread) as a root of the tree: its usage is counted and its
   * children are cancelled with it.
   */
  registerRoot(agentId: string, options: { model: ModelSpec; task: string }): void {
    if (this.#roots.has(agentId) || this.#records.has(agentId)) return;
    const key = this.#store?.nextKey(agentId, options.task, '') ?? agentId;
    this.#roots.set(agentId, { depth: 0, key, children: new Set() });
    this.#ledger.register(agentId, undefined, modelName(options.model));
  }

  /** Cancels every live child of `agentId` (and their descendants). */
  cancelChildren(agentId: string, reason: string): void {
    for (const child of this.#childrenOf(agentId)) this.#cancel(child, reason, 'cancelled');
  }

  /**
   * Spawns an actor of `role` on the pool. Never throws for what happens to
   * the actor: the result says. Throws `usage.invalid_role` for a role name
   * this runtime does not know.
   */
  spawn(role: string | AnyRole, task: string, options: SpawnOptions = {}): AgentRef {
    const resolved = this.#resolveRole(role);
    const parent = options.parent === undefined ? undefined : this.#node(options.parent);
    const parentKey = parent?.key ?? '';
    const fullTask =
      options.input === undefined
        ? task
        : `${task}\n\nInput:\n${JSON.stringify(options.input, null, 2)}`;
    const key = this.#store?.nextKey(resolved.name, fullTask, parentKey);
    const id = this.#nextId(resolved.name);
    if (key !== undefined) {
      const stored = this.#store?.get(key);
      if (stored !== undefined) return reusedRef(id, stored);
    }
    const record = new ActorRecord({
      id,
      role: resolved,
      task: fullTask,
      parentId: options.parent,
      depth: (parent?.depth ?? 0) + 1,
      model: resolved.model ?? this.#options.model,
      mailbox: new Mailbox(id, resolved.mailbox),
    });
    record.key = key;
    this.#admit(record, options);
    return this.#ref(record);
  }

  /**
   * Spawns a batch under one parent, publishers before subscribers (so no
   * subscriber starts with its channel already closed); refs in task order.
   * Unknown roles become failed results instead of throwing.
   */
  spawnBatch(parentId: string, tasks: readonly { role: string; task: string }[]): AgentRef[] {
    const rank = (name: string): number => {
      const role = this.#roles.get(name);
      if (role === undefined) return 1;
      if (role.publishes.length > 0) return 0;
      return role.subscribes.length > 0 ? 2 : 1;
    };
    const order = tasks
      .map((task, index) => ({ task, index }))
      .sort((a, b) => rank(a.task.role) - rank(b.task.role));
    const refs: AgentRef[] = new Array(tasks.length);
    for (const { task, index } of order) {
      refs[index] = this.#roles.has(task.role)
        ? this.spawn(task.role, task.task, { parent: parentId })
        : refusedRef(task.role, this.#unknownRole(task.role));
    }
    return refs;
  }

  /**
   * Drains or stops everything and terminates the threads: live actors are
   * cancelled (and stopped after the grace period), every one still gets its
   * agent.finished, and no thread or timer is left behind.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    const live = [...this.#records.values()].filter((record) => record.state !== 'finished');
    for (const record of live) this.#cancel(record, 'the runtime is closing', 'cancelled');
    if (live.length > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(live.map((record) => record.result)),
        new Promise((resolve) => {
          timer = setTimeout(resolve, this.#graceMs * 2);
        }),
      ]);
      clearTimeout(timer);
    }
    if (this.#started) await this.#transport.close(this.#graceMs);
    const closed = plainError(
      new TroupeError('runtime.closed', 'The runtime closed before the actor finished.'),
    );
    for (const record of this.#records.values()) {
      if (record.state !== 'finished')
        this.#finish(
          record,
          'cancelled',
          { final: record.lastFinal, steps: 0, stopReason: 'cancelled' },
          closed,
        );
    }
  }

  #resolveRole(role: string | AnyRole): AnyRole {
    if (typeof role !== 'string') {
      if (!isRole(role))
        throw new TroupeError(
          'usage.invalid_role',
          'spawn() takes a role name or a role made with defineRole().',
        );
      const known = this.#roles.get(role.name);
      if (known === undefined) this.#roles.set(role.name, role);
      return role;
    }
    const known = this.#roles.get(role);
    if (known === undefined) throw this.#unknownRole(role);
    return known;
  }

  #unknownRole(name: string): TroupeError {
    return new TroupeError(
      'usage.invalid_role',
      `Unknown role "${name}". Known roles: ${[...this.#roles.keys()].join(', ')}.`,
    );
  }

  #nextId(role: string): string {
    const n = (this.#counters.get(role) ?? 0) + 1;
    this.#counters.set(role, n);
    return `${role}-${n}`;
  }

  #node(agentId: string): Node {
    const record = this.#records.get(agentId);
    if (record !== undefined)
      return { depth: record.depth, key: record.key ?? record.id, children: record.children };
    let root = this.#roots.get(agentId);
    if (root === undefined) {
      root = { depth: 0, key: agentId, children: new Set() };
      this.#roots.set(agentId, root);
    }
    return root;
  }

  #childrenOf(agentId: string): ActorRecord[] {
    const ids =
      this.#records.get(agentId)?.children ??
      this.#roots.get(agentId)?.children ??
      new Set<string>();
    const children: ActorRecord[] = [];
    for (const id of ids) {
      const child = this.#records.get(id);
      if (child !== undefined && child.state !== 'finished') children.push(child);
    }
    return children;
  }

  #rootId(): string {
    return this.#roots.keys().next().value ?? 'runtime';
  }

  #admit(record: ActorRecord, options: SpawnOptions): void {
    const { id, role } = record;
    this.#records.set(id, record);
    if (record.parentId !== undefined) this.#node(record.parentId).children.add(id);
    this.#ledger.register(id, record.parentId, modelName(record.model));
    this.#emitFor(id, {
      type: 'agent.spawned',
      task: record.task,
      model: describeModel(record.model),
      depth: record.depth,
    });
    this.#router.addActor(id, role.publishes, role.subscribes, record.mailbox);

    const refusal = this.#refusal(record);
    if (refusal !== undefined) {
      this.#finish(
        record,
        refusal.status,
        { final: '', steps: 0, stopReason: 'error' },
        refusal.error,
      );
      return;
    }
    const timeoutMs = options.timeoutMs ?? role.timeoutMs;
    if (timeoutMs !== undefined) {
      record.timeout = setTimeout(
        () => this.#cancel(record, `timed out after ${timeoutMs} ms`, 'timed_out'),
        timeoutMs,
      );
    }
    const signal = options.signal;
    if (signal !== undefined) {
      const onAbort = (): void =>
        this.#cancel(record, `aborted: ${errorMessage(signal.reason)}`, 'cancelled');
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      record.detachSignal = () => signal.removeEventListener('abort', onAbort);
    }
    const checked = this.#tools.check(role, this.#options.grants);
    if (checked instanceof Promise) {
      void checked.then((error) => this.#afterCheck(record, error));
    } else {
      this.#afterCheck(record, checked);
    }
  }

  // A role whose tools are unknown or need an ungranted tier fails here, before it runs.
  #afterCheck(record: ActorRecord, error: TroupeError | undefined): void {
    if (record.state !== 'queued') return;
    if (error === undefined) this.#enqueue(record);
    else
      this.#finish(
        record,
        'failed',
        { final: '', steps: 0, stopReason: 'error' },
        plainError(error),
      );
  }

  #refusal(
    record: ActorRecord,
  ): { status: AgentStatus; error: ReturnType<typeof plainError> } | undefined {
    if (this.#closed) {
      return {
        status: 'failed',
        error: plainError(
          new TroupeError('runtime.closed', `${record.id} was not started: the runtime is closed.`),
        ),
      };
    }
    if (this.#fatal !== undefined) return { status: 'failed', error: plainError(this.#fatal) };
    const maxDepth = this.#options.maxDepth ?? 3;
    if (record.depth > maxDepth) {
      return {
        status: 'failed',
        error: plainError(
          new TroupeError(
            'runtime.spawn_refused',
            `${record.id} was not started: delegation depth ${record.depth} is past the limit of ${maxDepth}.`,
          ),
        ),
      };
    }
    const exceeded = this.#budget.exceeded;
    if (exceeded !== undefined) {
      return { status: 'cancelled', error: plainError(budgetError(record.id, exceeded)) };
    }
    if (this.#queue.length >= (this.#options.maxQueued ?? 100_000)) {
      return {
        status: 'failed',
        error: plainError(
          new TroupeError(
            'runtime.spawn_refused',
            `${record.id} was not started: ${this.#queue.length} spawns already wait for a place.`,
          ),
        ),
      };
    }
    return undefined;
  }

  #enqueue(record: ActorRecord): void {
    this.#queue.push(record);
    if (!this.#started) {
      this.#started = true;
      this.#transport.start({
        items: (hostId, items) => this.#onItems(hostId, items),
        hostDown: (hostId, error) => this.#onHostDown(hostId, error),
        hostUp: (hostId) => {
          this.#load.set(hostId, 0);
          this.#pump();
        },
        error: (error, fatal) => this.#onTransportError(error, fatal),
      });
    }
    this.#pump();
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const hostId = this.#pickHost();
      if (hostId === undefined) return;
      const record = this.#queue.shift() as ActorRecord;
      if (record.state === 'queued') this.#startOn(record, hostId);
    }
  }

  #pickHost(): number | undefined {
    let best: number | undefined;
    let bestLoad = this.#maxPerHost;
    for (const hostId of this.#transport.hosts()) {
      const load = this.#load.get(hostId) ?? 0;
      if (load < bestLoad) {
        best = hostId;
        bestLoad = load;
      }
    }
    return best;
  }

  #startOn(record: ActorRecord, hostId: number): void {
    record.state = 'running';
    record.hostId = hostId;
    record.attempt += 1;
    this.#load.set(hostId, (this.#load.get(hostId) ?? 0) + 1);
    let spec = this.#specs.get(record.role);
    if (spec === undefined) {
      spec = toRoleSpec(record.role);
      this.#specs.set(record.role, spec);
    }
    this.#transport.send(hostId, {
      type: 'actor.start',
      actorId: record.id,
      ...(record.parentId === undefined ? {} : { parentId: record.parentId }),
      role: spec,
      model: record.model,
      task: record.task,
      attempt: record.attempt,
    });
    // A restarted attempt reads again what its earlier attempts were sent.
    record.consumed = 0;
    record.mailbox.reset(record.log.length);
    for (const item of record.log) this.#transport.send(hostId, item);
    for (const channel of this.#router.closedFor(record.id)) {
      this.#transport.send(hostId, { type: 'channel.closed', actorId: record.id, channel });
    }
    if (record.stop !== undefined)
      this.#transport.send(hostId, {
        type: 'actor.cancel',
        actorId: record.id,
        reason: record.stop.error.message,
      });
  }

  #release(record: ActorRecord): void {
    if (record.hostId === undefined) return;
    const load = this.#load.get(record.hostId);
    if (load !== undefined) this.#load.set(record.hostId, load - 1);
    record.hostId = undefined;
  }

  #onItems(hostId: number, items: WorkerToMain[]): void {
    for (const item of items) {
      switch (item.type) {
        case 'event':
          this.#ingest(item.event);
          break;
        case 'actor.result': {
          const record = this.#records.get(item.actorId);
          if (record !== undefined && record.hostId === hostId)
            this.#onOutcome(record, item.outcome);
          break;
        }
        case 'actor.turn':
          this.#records.get(item.actorId)?.turn(item.final);
          break;
        case 'mailbox.consumed': {
          const record = this.#records.get(item.actorId);
          if (record === undefined) break;
          record.consumed += item.count;
          record.mailbox.release(item.count);
          break;
        }
        case 'channel.publish':
          void this.#router.publish(item.actorId, item.channel, item.payload).then((answer) =>
            this.#transport.send(hostId, {
              type: 'publish.answered',
              requestId: item.requestId,
              ...answer,
            }),
          );
          break;
        case 'approval.requested':
          void this.#approve({
            tool: item.tool,
            agentId: item.actorId,
            summary: item.summary,
          }).then((approved) =>
            this.#transport.send(hostId, {
              type: 'approval.answered',
              requestId: item.requestId,
              approved,
            }),
          );
          break;
        case 'spawn.requested':
          void this.#delegateFor(item).then((results) =>
            this.#transport.send(hostId, {
              type: 'spawn.answered',
              requestId: item.requestId,
              results,
            }),
          );
          break;
        case 'host.error':
        case 'host.ready':
        case 'actor.started':
          break;
      }
    }
  }

  #ingest(event: unknown): void {
    try {
      this.bus.publish(event as UnsequencedEvent);
    } catch (error) {
      const agentId =
        typeof (event as { agentId?: unknown }).agentId === 'string'
          ? (event as { agentId: string }).agentId
          : 'runtime';
      this.bus.publish({
        v: 1,
        ts: Date.now(),
        runId: this.runId,
        agentId,
        type: 'callback.error',
        callback: 'worker event',
        error: plainError(
          new TroupeError(
            'runtime.protocol',
            `A worker sent an invalid event: ${errorMessage(error)}`,
          ),
        ),
      });
    }
  }

  async #approve(request: ApprovalRequest): Promise<boolean> {
    try {
      return (await this.#options.approve?.(request)) ?? false;
    } catch {
      return false;
    }
  }

  async #delegateFor(
    item: Extract<WorkerToMain, { type: 'spawn.requested' }>,
  ): Promise<ActorResult[]> {
    const record = this.#records.get(item.actorId);
    if (record === undefined || !record.role.canDelegate) return [];
    const input: DelegateInput = { tasks: item.tasks };
    if (item.policy !== undefined) input.policy = item.policy;
    if (item.quorum !== undefined) input.quorum = item.quorum;
    return runDelegation(this, item.actorId, input);
  }

  #onOutcome(record: ActorRecord, outcome: ActorOutcome): void {
    if (record.state !== 'running') return;
    this.#release(record);
    record.addUsage(outcome.usage);
    const base: Finish = {
      final: outcome.final,
      steps: outcome.steps,
      stopReason: outcome.stopReason,
    };
    if (outcome.stopReason === 'final') {
      const parsed = parseRoleOutput(record.role, outcome.final);
      if (parsed.ok) this.#finish(record, 'completed', { ...base, output: parsed.output });
      else
        this.#finish(
          record,
          'failed',
          base,
          plainError(new TroupeError('model.bad_response', parsed.message)),
        );
      return;
    }
    if (record.stop !== undefined) {
      this.#finish(record, record.stop.status, base, record.stop.error);
      return;
    }
    switch (outcome.stopReason) {
      case 'cancelled':
        this.#finish(
          record,
          'cancelled',
          base,
          outcome.error ?? plainError(new TroupeError('cancelled', `${record.id} was cancelled.`)),
        );
        return;
      case 'max_steps':
        this.#finish(
          record,
          'failed',
          base,
          plainError(
            new TroupeError(
              'budget.exceeded',
              `${record.id} reached its step limit of ${record.role.maxSteps} model calls without a final answer.`,
            ),
          ),
        );
        return;
      case 'budget':
        this.#finish(
          record,
          'failed',
          base,
          plainError(new TroupeError('budget.exceeded', `${record.id} used up its token budget.`)),
        );
        return;
      case 'error':
        this.#failed(
          record,
          base,
          outcome.error ??
            plainError(new TroupeError('internal', 'The actor failed without an error.')),
        );
        return;
    }
  }

  #onHostDown(hostId: number, error: TroupeError): void {
    this.#load.delete(hostId);
    const cause = plainError(error);
    for (const record of this.#records.values()) {
      if (record.state !== 'running' || record.hostId !== hostId) continue;
      record.hostId = undefined;
      const base: Finish = { final: record.lastFinal, steps: 0, stopReason: 'error' };
      if (record.stop !== undefined)
        this.#finish(record, record.stop.status, base, record.stop.error);
      else this.#failed(record, base, cause);
    }
    this.#pump();
  }

  #onTransportError(error: TroupeError, fatal: boolean): void {
    if (!fatal) {
      this.#ingest({
        v: 1,
        ts: Date.now(),
        runId: this.runId,
        agentId: this.#rootId(),
        type: 'callback.error',
        callback: 'transport',
        error: plainError(error),
      });
      return;
    }
    this.#fatal = error;
    for (const record of this.#queue.splice(0)) {
      if (record.state === 'queued')
        this.#finish(
          record,
          'failed',
          { final: '', steps: 0, stopReason: 'error' },
          plainError(error),
        );
    }
  }

  #failed(record: ActorRecord, base: Finish, error: ReturnType<typeof plainError>): void {
    const decision = this.#supervisor.decide(
      record.role.retry,
      record.parentId,
      record.attempt,
      error,
    );
    if (decision.retry && !this.#closed && this.#budget.exceeded === undefined) {
      record.state = 'backoff';
      this.#emitFor(record.id, {
        type: 'agent.progress',
        note: `attempt ${record.attempt} failed (${error.message}); retrying in ${decision.delayMs} ms`,
      });
      record.backoff = setTimeout(() => {
        record.backoff = undefined;
        if (record.state !== 'backoff') return;
        record.state = 'queued';
        this.#queue.push(record);
        this.#pump();
      }, decision.delayMs);
      return;
    }
    const reason = decision.retry ? undefined : decision.reason;
    const final =
      reason === undefined ? error : { ...error, message: `${error.message}; ${reason}` };
    this.#finish(record, 'failed', base, final);
  }

  #finish(
    record: ActorRecord,
    status: AgentStatus,
    data: Finish,
    error?: ReturnType<typeof plainError>,
  ): void {
    if (record.state === 'finished') return;
    this.#release(record);
    const result: ActorResult = {
      agentId: record.id,
      role: record.role.name,
      status,
      final: data.final,
      usage: record.usage,
      steps: data.steps,
    };
    if (data.output !== undefined) result.output = data.output;
    if (error !== undefined && status !== 'completed') result.error = error;
    record.mailbox.close(`${record.id} has finished`);
    record.log.length = 0;
    this.#router.removeActor(record.id);
    this.#ledger.finish(record.id);
    this.#emitFor(record.id, {
      type: 'agent.finished',
      status,
      stopReason: data.stopReason,
      final: data.final,
      ...(result.error === undefined ? {} : { error: result.error }),
      usage: result.usage,
      steps: data.steps,
    });
    if (status === 'completed' && record.key !== undefined && this.#store !== undefined) {
      const parentKey = record.parentId === undefined ? '' : this.#node(record.parentId).key;
      try {
        this.#store.put(
          record.key,
          { role: record.role.name, task: record.task, parentKey },
          result,
        );
      } catch {
        // A result that cannot be stored only costs a re-run on resume.
      }
    }
    record.settle(
      result,
      new TroupeError('runtime.closed', `${record.id} finished before it read the message.`),
    );
    for (const child of this.#childrenOf(record.id))
      this.#cancel(child, `its parent ${record.id} finished`, 'cancelled');
  }

  #cancel(record: ActorRecord, reason: string, kind: 'cancelled' | 'timed_out' | 'budget'): void {
    if (record.state === 'finished') return;
    if (record.stop === undefined) {
      const error =
        kind === 'timed_out'
          ? new TroupeError('timeout', `${record.id} ${reason}.`)
          : kind === 'budget'
            ? new TroupeError('budget.exceeded', `${record.id} was stopped: ${reason}.`)
            : new TroupeError('cancelled', `${record.id} was cancelled: ${reason}.`);
      record.stop = {
        status: kind === 'timed_out' ? 'timed_out' : 'cancelled',
        error: plainError(error),
      };
    }
    const cascade = kind === 'budget' ? 'budget' : 'cancelled';
    for (const child of this.#childrenOf(record.id)) {
      this.#cancel(
        child,
        kind === 'budget' ? reason : `its parent ${record.id} was stopped`,
        cascade,
      );
    }
    if (record.state !== 'running' || record.hostId === undefined) {
      this.#finish(
        record,
        record.stop.status,
        { final: record.lastFinal, steps: 0, stopReason: 'cancelled' },
        record.stop.error,
      );
      return;
    }
    this.#transport.send(record.hostId, {
      type: 'actor.cancel',
      actorId: record.id,
      reason: record.stop.error.message,
    });
    record.grace ??= setTimeout(() => this.#forceStop(record), this.#graceMs);
  }

  // The last resort: the actor ignored its cancel, so its thread goes, and the pool replaces it.
  #forceStop(record: ActorRecord): void {
    record.grace = undefined;
    if (record.state !== 'running' || record.hostId === undefined || record.stop === undefined)
      return;
    const note = `it did not stop within ${this.#graceMs} ms, so its thread was stopped`;
    record.stop = {
      ...record.stop,
      error: { ...record.stop.error, message: `${record.stop.error.message} (${note})` },
    };
    this.#transport.terminate(
      record.hostId,
      `actor ${record.id} did not stop within ${this.#graceMs} ms after it was told to (${record.stop.status})`,
    );
  }

  #deliver(
    actorId: string,
    message: { messageId: string; content: string; channel: string; from: string },
  ): void {
    const record = this.#records.get(actorId);
    if (record === undefined || record.state === 'finished') return;
    record.delivered += 1;
    const item = { type: 'mailbox.deliver' as const, actorId, ...message };
    record.log.push(item);
    if (record.state === 'running' && record.hostId !== undefined)
      this.#transport.send(record.hostId, item);
  }

  #send(actorId: string, item: { type: 'channel.closed'; actorId: string; channel: string }): void {
    const record = this.#records.get(actorId);
    if (record?.state === 'running' && record.hostId !== undefined)
      this.#transport.send(record.hostId, item);
  }

  async #steer(record: ActorRecord, message: string): Promise<number> {
    if (record.state === 'finished') {
      throw new TroupeError(
        'runtime.closed',
        `${record.id} has finished; the message was not delivered.`,
      );
    }
    await record.mailbox.reserve();
    const messageId = `d${this.#nextMessage}`;
    this.#nextMessage += 1;
    const from = record.parentId ?? 'runtime';
    this.#emitFor(record.id, {
      type: 'message.sent',
      channel: 'direct',
      messageId,
      to: record.id,
      payload: message,
    });
    this.#deliver(record.id, { messageId, content: message, channel: 'direct', from });
    return record.delivered;
  }

  #ref(record: ActorRecord): AgentRef {
    return {
      id: record.id,
      role: record.role.name,
      result: record.result,
      send: async (message) => {
        await this.#steer(record, message);
      },
      ask: async (message, options = {}) => {
        const needed = await this.#steer(record, message);
        const answer = record.waitForTurn(needed);
        const timeoutMs = options.timeoutMs ?? 60_000;
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new TroupeError('timeout', `${record.id} did not answer within ${timeoutMs} ms.`),
              ),
            timeoutMs,
          );
        });
        try {
          return await Promise.race([answer, timeout]);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel: (reason = 'cancelled by its parent') => this.#cancel(record, reason, 'cancelled'),
    };
  }

  #checkBudget(agentId: string): void {
    const spent = this.#ledger.spent();
    for (const crossing of this.#budget.check({ ...spent, elapsedMs: this.elapsedMs })) {
      this.#emitFor(agentId, {
        type: crossing.kind === 'warning' ? 'budget.warning' : 'budget.exceeded',
        scope: 'tree',
        metric: crossing.metric,
        used: crossing.used,
        limit: crossing.limit,
      });
      if (crossing.kind === 'exceeded' && this.#budget.exceeded === crossing)
        this.#onExhausted(crossing);
    }
  }

  #onExhausted(crossing: BudgetCrossing): void {
    const reason = `the run's ${crossing.metric} budget is used up`;
    for (const record of [...this.#records.values()]) this.#cancel(record, reason, 'budget');
    for (const listener of this.#budgetListeners) {
      try {
        listener(crossing);
      } catch {
        // A listener's failure must not stop the others.
      }
    }
  }

  #emitFor(agentId: string, payload: EventPayload): void {
    const record = this.#records.get(agentId);
    const parentId = record?.parentId;
    const role = record?.role.name;
    this.bus.publish({
      v: 1,
      ts: Date.now(),
      runId: this.runId,
      agentId,
      ...(parentId === undefined ? {} : { parentId }),
      ...(role === undefined ? {} : { role }),
      ...payload,
    } as UnsequencedEvent);
  }
}

function modelName(spec: ModelSpec): string {
  return spec.provider === 'openai' || spec.provider === 'anthropic' ? spec.model : spec.provider;
}

function definedEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value;
  return out;
}

function budgetError(agentId: string, crossing: BudgetCrossing): TroupeError {
  return new TroupeError(
    'budget.exceeded',
    `${agentId} was not started: the run's ${crossing.metric} budget is used up.`,
  );
}

function reusedRef(id: string, stored: ActorResult): AgentRef {
  const result: ActorResult = { ...stored, agentId: id, reused: true };
  const finished = (): Promise<never> =>
    Promise.reject(
      new TroupeError(
        'runtime.closed',
        `${id} was reused from an earlier run; it takes no messages.`,
      ),
    );
  return {
    id,
    role: stored.role,
    result: Promise.resolve(result),
    send: finished,
    ask: finished,
    cancel: () => {},
  };
}

function refusedRef(role: string, error: TroupeError): AgentRef {
  const result: ActorResult = {
    agentId: '(not started)',
    role,
    status: 'failed',
    final: '',
    error: plainError(error),
    usage: { inputTokens: 0, outputTokens: 0 },
    steps: 0,
  };
  const refused = (): Promise<never> => Promise.reject(error);
  return {
    id: result.agentId,
    role,
    result: Promise.resolve(result),
    send: refused,
    ask: refused,
    cancel: () => {},
  };
}
