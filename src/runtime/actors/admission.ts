import { errorMessage, plainError, type SerializedError, TroupeError } from '../../errors.js';
import type { EventPayload } from '../../events/schema.js';
import { describeModel, type ModelSpec } from '../../model/model.js';
import type { ToolIndex } from '../../roles/tool-index.js';
import { isBuiltinToolName } from '../../tools/builtin-names.js';
import type { PermissionTier } from '../../tools/tool.js';
import type { BudgetGuard } from '../budget/budget-guard.js';
import type { UsageLedger } from '../budget/usage-ledger.js';
import type { Router } from '../messaging/router.js';
import type { ActorRecord, SpawnOptions } from './actor.js';
import type { ActorTable } from './actor-table.js';
import type { WorkerChildren } from './children.js';
import type { ActorLifecycle } from './lifecycle.js';
import type { Scheduler } from './scheduler.js';

/** What admission needs from the runtime. */
/** The run-wide limits admission decides by (a subset of the runtime's options). */
export interface AdmissionLimits {
  readonly grants: readonly PermissionTier[];
  /** Deepest allowed actor, the coordinator at depth 0 (default 3). */
  readonly maxDepth?: number | undefined;
  /** Spawns allowed to wait for a thread at once (default 100,000). */
  readonly maxQueued?: number | undefined;
}

export interface AdmissionDeps {
  options: AdmissionLimits;
  table: ActorTable;
  ledger: UsageLedger;
  router: Router;
  children: WorkerChildren;
  lifecycle: ActorLifecycle;
  scheduler: Scheduler;
  guard: BudgetGuard;
  tools: ToolIndex;
  emit(agentId: string, payload: EventPayload): void;
  /** Whether the runtime is closing or closed. */
  closed(): boolean;
  /** The transport's fatal error, once it had one. */
  fatal(): TroupeError | undefined;
  /** An actor whose role names a tool that is not built in is about to be placed (optional). */
  userTools?(): void;
}

/**
 * Takes a new actor record into the run: tree, ledger, `agent.spawned`,
 * channels; then refuses it (closed runtime, depth, budget, full queue),
 * or arms its timeout and abort signal, checks its tools and queues it.
 */
export class Admission {
  readonly #deps: AdmissionDeps;

  constructor(deps: AdmissionDeps) {
    this.#deps = deps;
  }

  /** Admits `record`; whatever happens to it, its result says. */
  admit(record: ActorRecord, options: SpawnOptions): void {
    const { table, ledger, router, children, lifecycle, tools } = this.#deps;
    const { id, role } = record;
    table.add(record);
    ledger.register(id, record.parentId, modelName(record.model));
    this.#deps.emit(id, {
      type: 'agent.spawned',
      task: record.task,
      model: describeModel(record.model),
      depth: record.depth,
    });
    router.addActor(id, role.publishes, role.subscribes, record.mailbox);
    // The sub-agents a delegating actor started are forgotten with it (they are cancelled with it).
    if (role.canDelegate) void record.result.then(() => children.forget(id));
    const refusal = this.#refusal(record);
    if (refusal !== undefined) {
      lifecycle.finish(
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
        () => lifecycle.cancel(record, `timed out after ${timeoutMs} ms`, 'timed_out'),
        timeoutMs,
      );
    }
    const signal = options.signal;
    if (signal !== undefined) {
      const onAbort = (): void =>
        lifecycle.cancel(record, `aborted (${errorMessage(signal.reason)})`, 'cancelled');
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
      record.detachSignal = () => signal.removeEventListener('abort', onAbort);
    }
    const checked = tools.check(role, this.#deps.options.grants);
    if (checked instanceof Promise) void checked.then((error) => this.#afterCheck(record, error));
    else this.#afterCheck(record, checked);
  }

  // A role whose tools are unknown or need an ungranted tier fails here, before it runs.
  #afterCheck(record: ActorRecord, error: TroupeError | undefined): void {
    if (record.state !== 'queued') return;
    if (error === undefined) {
      if (!record.role.tools.every(isBuiltinToolName)) this.#deps.userTools?.();
      this.#deps.scheduler.enqueue(record);
    } else
      this.#deps.lifecycle.finish(
        record,
        'failed',
        { final: '', steps: 0, stopReason: 'error' },
        plainError(error),
      );
  }

  #refusal(
    record: ActorRecord,
  ): { status: 'failed' | 'cancelled'; error: SerializedError } | undefined {
    const { options, guard, scheduler } = this.#deps;
    const refuse = (message: string): { status: 'failed'; error: SerializedError } => ({
      status: 'failed',
      error: plainError(
        new TroupeError('runtime.spawn_refused', `${record.id} was not started: ${message}.`),
      ),
    });
    if (this.#deps.closed())
      return {
        status: 'failed',
        error: plainError(
          new TroupeError('runtime.closed', `${record.id} was not started: the runtime is closed.`),
        ),
      };
    const fatal = this.#deps.fatal();
    if (fatal !== undefined) return { status: 'failed', error: plainError(fatal) };
    const maxDepth = options.maxDepth ?? 3;
    if (record.depth > maxDepth)
      return refuse(`delegation depth ${record.depth} is past the limit of ${maxDepth}`);
    const exceeded = guard.exceeded;
    if (exceeded !== undefined) {
      const error = new TroupeError(
        'budget.exceeded',
        `${record.id} was not started: the run's ${exceeded.metric} budget is used up.`,
      );
      return { status: 'cancelled', error: plainError(error) };
    }
    const maxQueued = options.maxQueued ?? 100_000;
    if (scheduler.overflow >= maxQueued)
      return refuse(`${maxQueued} spawns already wait for a place`);
    return undefined;
  }
}

/** The name usage is priced and reported under: the model for API providers, else the provider. */
export function modelName(spec: ModelSpec): string {
  return spec.provider === 'openai' || spec.provider === 'anthropic' ? spec.model : spec.provider;
}
