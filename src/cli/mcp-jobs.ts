import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import { EventBus } from '../events/bus.js';
import type { AgentEvent, RunStatus } from '../events/schema.js';
import type { JobResult } from '../job/coordinator.js';
import { startRun } from '../job/run-session.js';
import { truncateEnd } from '../util/truncate.js';
import { type JobSettings, jobRuntimeParts } from './commands/run.js';

/** What a client asks of `run_job`. */
export interface JobRequest {
  task: string;
  /** Roles the coordinator may delegate to (default all). */
  roles?: readonly string[] | undefined;
  /** Token budget of the whole run. */
  budgetTokens?: number | undefined;
}

/** One job as `run_status` reports it. */
export interface JobSnapshot {
  run_id: string;
  status: 'running' | RunStatus;
  task: string;
  /** Sub-agents started and finished so far. */
  agents_started: number;
  agents_finished: number;
  /** The latest progress line. */
  last: string;
  answer?: string | undefined;
  error?: string | undefined;
  report_path?: string | undefined;
  trace_path: string;
}

interface Job {
  runId: string;
  task: string;
  runDir: string;
  tracePath: string;
  controller: AbortController;
  counts: { started: number; finished: number; last: string };
  result: JobResult | undefined;
  /** Why the run stopped without a result (its runtime could not close, say). */
  failure?: string | undefined;
  done: Promise<JobResult>;
  listeners: Set<(line: string) => void>;
}

/**
 * The jobs `troupe mcp` runs: each on its own Runtime and run folder (trace,
 * results, report), as `troupe run` would, with a progress line per notable
 * event for the client's progress notifications.
 */
export class JobBoard {
  readonly #settings: JobSettings;
  readonly #jobs = new Map<string, Job>();

  constructor(settings: JobSettings) {
    this.#settings = settings;
  }

  /** Starts a job; progress lines go to `onProgress` until it ends. */
  async start(
    request: JobRequest,
    onProgress?: (line: string) => void,
  ): Promise<{ runId: string; done: Promise<JobResult> }> {
    const settings: JobSettings = {
      ...this.#settings,
      task: request.task,
      ...(request.budgetTokens === undefined ? {} : { budgetTokens: request.budgetTokens }),
    };
    const bus = new EventBus();
    const controller = new AbortController();
    const listeners = new Set(onProgress === undefined ? [] : [onProgress]);
    const counts = { started: 0, finished: 0, last: 'starting' };
    bus.onAny((event) => observe(counts, listeners, event));
    const session = await startRun({
      ...jobRuntimeParts(settings),
      task: request.task,
      out: settings.out,
      bus,
      signal: controller.signal,
      maxSteps: settings.maxSteps,
      coordinatorRoles: request.roles,
    });
    const done = session.done.then((outcome) => {
      if (outcome.result !== undefined) return outcome.result;
      throw outcome.error;
    });
    const job: Job = {
      runId: session.runId,
      task: request.task,
      runDir: session.paths.runDir,
      tracePath: session.paths.trace,
      controller,
      counts,
      result: undefined,
      done,
      listeners,
    };
    void done.then(
      (result) => {
        job.result = result;
        listeners.clear();
      },
      (error: unknown) => {
        job.failure = errorMessage(error);
        listeners.clear();
      },
    );
    this.#jobs.set(session.runId, job);
    return { runId: session.runId, done };
  }

  status(runId: string): JobSnapshot | undefined {
    const job = this.#jobs.get(runId);
    if (job === undefined) return undefined;
    const result = job.result;
    const report = join(job.runDir, 'report.md');
    return {
      run_id: runId,
      status: result?.status ?? (job.failure === undefined ? 'running' : 'failed'),
      task: job.task,
      agents_started: job.counts.started,
      agents_finished: job.counts.finished,
      last: job.counts.last,
      ...(result === undefined ? {} : { answer: result.final }),
      ...(result?.error === undefined ? {} : { error: result.error.message }),
      ...(job.failure === undefined ? {} : { error: job.failure }),
      ...(existsSync(report) ? { report_path: report } : {}),
      trace_path: job.tracePath,
    };
  }

  /** Cancels a running job; false when the run id is unknown or the job has ended. */
  cancel(runId: string, reason = 'cancelled by the MCP client'): boolean {
    const job = this.#jobs.get(runId);
    if (job === undefined || job.result !== undefined) return false;
    job.controller.abort(new Error(reason));
    return true;
  }

  /** Resolves when the run has ended (at once for an unknown or ended run). */
  async settled(runId: string): Promise<void> {
    await this.#jobs.get(runId)?.done.catch(() => undefined);
  }

  /** Known run ids, newest last. */
  get runIds(): string[] {
    return [...this.#jobs.keys()];
  }

  /** Cancels every running job and waits for all to end. */
  async close(): Promise<void> {
    for (const runId of this.#jobs.keys()) this.cancel(runId, 'the MCP server is shutting down');
    await Promise.all([...this.#jobs.values()].map((job) => job.done.catch(() => undefined)));
  }
}

/** Counts sub-agents and keeps the latest progress line, telling the listeners. */
function observe(
  counts: Job['counts'],
  listeners: ReadonlySet<(line: string) => void>,
  event: AgentEvent,
): void {
  const line = progressLine(event);
  if (event.type === 'agent.spawned' && event.agentId !== 'coordinator') counts.started += 1;
  if (event.type === 'agent.finished' && event.agentId !== 'coordinator') counts.finished += 1;
  if (line === undefined) return;
  counts.last = line;
  for (const listener of listeners) listener(line);
}

/** One line for a client's progress display, for the events worth one. */
export function progressLine(event: AgentEvent): string | undefined {
  switch (event.type) {
    case 'run.started':
      return `run ${event.runId} started`;
    case 'agent.spawned':
      return `${event.agentId} started`;
    case 'agent.finished':
      return `${event.agentId} ${event.status}`;
    case 'tool.call':
      return `${event.agentId} → ${event.name}`;
    case 'budget.warning':
    case 'budget.exceeded':
      return `${event.type.replace('.', ' ')}`;
    case 'run.finished':
      return `run ${event.status}${event.final === undefined ? '' : `: ${truncateEnd(event.final.replace(/\s+/g, ' '), 120)}`}`;
    default:
      return undefined;
  }
}
