import { plainError, type SerializedError, TroupeError } from '../../errors.js';
import type { AgentStatus, AgentStopReason, EventPayload } from '../../events/schema.js';
import { parseRoleOutput } from '../../roles/role.js';
import type { UsageLedger } from '../budget/usage-ledger.js';
import type { Router } from '../messaging/router.js';
import type { Journal } from '../resume/journal.js';
import type { ResultStore } from '../resume/result-store.js';
import type { BlockedHost } from '../wire/local-transport.js';
import type { ActorOutcome } from '../wire/protocol.js';
import type { ActorRecord, ActorResult } from './actor.js';
import type { ActorTable } from './actor-table.js';
import type { Scheduler } from './scheduler.js';
import type { Supervisor } from './supervisor.js';

/** How an actor ends: what goes into its result and its agent.finished. */
export interface Ending {
  final: string;
  steps: number;
  stopReason: AgentStopReason;
  output?: unknown;
}

/** Why the runtime stops an actor: a cancel, its timeout, or the tree budget. */
export type StopKind = 'cancelled' | 'timed_out' | 'budget';

/** What the lifecycle needs from the runtime. */
export interface LifecycleDeps {
  table: ActorTable;
  scheduler: Scheduler;
  router: Router;
  ledger: UsageLedger;
  store: ResultStore | undefined;
  journal: Journal | undefined;
  /**
   * Makes the journal's records durable before an agent.finished can reach
   * the trace: at once, or, while a batch from a host is taken in, at that
   * batch's end (one write for every agent that finished in it).
   */
  flushJournal(): void;
  supervisor: Supervisor;
  emit(agentId: string, payload: EventPayload): void;
  /** How long a cancelled actor gets before its thread is stopped, in milliseconds. */
  graceMs: number;
  /** False once retrying makes no sense (closing, or the budget is spent). */
  mayRetry(): boolean;
}

/**
 * The terminal half of an actor's life, in the main thread: attempt
 * outcomes, thread losses, retries, cancellation (cooperative first, the
 * thread only after the grace period) and the one agent.finished every actor
 * gets. `finish` is the only way an actor ends, and it runs once.
 */
export class ActorLifecycle {
  readonly #deps: LifecycleDeps;

  constructor(deps: LifecycleDeps) {
    this.#deps = deps;
  }

  /** The end of one attempt, as its host reported it. */
  outcome(record: ActorRecord, outcome: ActorOutcome): void {
    if (record.state !== 'running') return;
    this.#deps.scheduler.release(record);
    record.addUsage(outcome.usage);
    // The last run's turn: it answers an `ask` the actor read in it.
    if (outcome.stopReason === 'final') record.turn(outcome.final);
    const ending: Ending = {
      final: outcome.final,
      steps: outcome.steps,
      stopReason: outcome.stopReason,
    };
    if (outcome.stopReason === 'final') {
      const parsed = parseRoleOutput(record.role, outcome.final);
      if (parsed.ok) this.finish(record, 'completed', { ...ending, output: parsed.output });
      else
        this.finish(
          record,
          'failed',
          ending,
          plainError(new TroupeError('model.bad_response', parsed.message)),
        );
      return;
    }
    if (record.stop !== undefined) {
      this.finish(record, record.stop.status, ending, record.stop.error);
      return;
    }
    switch (outcome.stopReason) {
      case 'cancelled':
        this.finish(record, 'cancelled', ending, outcome.error ?? stopped(record.id, 'cancelled'));
        return;
      case 'max_steps':
        this.finish(
          record,
          'failed',
          ending,
          plainError(
            new TroupeError(
              'budget.exceeded',
              `${record.id} reached its step limit of ${record.role.maxSteps} model calls without a final answer.`,
            ),
          ),
        );
        return;
      case 'budget':
        this.finish(
          record,
          'failed',
          ending,
          plainError(new TroupeError('budget.exceeded', `${record.id} used up its token budget.`)),
        );
        return;
      case 'error':
        this.failed(
          record,
          ending,
          outcome.error ??
            plainError(new TroupeError('internal', `${record.id} failed without an error.`)),
        );
        return;
    }
  }

  /** A host is gone: each of its actors failed with the cause (and may be retried). */
  hostDown(hostId: number, error: TroupeError): void {
    const cause = plainError(error);
    // Set when the watchdog stopped the thread because it was blocked (see LocalTransport).
    const blocked = error.details?.['blocked'] as BlockedHost | undefined;
    for (const record of this.#deps.table.records()) {
      if (record.state !== 'running' || record.hostId !== hostId) continue;
      record.hostId = undefined;
      const ending: Ending = { final: record.lastFinal, steps: 0, stopReason: 'error' };
      if (record.stop !== undefined)
        this.finish(record, record.stop.status, ending, record.stop.error);
      else if (blocked?.culprit?.actorId === record.id) {
        // The culprit pays: not transient, since its tool would block the next thread too.
        this.failed(record, ending, blockedCulprit(record.id, blocked));
      } else if (
        blocked !== undefined &&
        blocked.culprit === undefined &&
        ++record.frozen >= MAX_UNNAMED_FREEZES
      ) {
        // Nobody could be named: every actor of the thread is restarted, and an
        // actor that was on this many frozen threads is taken for the cause.
        this.failed(record, ending, unnamedFreezes(record.id, record.frozen, blocked));
      } else if (error.details?.['stopped'] === true && this.#deps.mayRetry()) {
        // The thread was stopped for another actor: this one is a victim, restarted
        // at once and charged to no restart limit (the one stopped is the culprit).
        this.#deps.emit(record.id, {
          type: 'agent.progress',
          note: `attempt ${record.attempt} lost its thread (${error.message}); retrying at once, not counted against its restart limit`,
        });
        this.#orphan(record);
        record.state = 'queued';
        this.#deps.scheduler.enqueue(record);
      } else this.failed(record, ending, cause);
    }
  }

  /** A failed attempt: retried when the role's policy and the supervisor allow it, else the end. */
  failed(record: ActorRecord, ending: Ending, error: SerializedError): void {
    const decision = this.#deps.supervisor.decide(
      record.role.retry,
      record.parentId,
      record.attempt,
      error,
      record.id,
    );
    if (decision.retry && this.#deps.mayRetry()) {
      this.#orphan(record);
      record.state = 'backoff';
      this.#deps.emit(record.id, {
        type: 'agent.progress',
        note: `attempt ${record.attempt} failed (${error.message}); retrying in ${decision.delayMs} ms`,
      });
      record.backoff = setTimeout(() => {
        record.backoff = undefined;
        if (record.state !== 'backoff') return;
        // The transport may have failed for good while the retry waited: no place will come.
        if (!this.#deps.mayRetry()) {
          this.finish(record, 'failed', ending, error);
          return;
        }
        record.state = 'queued';
        this.#deps.scheduler.enqueue(record);
      }, decision.delayMs);
      return;
    }
    const reason = decision.retry ? undefined : decision.reason;
    this.finish(
      record,
      'failed',
      ending,
      reason === undefined ? error : { ...error, message: `${error.message}; ${reason}` },
    );
  }

  // A restarted attempt starts from its task: the children of the attempt
  // that failed would work for nobody (and the new one starts its own), so
  // they are cancelled first.
  #orphan(record: ActorRecord): void {
    for (const child of this.#deps.table.liveChildren(record.id))
      this.cancel(
        child,
        `its parent ${record.id} restarted after attempt ${record.attempt}`,
        'cancelled',
      );
  }

  /** Ends an actor: its one agent.finished, its result, its channels, and its live children cancelled. */
  finish(record: ActorRecord, status: AgentStatus, ending: Ending, error?: SerializedError): void {
    if (record.state === 'finished') return;
    const { scheduler, router, ledger, store, table } = this.#deps;
    scheduler.release(record);
    const result: ActorResult = {
      agentId: record.id,
      role: record.role.name,
      status,
      final: ending.final,
      usage: record.usage,
      steps: ending.steps,
    };
    if (ending.output !== undefined) result.output = ending.output;
    if (error !== undefined && status !== 'completed') result.error = error;
    record.mailbox.close(`${record.id} has finished`);
    record.log.length = 0;
    const published = router.removeActor(record.id);
    ledger.finish(record.id);
    // Stored before agent.finished goes out: the trace flushes at that event,
    // so a run killed after it shows an agent's end always has its result on disk.
    if (status === 'completed' && record.key !== undefined && store !== undefined) {
      const parentKey = record.parentId === undefined ? '' : table.node(record.parentId).key;
      try {
        store.put(
          record.key,
          { role: record.role.name, task: record.task, parentKey },
          result,
          published,
        );
      } catch {
        // A result that cannot be stored only costs a re-run on resume.
      }
    }
    const { journal } = this.#deps;
    if (journal !== undefined && record.key !== undefined) {
      journal.note({ kind: 'finish', key: record.key, id: record.id, status });
      // A completed actor comes back from its stored result; its steps are not needed again.
      if (status === 'completed') journal.release(record.key);
      // The trace flushes at agent.finished: the journal is written first.
      this.#deps.flushJournal();
    }
    this.#deps.emit(record.id, {
      type: 'agent.finished',
      status,
      stopReason: ending.stopReason,
      final: ending.final,
      ...(result.error === undefined ? {} : { error: result.error }),
      usage: result.usage,
      steps: ending.steps,
      ...(record.attempt > 1 ? { attempts: record.attempt } : {}),
    });
    record.settle(
      result,
      () => new TroupeError('runtime.closed', `${record.id} finished before it read the message.`),
    );
    for (const child of table.liveChildren(record.id))
      this.cancel(child, `its parent ${record.id} finished`, 'cancelled');
  }

  /** Stops every actor in `records` for one tree-wide reason: each ends with that kind, not as a child of a stopped parent. */
  cancelAll(records: readonly ActorRecord[], reason: string, kind: StopKind): void {
    for (const record of records)
      if (record.state !== 'finished') record.stop ??= stopOrder(record.id, reason, kind);
    for (const record of records) this.cancel(record, reason, kind);
  }

  /**
   * Stops an actor and its descendants. Queued or waiting actors end at
   * once; a running one is told to stop (its Agent ends at its next await)
   * and, if it has not within the grace period, its thread is stopped.
   */
  cancel(record: ActorRecord, reason: string, kind: StopKind): void {
    if (record.state === 'finished') return;
    record.stop ??= stopOrder(record.id, reason, kind);
    for (const child of this.#deps.table.liveChildren(record.id)) {
      this.cancel(
        child,
        kind === 'budget' ? reason : `its parent ${record.id} was stopped`,
        kind === 'budget' ? 'budget' : 'cancelled',
      );
    }
    const stop = record.stop;
    if (
      !this.#deps.scheduler.send(record, {
        type: 'actor.cancel',
        actorId: record.id,
        reason: stop.error.message,
      })
    ) {
      this.finish(
        record,
        stop.status,
        { final: record.lastFinal, steps: 0, stopReason: 'cancelled' },
        stop.error,
      );
      return;
    }
    record.grace ??= setTimeout(() => this.#forceStop(record), this.#deps.graceMs);
  }

  // The last resort: the actor ignored its cancel, so its thread goes (and
  // every actor on it fails with that reason); the pool replaces the thread.
  #forceStop(record: ActorRecord): void {
    record.grace = undefined;
    const stop = record.stop;
    if (record.state !== 'running' || stop === undefined) return;
    const graceMs = this.#deps.graceMs;
    record.stop = {
      ...stop,
      error: {
        ...stop.error,
        message: `${stop.error.message} (it did not stop within ${graceMs} ms, so its thread was stopped)`,
      },
    };
    this.#deps.scheduler.terminate(
      record,
      `actor ${record.id} did not stop within ${graceMs} ms after it was told to (${stop.status})`,
    );
  }
}

function stopOrder(id: string, reason: string, kind: StopKind): NonNullable<ActorRecord['stop']> {
  if (kind === 'timed_out') {
    return {
      status: 'timed_out',
      error: plainError(new TroupeError('timeout', `${id} ${reason}.`)),
    };
  }
  if (kind === 'budget') {
    return {
      status: 'cancelled',
      error: plainError(new TroupeError('budget.exceeded', `${id} was stopped: ${reason}.`)),
    };
  }
  return { status: 'cancelled', error: stopped(id, reason) };
}

function stopped(id: string, reason: string): SerializedError {
  return plainError(new TroupeError('cancelled', `${id} was cancelled: ${reason}.`));
}

// Frozen threads with no culprit named that an actor may be on before it is taken for the cause.
const MAX_UNNAMED_FREEZES = 3;

function blockedCulprit(actorId: string, blocked: BlockedHost): SerializedError {
  const tool = blocked.culprit?.tool ?? 'tool';
  return plainError(
    new TroupeError(
      'tool.timeout',
      `stopped because ${actorId}'s tool \`${tool}\` blocked its thread for ${seconds(blocked.blockedMs)} s (the thread was stopped; its other actors were restarted). Give the tool smaller input or fix it; trusted tools that can run long belong on the tool pool (toolIsolation 'pool').`,
      { details: { tool, blockedMs: blocked.blockedMs } },
    ),
  );
}

function unnamedFreezes(actorId: string, count: number, blocked: BlockedHost): SerializedError {
  return plainError(
    new TroupeError(
      'timeout',
      `stopped because ${actorId} was on ${count} threads that froze (the last for ${seconds(blocked.blockedMs)} s) while no tool call ran, so it is taken for the cause.`,
      { details: { freezes: count, blockedMs: blocked.blockedMs } },
    ),
  );
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}
