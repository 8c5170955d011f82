import type { CallAllowance } from '../agent/allowance.js';
import type { CompressionSetting } from '../agent/history.js';
import { readJournalLine } from '../agent/journal.js';
import { plainError, TroupeError } from '../errors.js';
import { EventBus, type Unsubscribe } from '../events/bus.js';
import { makeEvent } from '../events/envelope.js';
import { checkEvent } from '../events/event-check.js';
import type { EventPayload, EventSink } from '../events/schema.js';
import type { ModelSpec } from '../model/model.js';
import type { RoleAdaptation } from '../roles/adapt.js';
import type { AnyRole } from '../roles/role.js';
import { checkRoles } from '../roles/role-check.js';
import { RoleRegistry } from '../roles/role-registry.js';
import { ToolIndex } from '../roles/tool-index.js';
import type { ApprovalRequest, PermissionTier } from '../tools/tool.js';
import { humanDuration } from '../util/duration.js';
import { createRunId } from '../util/ids.js';
import { createRedactor } from '../util/redact.js';
import { ActorRecord, type AgentRef, type SpawnOptions } from './actors/actor.js';
import { createAgentRef, refusedRef } from './actors/actor-ref.js';
import { ActorTable } from './actors/actor-table.js';
import { Admission, modelName } from './actors/admission.js';
import { WorkerChildren } from './actors/children.js';
import { runDelegation } from './actors/delegation.js';
import { HostLink } from './actors/host-link.js';
import { ActorLifecycle } from './actors/lifecycle.js';
import { ResumeReplay } from './actors/resume-replay.js';
import { Scheduler } from './actors/scheduler.js';
import { Supervisor } from './actors/supervisor.js';
import { BudgetGuard } from './budget/budget-guard.js';
import type { BudgetCrossing } from './budget/tree-budget.js';
import { UsageLedger, type UsageTotals } from './budget/usage-ledger.js';
import { Mailbox } from './messaging/mailbox.js';
import { Router } from './messaging/router.js';
import { createPoolTransport, createToolPool, isolatesTools } from './pool-transport.js';
import type { Journal } from './resume/journal.js';
import { ResultStore } from './resume/result-store.js';
import { SpawnKeys } from './resume/spawn-keys.js';
import { type RuntimeOptions, validateRuntimeOptions } from './runtime-options.js';
import type { ToolPool } from './wire/tool-pool.js';

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
  readonly #roles: RoleRegistry;
  readonly #table = new ActorTable();
  readonly #router: Router;
  readonly #ledger: UsageLedger;
  readonly #guard: BudgetGuard;
  readonly #store: ResultStore | undefined;
  readonly #journal: Journal | undefined;
  // Above 0 while a batch from a host is taken in (HostLink.items).
  #batchDepth = 0;
  // Stable spawn keys, for stored results and the journal.
  readonly #keys: SpawnKeys | undefined;
  readonly #scheduler: Scheduler;
  readonly #lifecycle: ActorLifecycle;
  readonly #link: HostLink;
  readonly #tools: ToolIndex;
  // True once every role was checked against the tool modules too.
  #rolesChecked: boolean;
  readonly #children: WorkerChildren;
  readonly #admission: Admission;
  readonly #resume: ResumeReplay;
  readonly #graceMs: number;
  // User tool code runs here, started on the first pooled call.
  #toolPool: ToolPool | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #fatal: TroupeError | undefined;
  #nextMessage = 1;

  constructor(options: RuntimeOptions) {
    validateRuntimeOptions(options);
    this.#options = options;
    // Each event is validated once, where it is made: worker events in their
    // worker, main-thread events by `events` below; the bus adopts them unchecked.
    this.bus = options.bus ?? new EventBus();
    this.runId = options.runId ?? createRunId();
    this.#roles = new RoleRegistry(options.roles ?? [], options.grants);
    this.#graceMs = options.cancelGraceMs ?? 5000;
    this.#ledger = new UsageLedger(options.prices);
    this.#store =
      options.results === undefined
        ? undefined
        : new ResultStore({
            ...options.results,
            redact: createRedactor(options.env ?? process.env),
            // A transport that keeps results beyond this machine (NATS) gets each one too.
            mirror: options.transport?.storeResult?.bind(options.transport),
          });
    this.#journal = options.journal;
    this.#keys =
      this.#store !== undefined || this.#journal !== undefined ? new SpawnKeys() : undefined;
    this.#tools = new ToolIndex(options.toolModules ?? [], options.mcp);
    // Role mistakes fail here, before any model call; names only a tool module can have wait for checkRoles().
    const hasModules = (options.toolModules?.length ?? 0) > 0;
    checkRoles(this.#roles.all(), {
      grants: options.grants,
      userTools: hasModules ? undefined : new Map(),
      mcp: options.mcp,
      env: options.env,
    });
    this.#rolesChecked = !hasModules;
    this.#router = new Router({
      deliver: (actorId, message) => this.#deliver(actorId, message),
      close: (actorId, channel) => {
        const record = this.#table.get(actorId);
        if (record !== undefined)
          this.#scheduler.send(record, { type: 'channel.closed', actorId, channel });
      },
      sent: (from, channel, messageId, payload) =>
        this.#emit(from, { type: 'message.sent', channel, messageId, payload }),
    });
    this.#scheduler = new Scheduler(
      options.transport ?? createPoolTransport(this.runId, options),
      {
        items: (hostId, items) => {
          this.#batchDepth += 1;
          try {
            this.#link.items(hostId, items);
          } finally {
            this.#batchDepth -= 1;
            // What the batch journaled (the link flushes at its end; this covers one that threw).
            this.#journal?.flush();
          }
        },
        hostDown: (hostId, error) => {
          // The calls its actors had in flight are lost: charged their prompts, their room given back.
          for (const record of this.#table.records())
            if (record.hostId === hostId) this.#guard.reservations?.release(record.id);
          this.#link.hostDown(hostId);
          this.#toolPool?.hostDown(hostId);
          this.#lifecycle.hostDown(hostId, error);
        },
        hostUp: (hostId) => this.#toolPool?.hostUp(hostId),
        error: (error, fatal) => this.#onTransportError(error, fatal),
        closedFor: (actorId) => this.#router.closedFor(actorId),
        restarted: (actorId) => this.#router.restarted(actorId),
        // A first attempt has what the journal held when opened (a resume's); a retry, what the
        // attempts before it recorded too.
        journalFor: (record) => {
          const journal = this.#journal;
          if (record.key === undefined || journal === undefined) return undefined;
          return record.attempt <= 1 && journal.recorded !== undefined
            ? journal.recorded(record.key)
            : journal.entries(record.key);
        },
      },
      options.maxActorsPerThread ?? 5000,
      options.compression,
    );
    this.#lifecycle = new ActorLifecycle({
      table: this.#table,
      scheduler: this.#scheduler,
      router: this.#router,
      ledger: this.#ledger,
      store: this.#store,
      journal: this.#journal,
      // Inside a batch the link flushes at its end, before anything of it reaches the trace.
      flushJournal: () => {
        if (this.#batchDepth === 0) this.#journal?.flush();
      },
      supervisor: new Supervisor(),
      emit: (agentId, payload) => this.#emit(agentId, payload),
      graceMs: this.#graceMs,
      mayRetry: () =>
        !this.#closed && this.#guard.exceeded === undefined && this.#fatal === undefined,
    });
    this.#children = new WorkerChildren({
      spawnBatch: (parentId, tasks) => this.spawnBatch(parentId, tasks),
      mayDelegate: (actorId) => this.#table.get(actorId)?.role.canDelegate === true,
      roleNames: () => this.#roles.names(),
    });
    this.#link = new HostLink({
      bus: this.bus,
      runId: this.runId,
      table: this.#table,
      lifecycle: this.#lifecycle,
      router: this.#router,
      scheduler: this.#scheduler,
      approve: options.approve,
      delegate: (actorId, input) => runDelegation(this.#children, actorId, input),
      child: (actorId, request) => this.#children.answer(actorId, request),
      emit: (agentId, payload) => this.#emit(agentId, payload),
      toolCall: (request, hooks) => this.#pooled().call(request, hooks),
      journal: (actorId, record) => {
        const key = this.#table.get(actorId)?.key;
        const journal = this.#journal;
        if (key === undefined || journal === undefined || record === undefined) return;
        if (typeof record !== 'string') journal.append(key, record);
        else if (journal.appendLine !== undefined) journal.appendLine(key, record);
        else {
          const read = readJournalLine(record);
          if (read !== undefined) journal.append(key, read.entry);
        }
      },
      journalLines: (text) => {
        const journal = this.#journal;
        if (journal === undefined) return;
        if (journal.appendLines !== undefined) {
          journal.appendLines(text);
          return;
        }
        for (const line of text.split('\n')) {
          const read = line === '' ? undefined : readJournalLine(line);
          if (read !== undefined) journal.append(read.key, read.entry);
        }
      },
      flushJournal: () => this.#journal?.flush(),
      journalFailure: () => this.#journal?.failure?.message,
      journalDurable: () => this.#journal?.durable?.(),
      reserve: (request, signal) =>
        this.#guard.reservations?.reserve(request, signal) ??
        Promise.resolve({ ok: false, reason: 'This run keeps no token or cost budget.' }),
      settle: (reservation, outcome, actorId) =>
        this.#guard.reservations?.settle(reservation, outcome, actorId),
    });
    this.#guard = new BudgetGuard({
      limits: options.budget,
      ledger: this.#ledger,
      emit: (agentId, payload) => this.#emit(agentId, payload),
      exhaust: (crossing) => {
        // The wall clock makes every live actor time out; a spent token or cost budget stops them.
        const time = crossing.metric === 'time';
        const reason = time
          ? `timed out: the run's time limit of ${humanDuration(crossing.limit)} was reached`
          : `the run's ${crossing.metric} budget is used up`;
        this.#lifecycle.cancelAll(this.#table.live(), reason, time ? 'timed_out' : 'budget');
      },
      rootId: () => this.#table.firstRoot() ?? 'runtime',
    });
    this.#resume = new ResumeReplay({
      router: this.#router,
      emit: (agentId, payload) => this.#emit(agentId, payload),
    });
    this.#admission = new Admission({
      options,
      table: this.#table,
      ledger: this.#ledger,
      router: this.#router,
      children: this.#children,
      lifecycle: this.#lifecycle,
      scheduler: this.#scheduler,
      guard: this.#guard,
      tools: this.#tools,
      emit: (agentId, payload) => this.#emit(agentId, payload),
      closed: () => this.#closed,
      fatal: () => this.#fatal,
      // The tool threads start with the first actor that may call a user tool,
      // so its hosts have lanes to them before its first call. Hosts of a
      // transport that cannot move ports (worker nodes, with tool pools of
      // their own) get no lanes: this pool then starts with the first call
      // that comes to it, if one does.
      userTools: () => {
        const lanes = options.transport === undefined || options.transport.sendPorts !== undefined;
        if (isolatesTools(options) && lanes) this.#pooled().start();
      },
    });
    this.bus.on('model.response', (event) => {
      this.#ledger.record(event.agentId, event.usage);
      this.#guard.spent(event.agentId);
    });
    // The history summarizer's call is a model call too: its tokens count against the budget.
    this.bus.on('history.compressed', (event) => {
      if (event.usage === undefined) return;
      this.#ledger.record(event.agentId, event.usage);
      this.#guard.spent(event.agentId);
    });
    if (this.#guard.reserves) {
      // An agent that finished holds no room (a lost thread's calls never settle).
      this.bus.on('agent.finished', (event) => this.#guard.reservations?.release(event.agentId));
    }
  }

  /**
   * Where main-thread producers (the coordinator) put their events: each is
   * validated here (an invalid one becomes a callback.error), then adopted by
   * the bus without a second check.
   */
  readonly events: EventSink = {
    emit: (event) => {
      this.bus.adopt(checkEvent(event));
    },
  };

  // The tool pool, built on first use; local hosts get direct lanes to its threads.
  #pooled(): ToolPool {
    this.#toolPool ??= createToolPool(this.runId, this.#options, {
      hosts: () => this.#scheduler.hosts(),
      open: (hostId, lane) =>
        this.#scheduler.sendPorts(
          hostId,
          { type: 'tool.lane', thread: lane.thread, port: lane.port, state: lane.state },
          [lane.port],
        ),
      down: (hostId, item) => this.#scheduler.reply(hostId, item),
    });
    return this.#toolPool;
  }

  /**
   * Checks the roles against the user tool modules too (loading them once),
   * as construction checked everything else: throws a usage error naming
   * each unknown tool (with the nearest known name), each tier the run does
   * not grant (with the `--allow` fix), and so on. `runJob` calls it before
   * the coordinator's first model call; a no-op without tool modules.
   */
  async checkRoles(): Promise<void> {
    if (this.#rolesChecked) return;
    const userTools = await this.#tools.userTools();
    checkRoles(this.#roles.all(), {
      grants: this.#options.grants,
      userTools,
      mcp: this.#options.mcp,
      env: this.#options.env,
    });
    this.#rolesChecked = true;
  }

  /** The run's journal, when it keeps one. */
  get journal(): Journal | undefined {
    return this.#journal;
  }

  /** The stable key of an agent (its stored result's and journal's), or its id when the run keeps neither. */
  keyOf(agentId: string): string {
    return this.#table.node(agentId).key;
  }

  /** The model of roles that name none. */
  get defaultModel(): ModelSpec {
    return this.#options.model;
  }

  /** The run's history compression (RuntimeOptions.compression), for the coordinator. */
  get compression(): CompressionSetting | undefined {
    return this.#options.compression;
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
    return this.#roles.all();
  }

  /** Built-in tools roles run without because the run does not grant their tiers (see adaptRole). */
  get roleAdaptations(): readonly RoleAdaptation[] {
    return this.#roles.adaptations();
  }

  /** The role called `name`, if known. */
  role(name: string): AnyRole | undefined {
    return this.#roles.get(name);
  }

  /** The first hard limit of the tree budget that was reached, if any. */
  get budgetExceeded(): BudgetCrossing | undefined {
    return this.#guard.exceeded;
  }

  /**
   * Where an agent outside the pool (the coordinator) reserves room for each
   * model call in the tree budget; undefined without a token or cost limit.
   * `lastTurn` may use the share kept for the coordinator's last turn.
   */
  allowance(agentId: string, options: { lastTurn?: boolean } = {}): CallAllowance | undefined {
    // A main-thread agent is a root of the tree: the coordinator, whose last turn is kept room for.
    return this.#guard.allowance(agentId, { ...options, root: true });
  }

  /** Calls `listener` once when the tree budget's hard limit is reached. */
  onBudgetExceeded(listener: (crossing: BudgetCrossing) => void): Unsubscribe {
    return this.#guard.onExceeded(listener);
  }

  /** Wall time since the runtime was made, in milliseconds. */
  get elapsedMs(): number {
    return this.#guard.elapsedMs;
  }

  /** Totals of the whole run, or of one agent alone. Live: running agents count up to now. */
  usage(agentId?: string): UsageTotals {
    return agentId === undefined ? this.#ledger.total() : this.#ledger.self(agentId);
  }

  /** Totals of an agent and all its descendants. */
  subtreeUsage(agentId: string): UsageTotals {
    return this.#ledger.subtree(agentId);
  }

  /**
   * Registers an agent that runs outside the pool (the coordinator, in the
   * main thread) as a root of the tree: its usage is counted, its children
   * hang under it and are cancelled with `cancelChildren`.
   */
  registerRoot(agentId: string, options: { model: ModelSpec; task: string }): void {
    if (this.#table.has(agentId)) return;
    this.#table.addRoot(agentId, this.#keys?.next(agentId, options.task, '') ?? agentId);
    this.#ledger.register(agentId, undefined, modelName(options.model));
  }

  /** Cancels every live child of `agentId` (and their descendants). */
  cancelChildren(agentId: string, reason: string): void {
    for (const child of this.#table.liveChildren(agentId))
      this.#lifecycle.cancel(child, reason, 'cancelled');
  }

  /**
   * Cancels one agent and its descendants (the interactive view's `c`); for
   * a root such as the coordinator, its sub-agents. False when no such agent
   * is running.
   */
  cancel(agentId: string, reason: string): boolean {
    const record = this.#table.get(agentId);
    if (record === undefined) {
      if (!this.#table.has(agentId)) return false;
      const live = this.#table.liveChildren(agentId);
      this.cancelChildren(agentId, reason);
      return live.length > 0;
    }
    if (record.state === 'finished') return false;
    this.#lifecycle.cancel(record, reason, 'cancelled');
    return true;
  }

  /**
   * Starts the pool's threads now instead of at the first spawn, so their
   * start (a thread and its modules, ~100 ms of a cold process) overlaps
   * with what runs before it, such as the coordinator's first model call.
   * Idempotent; does nothing after close.
   */
  prestart(): void {
    if (!this.#closed) this.#scheduler.start();
  }

  /**
   * Spawns an actor of `role` on the pool. Whatever happens to the actor, the
   * ref's result says; this throws only `usage.invalid_role` for a role this
   * runtime does not know.
   */
  spawn(role: string | AnyRole, task: string, options: SpawnOptions = {}): AgentRef {
    const resolved = this.#roles.resolve(role);
    const parent = options.parent === undefined ? undefined : this.#table.node(options.parent);
    const fullTask =
      options.input === undefined
        ? task
        : `${task}\n\nInput:\n${JSON.stringify(options.input, null, 2)}`;
    const key = this.#keys?.next(resolved.name, fullTask, parent?.key ?? '');
    const id = this.#table.nextId(resolved.name);
    const stored = key === undefined ? undefined : this.#store?.get(key);
    // A finished result from an earlier run: no agent.spawned, no actor; what it published goes out again.
    if (stored !== undefined) return this.#resume.reuse(id, resolved, options.parent, stored);
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
    if (key !== undefined) {
      this.#journal?.note({
        kind: 'spawn',
        key,
        id,
        role: resolved.name,
        parentKey: parent?.key ?? '',
      });
    }
    this.#admission.admit(record, options);
    return createAgentRef(record, {
      steer: (target, message) => this.#steer(target, message),
      cancel: (target, reason) => this.#lifecycle.cancel(target, reason, 'cancelled'),
    });
  }

  /**
   * Spawns a batch under one parent, publishers before subscribers (so no
   * subscriber starts with its channel already closed); refs in task order.
   * Unknown roles become failed results instead of throwing.
   */
  spawnBatch(parentId: string, tasks: readonly { role: string; task: string }[]): AgentRef[] {
    const refs: AgentRef[] = new Array(tasks.length);
    for (const { task, index } of this.#roles.spawnOrder(tasks)) {
      refs[index] = this.#roles.has(task.role)
        ? this.spawn(task.role, task.task, { parent: parentId })
        : refusedRef(task.role, this.#roles.unknown(task.role));
    }
    return refs;
  }

  /**
   * Drains or stops everything and terminates the threads: live actors are
   * cancelled (their threads stopped after the grace period), every one
   * still gets its agent.finished, and no thread or timer is left behind.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    this.#guard.close();
    const live = this.#table.live();
    for (const record of live)
      this.#lifecycle.cancel(record, 'the runtime is closing', 'cancelled');
    const replays = this.#resume.pending();
    if (live.length > 0 || replays.length > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...live.map((record) => record.result), ...replays]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, this.#graceMs * 2);
        }),
      ]);
      clearTimeout(timer);
    }
    await this.#scheduler.close(this.#graceMs);
    await this.#toolPool?.close();
    const closed = plainError(
      new TroupeError('runtime.closed', 'The runtime closed before the actor finished.'),
    );
    for (const record of this.#table.live()) {
      this.#lifecycle.finish(
        record,
        'cancelled',
        { final: record.lastFinal, steps: 0, stopReason: 'cancelled' },
        closed,
      );
    }
  }

  #onTransportError(error: TroupeError, fatal: boolean): void {
    if (!fatal) {
      this.#emit(this.#table.firstRoot() ?? 'runtime', {
        type: 'callback.error',
        callback: 'transport',
        error: plainError(error),
      });
      return;
    }
    this.#fatal = error;
    for (const record of this.#scheduler.drain()) {
      this.#lifecycle.finish(
        record,
        'failed',
        { final: '', steps: 0, stopReason: 'error' },
        plainError(error),
      );
    }
  }

  #deliver(
    actorId: string,
    message: { messageId: string; content: string; channel: string; from: string },
  ): void {
    const record = this.#table.get(actorId);
    if (record === undefined || record.state === 'finished') return;
    record.delivered += 1;
    const item = { type: 'mailbox.deliver' as const, actorId, ...message };
    record.log.push(item);
    this.#scheduler.send(record, item);
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
    // The sender is the parent (who steers); an actor without one steers itself in the stream.
    this.#emit(record.parentId ?? record.id, {
      type: 'message.sent',
      channel: 'direct',
      messageId,
      to: record.id,
      payload: message,
    });
    this.#deliver(record.id, {
      messageId,
      content: message,
      channel: 'direct',
      from: record.parentId ?? 'runtime',
    });
    return record.delivered;
  }

  #emit(agentId: string, payload: EventPayload): void {
    const record = this.#table.get(agentId);
    const reused = record === undefined ? this.#resume.who(agentId) : undefined;
    const parentId = record?.parentId ?? reused?.parentId;
    const role = record?.role.name ?? reused?.role;
    this.events.emit(makeEvent({ runId: this.runId, agentId, parentId, role }, payload));
  }
}
