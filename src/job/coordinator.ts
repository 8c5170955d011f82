import { Agent, type AgentResult } from '../agent/agent.js';
import { type CompressionSetting, compressionFor, mergeCompression } from '../agent/history.js';
import { type SerializedError, TroupeError } from '../errors.js';
import { makeEvent } from '../events/envelope.js';
import type { EventPayload, RunStatus } from '../events/schema.js';
import { createModel, describeModel, type Model, type ModelSpec } from '../model/model.js';
import { addUsage, type Usage } from '../model/types.js';
import { formatDelegationResults } from '../roles/delegation-digest.js';
import { type Delegator, delegationTools } from '../roles/delegation-tools.js';
import type { RetryPolicy } from '../roles/role.js';
import type { ActorResult, AgentRef } from '../runtime/actors/actor.js';
import { sendToChild, waitForChildren } from '../runtime/actors/children.js';
import { runDelegation } from '../runtime/actors/delegation.js';
import { agentJournal } from '../runtime/resume/journal.js';
import type { Runtime } from '../runtime/runtime.js';
import { listDirTool } from '../tools/builtin/list-dir.js';
import { readFileTool } from '../tools/builtin/read-file.js';
import { ToolRegistry } from '../tools/registry.js';
import type { AnyTool } from '../tools/tool.js';
import { decideRunStatus, type RunOutcomeFacts, runError } from './run-status.js';
import { runSupervised } from './supervised-run.js';

/** The coordinator's agent id, in every event it emits. */
export const COORDINATOR_ID = 'coordinator';

/** How the coordinator is built. */
export interface CoordinatorOptions {
  /** Its model (default the runtime's). */
  model?: ModelSpec | undefined;
  /** Replaces the default system prompt. */
  system?: string | undefined;
  /** Model calls per run (default 20). */
  maxSteps?: number | undefined;
  /** Roles it may delegate to (default every role of the runtime). */
  roles?: readonly string[] | undefined;
  /** Without delegation tools: the last turn after the tree budget ran out. */
  delegation?: boolean | undefined;
  /** Stream replies (default true). */
  stream?: boolean | undefined;
  /**
   * How the coordinator's transient failures are retried, from its history,
   * with the same knobs as a role's (default DEFAULT_RETRY); `'fail_fast'` never retries.
   */
  retry?: RetryPolicy | 'fail_fast' | undefined;
  /** The coordinator's journal key (runJob sets it when the runtime keeps a journal). */
  journalKey?: string | undefined;
  /** Its history compression, field by field over the runtime's (default the runtime's). */
  compression?: CompressionSetting | undefined;
}

/** The sub-agents a coordinator started, shared between its turns. */
export class CoordinatorState {
  readonly refs = new Map<string, AgentRef>();
  readonly results = new Map<string, ActorResult>();
  /** What each was asked: a failure redone by a later sub-agent that completed is not held against the run. */
  readonly tasks = new Map<string, string>();
  /** Sub-agents the run does not depend on: stopped by an explicit policy or by the coordinator's choice. */
  readonly excused = new Set<string>();
  /** Whether the coordinator was told that sub-agents it started were still running. */
  toldRunning = false;

  /** Keeps a ref and its result once it comes. */
  track(ref: AgentRef, task?: { role: string; task: string }): void {
    this.refs.set(ref.id, ref);
    if (task !== undefined) this.tasks.set(ref.id, `${task.role}\u0000${task.task}`);
    void ref.result.then((result) => this.results.set(ref.id, result));
  }

  /** Ids of sub-agents started and not finished yet. */
  running(): string[] {
    return [...this.refs.keys()].filter((id) => !this.results.has(id));
  }

  /** The results the run depended on (see RunStatus): all but the excused and the redone. */
  depended(): ActorResult[] {
    const results = [...this.results.values()];
    const done = new Set(
      results
        .filter((result) => result.status === 'completed')
        .map((result) => this.tasks.get(result.agentId)),
    );
    return results.filter(
      (result) =>
        !this.excused.has(result.agentId) &&
        (result.status === 'completed' || !done.has(this.tasks.get(result.agentId))),
    );
  }

  /**
   * Asked before the coordinator's answer is accepted: sub-agents still
   * running get it told so, once; answering again cancels them, by its choice.
   */
  beforeFinal(): string | undefined {
    const running = this.running();
    if (running.length === 0) return undefined;
    if (this.toldRunning) {
      for (const id of running) this.excused.add(id);
      return undefined;
    }
    this.toldRunning = true;
    return `${running.length} sub-agent${running.length === 1 ? '' : 's'} you started ${running.length === 1 ? 'is' : 'are'} still running: ${running.join(', ')}. Collect ${running.length === 1 ? 'its result' : 'their results'} with wait_agents before you answer, or give your final answer again to cancel ${running.length === 1 ? 'it' : 'them'}.`;
  }
}

/**
 * The coordinator: an Agent in the main thread whose tools delegate to the
 * runtime's actors (`delegate`, `spawn_agent`, `wait_agents`,
 * `send_message`), plus read tools to see the workspace. Its events go to
 * the runtime's bus as agent `coordinator`.
 *
 * @example
 * const coordinator = createCoordinator(runtime);
 * const { final } = await coordinator.run('Compare the notes in docs/');
 */
export function createCoordinator(
  runtime: Runtime,
  options: CoordinatorOptions = {},
  state: CoordinatorState = new CoordinatorState(),
): Agent {
  return buildCoordinator(
    runtime,
    options,
    state,
    createModel(options.model ?? runtime.defaultModel, runtime.toolSettings.env),
  );
}

// One model instance serves the coordinator's turns, its last turn included.
function buildCoordinator(
  runtime: Runtime,
  options: CoordinatorOptions,
  state: CoordinatorState,
  model: Model,
  lastTurn = false,
): Agent {
  // In a budgeted run each call reserves its room; the last turn may use the share kept for it.
  const allowance = runtime.allowance(COORDINATOR_ID, { lastTurn });
  const names = options.roles ?? runtime.roles.map((role) => role.name);
  const settings = runtime.toolSettings;
  // The two built-ins it reads the workspace with, not the whole catalogue (whose tools it never runs).
  const read: AnyTool[] = [listDirTool, readFileTool];
  const tools: AnyTool[] =
    options.delegation === false ? read : [...delegationToolsFor(runtime, names, state), ...read];
  return new Agent({
    name: COORDINATOR_ID,
    agentId: COORDINATOR_ID,
    role: COORDINATOR_ID,
    runId: runtime.runId,
    model,
    tools: new ToolRegistry(tools),
    system: options.system ?? coordinatorPrompt(runtime, names),
    maxSteps: options.maxSteps ?? 20,
    events: runtime.events,
    // On by default for a model whose context window is known, like every actor's.
    compression: compressionFor(
      mergeCompression(runtime.compression, options.compression),
      model.spec,
    ),
    ...(allowance === undefined ? {} : { allowance }),
    beforeFinal: () => state.beforeFinal(),
    ...(runtime.journal === undefined || options.journalKey === undefined
      ? {}
      : { journal: agentJournal(runtime.journal, options.journalKey) }),
    ...(options.stream === undefined ? {} : { stream: options.stream }),
    toolContext: {
      workspace: settings.workspace,
      grants: settings.grants,
      // The coordinator writes nothing itself; delegate keeps its fan-outs' whole results there.
      ...(settings.outDir === undefined ? {} : { outputDir: settings.outDir }),
      ...(settings.env === undefined ? {} : { env: settings.env }),
      ...(settings.approve === undefined ? {} : { approve: settings.approve }),
    },
  });
}

function delegationToolsFor(
  runtime: Runtime,
  names: readonly string[],
  state: CoordinatorState,
): AnyTool[] {
  const spawner = {
    spawnBatch: (parentId: string, tasks: readonly { role: string; task: string }[]) => {
      const refs = runtime.spawnBatch(parentId, tasks);
      refs.forEach((ref, index) => {
        state.track(ref, tasks[index]);
      });
      return refs;
    },
  };
  // The coordinator runs its delegation directly on the runtime; worker
  // actors get the same four tools over a round trip (runtime/host).
  const delegator: Delegator = {
    delegate: async (callerId, input, signal) => {
      const results = await runDelegation(spawner, callerId, input, signal);
      // Sub-agents a quorum or fail-fast policy stopped were stopped on purpose.
      if (input.policy === 'quorum' || input.policy === 'fail_fast') {
        for (const result of results)
          if (result.status === 'cancelled') state.excused.add(result.agentId);
      }
      return results;
    },
    spawn: async (callerId, role, task) => {
      const [ref] = spawner.spawnBatch(callerId, [{ role, task }]);
      if (ref === undefined) throw new TroupeError('internal', 'Nothing was started.');
      return ref.id;
    },
    wait: (_callerId, ids, signal) => waitForChildren(state.refs, ids, signal),
    send: (_callerId, agentId, message) => sendToChild(state.refs, agentId, message),
  };
  return delegationTools(delegator, {
    roles: names,
    delegateDescription:
      'Run sub-agents in parallel and get every result back. Put researchers and the analyst in the same call: the analyst reads findings while researchers work. Failures come back beside the results, with their reason.',
  });
}

function coordinatorPrompt(runtime: Runtime, names: readonly string[]): string {
  const roles = names
    .map((name) => runtime.role(name))
    .filter((role) => role !== undefined)
    .map((role) => `- ${role.name}: ${role.description}`)
    .join('\n');
  return [
    'You are the coordinator of a team of AI agents. You split the task into parts, hand them to sub-agents that work in parallel, and write the final answer from their results.',
    `Sub-agent roles:\n${roles}`,
    'How to work:',
    '1. Look at the workspace first (list_dir, read_file) so your tasks name real files.',
    '2. Call delegate once with all the parallel work: give each researcher a distinct part, and include the analyst in the same call so it reads findings as they arrive. Each task must be self-contained: the sub-agent sees nothing but its task.',
    '3. When the analysis is back, delegate the report to the reporter with the analysis in its task.',
    '4. Some sub-agents may fail; their reasons come back beside the other results. Work with what succeeded, retry once if it matters, and say what is missing.',
    'Finish with a short final answer: what was done, the main conclusions and where the report is.',
  ].join('\n\n');
}

/** What `runJob` takes. */
export interface JobOptions extends CoordinatorOptions {
  task: string;
  runtime: Runtime;
  /** Aborting it cancels the coordinator and every sub-agent (status `cancelled`). */
  signal?: AbortSignal | undefined;
}

/** What a job came to. */
export interface JobResult {
  runId: string;
  status: RunStatus;
  final: string;
  /** Tokens of the whole tree. */
  usage: Usage;
  costUsd: number;
  /** Set when the run did not complete: the message, no stack. */
  error?: Pick<SerializedError, 'name' | 'code' | 'message'> | undefined;
  /** What each sub-agent came to, by id. */
  results: ReadonlyMap<string, ActorResult>;
}

/**
 * Runs a whole job: the coordinator in the main thread, its sub-agents on
 * the runtime. Emits run.started, the coordinator's agent.spawned and
 * agent.finished, and run.finished. When the tree budget runs out, the
 * sub-agents are stopped and the coordinator gets one last turn, without
 * delegation tools, to report with what it has (status `budget`).
 * Resolves, never rejects; the runtime stays open (close it yourself).
 *
 * @example
 * const job = await runJob({ task: 'Compare the notes in docs/', runtime });
 */
export async function runJob(options: JobOptions): Promise<JobResult> {
  const { runtime, task, signal } = options;
  const spec = options.model ?? runtime.defaultModel;
  const emit = (payload: EventPayload): void => {
    runtime.events.emit(
      makeEvent({ runId: runtime.runId, agentId: COORDINATOR_ID, role: COORDINATOR_ID }, payload),
    );
  };
  // Role mistakes (a tool module's names among them) fail before the first model call.
  await runtime.checkRoles();
  runtime.registerRoot(COORDINATOR_ID, { model: spec, task });
  emit({ type: 'run.started', task });
  emit({ type: 'agent.spawned', task, model: describeModel(spec), depth: 0 });
  const usable = options.roles ?? runtime.roles.map((role) => role.name);
  for (const adaptation of runtime.roleAdaptations) {
    if (!usable.includes(adaptation.role)) continue;
    emit({
      type: 'role.adapted',
      name: adaptation.role,
      dropped: adaptation.dropped,
      tiers: adaptation.tiers,
    });
  }

  const controller = new AbortController();
  // A stop reaches every descendant at once, not when the coordinator's run
  // returns: it may be waiting inside delegate or wait_agents.
  const onAbort = (): void => {
    controller.abort(signal?.reason);
    runtime.cancelChildren(COORDINATOR_ID, `the run was stopped (${abortReason(signal)})`);
  };
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const stopOnBudget = runtime.onBudgetExceeded((crossing) =>
    controller.abort(
      new TroupeError('budget.exceeded', `The run's ${crossing.metric} budget is used up.`),
    ),
  );
  const state = new CoordinatorState();
  let result: AgentResult | undefined;
  let attempts = 1;
  let failure: unknown;
  try {
    const model = createModel(spec, runtime.toolSettings.env);
    const journalKey = runtime.journal === undefined ? undefined : runtime.keyOf(COORDINATOR_ID);
    const agent = buildCoordinator(runtime, { ...options, journalKey }, state, model);
    const supervised = await runSupervised(agent, task, {
      signal: controller.signal,
      retry: options.retry,
      emit,
    });
    result = supervised.result;
    attempts = supervised.attempts;
    const crossing = runtime.budgetExceeded;
    // A time limit means stop; a spent token or cost budget leaves one last turn to answer with what there is.
    if (crossing !== undefined && crossing.metric !== 'time' && !signal?.aborted) {
      const last = buildCoordinator(
        runtime,
        {
          ...options,
          delegation: false,
          journalKey: journalKey === undefined ? undefined : `${journalKey}/last-turn`,
        },
        state,
        model,
        true,
      );
      last.resetHistory(result.messages);
      const done = [...state.results.values()];
      const summary =
        done.length > 0 ? `\n\nResults so far:\n${formatDelegationResults(done)}` : '';
      const lastTurn = await last.run(
        `The run's ${crossing.metric} budget is used up: no more sub-agents can be started and the running ones were stopped. Give your final answer now, with what you have, and say what is missing.${summary}`,
      );
      result = {
        ...lastTurn,
        // Not even the last turn fitted: the results so far are the answer, said as such.
        ...(lastTurn.stopReason === 'budget'
          ? {
              final: `The run's ${crossing.metric} budget ran out before the coordinator could write its answer.${summary}`,
            }
          : {}),
        usage: addUsage(result.usage, lastTurn.usage),
        steps: [...result.steps, ...lastTurn.steps],
      };
    }
  } catch (error) {
    failure = error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    stopOnBudget();
  }
  runtime.cancelChildren(COORDINATOR_ID, 'the coordinator finished');
  await Promise.all([...state.refs.values()].map((ref) => ref.result));

  const facts: RunOutcomeFacts = {
    failure,
    aborted: signal?.aborted === true,
    crossing: runtime.budgetExceeded,
    result,
    depended: state.depended(),
    spent: runtime.usage(),
  };
  const status = decideRunStatus(facts);
  const final = result?.final ?? '';
  const error = runError(status, facts);
  // The coordinator itself completed when it answered, whatever its sub-agents came to.
  const agentStatus =
    result?.stopReason === 'final' && failure === undefined
      ? 'completed'
      : status === 'cancelled'
        ? 'cancelled'
        : status === 'timed_out'
          ? 'timed_out'
          : 'failed';
  emit({
    type: 'agent.finished',
    status: agentStatus,
    stopReason: result?.stopReason ?? 'error',
    final,
    ...(error === undefined || agentStatus === 'completed' ? {} : { error }),
    usage: result?.usage ?? { inputTokens: 0, outputTokens: 0 },
    steps: result?.steps.length ?? 0,
    ...(attempts > 1 ? { attempts } : {}),
  });
  const totals = runtime.usage();
  emit({
    type: 'run.finished',
    status,
    final,
    ...(error === undefined ? {} : { error }),
    usage: totals.usage,
  });
  return {
    runId: runtime.runId,
    status,
    final,
    usage: totals.usage,
    costUsd: totals.costUsd,
    ...(error === undefined ? {} : { error }),
    results: state.results,
  };
}

function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error) return reason.message;
  return typeof reason === 'string' && reason !== '' ? reason : 'aborted';
}
