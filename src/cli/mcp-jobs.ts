import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { EventBus } from '../events/bus.js';
import type { AgentEvent, RunStatus } from '../events/schema.js';
import { TraceWriter } from '../events/trace.js';
import { type JobResult, runJob } from '../job/coordinator.js';
import { Runtime } from '../runtime/runtime.js';
import { createRunId } from '../util/ids.js';
import { truncateEnd } from '../util/truncate.js';
import { type JobSettings, jobRuntimeOptions } from './commands/run.js';

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
  started: number;
  finished: number;
  last: string;
  result: JobResult | undefined;
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
  start(
    request: JobRequest,
    onProgress?: (line: string) => void,
  ): { runId: string; done: Promise<JobResult> } {
    const runId = createRunId();
    const runDir = join(this.#settings.out, runId);
    mkdirSync(runDir, { recursive: true });
    const settings: JobSettings = {
      ...this.#settings,
      task: request.task,
      ...(request.budgetTokens === undefined ? {} : { budgetTokens: request.budgetTokens }),
    };
    const bus = new EventBus();
    const tracePath = join(runDir, 'trace.jsonl');
    const trace = new TraceWriter(tracePath, { env: settings.env });
    trace.attach(bus);
    const job: Job = {
      runId,
      task: request.task,
      runDir,
      tracePath,
      controller: new AbortController(),
      started: 0,
      finished: 0,
      last: 'starting',
      result: undefined,
      done: Promise.resolve(undefined as unknown as JobResult),
      listeners: new Set(onProgress === undefined ? [] : [onProgress]),
    };
    bus.onAny((event) => this.#observe(job, event));
    const runtime = new Runtime(jobRuntimeOptions(settings, { runId, runDir, bus }));
    job.done = runJob({
      task: request.task,
      runtime,
      signal: job.controller.signal,
      ...(settings.maxSteps === undefined ? {} : { maxSteps: settings.maxSteps }),
      ...(request.roles === undefined ? {} : { roles: request.roles }),
    }).finally(async () => {
      await runtime.close();
      trace.close();
    });
    void job.done.then((result) => {
      job.result = result;
      job.listeners.clear();
    });
    this.#jobs.set(runId, job);
    return { runId, done: job.done };
  }

  /** The job's state, or undefined for an unknown run id. */
  status(runId: string): JobSnapshot | undefined {
    const job = this.#jobs.get(runId);
    if (job === undefined) return undefined;
    const result = job.result;
    const report = join(job.runDir, 'report.md');
    return {
      run_id: runId,
      status: result?.status ?? 'running',
      task: job.task,
      agents_started: job.started,
      agents_finished: job.finished,
      last: job.last,
      ...(result === undefined ? {} : { answer: result.final }),
      ...(result?.error === undefined ? {} : { error: result.error.message }),
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

  #observe(job: Job, event: AgentEvent): void {
    const line = progressLine(event);
    if (event.type === 'agent.spawned' && event.agentId !== 'coordinator') job.started += 1;
    if (event.type === 'agent.finished' && event.agentId !== 'coordinator') job.finished += 1;
    if (line === undefined) return;
    job.last = line;
    for (const listener of job.listeners) listener(line);
  }
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
