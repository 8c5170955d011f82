import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TroupeError } from '../errors.js';
import { EventBus } from '../events/bus.js';
import { readTrace, TraceWriter } from '../events/trace.js';
import { FileJournal, type JournalFileMirror, readJournal } from '../runtime/resume/journal.js';
import { Runtime } from '../runtime/runtime.js';
import type { RuntimeOptions } from '../runtime/runtime-options.js';
import type { Transport } from '../runtime/wire/transport.js';
import { describeDiskError, isStorageError } from '../util/disk-write.js';
import { createRunId } from '../util/ids.js';
import { createRedactor } from '../util/redact.js';
import { type JobResult, runJob } from './coordinator.js';
import { prepareRunFolder } from './run-folder.js';

/**
 * One run of a job with everything a front end needs around it: the run
 * folder, its journal (so a resume pays for no finished call twice), the
 * trace and its rotation on resume, the runtime, the coordinator, the answer
 * file, and an orderly close. `troupe run`, `troupe demo`, `troupe mcp` and
 * library users all start runs through `startRun`; what they add is only how
 * they show it.
 */

/** The files of a run, under `<out>/<runId>/`. */
export interface RunPaths {
  runDir: string;
  /** JSONL trace of every event (earlier attempts of a resumed run are kept as trace.N.jsonl). */
  trace: string;
  /** The journal a resume replays. */
  journal: string;
  /** Where the reporter writes (when the job has one). */
  report: string;
  /** The coordinator's final answer, redacted, written when the run ends with one. */
  answer: string;
}

/** What a run needs; the runtime options are those of `Runtime` without the parts the run owns. */
export interface StartRunOptions
  extends Omit<RuntimeOptions, 'runId' | 'bus' | 'outDir' | 'results' | 'journal' | 'transport'> {
  /** The job. Optional when resuming: the task is read from the run's trace. */
  task?: string | undefined;
  /** The folder that holds run folders (`$XDG_STATE_HOME/troupe/runs` by default in the CLI). */
  out: string;
  /** Resume this run id (its folder under `out` must exist) instead of starting a new run. */
  resume?: string | undefined;
  /** The bus to publish on; subscribe to it before calling (default: a new one, `session.events`). */
  bus?: EventBus | undefined;
  /** Aborting it cancels the coordinator and every sub-agent. */
  signal?: AbortSignal | undefined;
  /** Steps per agent (the coordinator's too). */
  maxSteps?: number | undefined;
  /** Roles the coordinator may delegate to (default: every role of the runtime). */
  coordinatorRoles?: readonly string[] | undefined;
  /** Keep a journal so the run can be resumed (default true). */
  journal?: boolean | undefined;
  /**
   * Keeps the journal elsewhere too (`openNatsJournalMirror`): opened before
   * the journal file, which it may first write from what it holds (a resume
   * on another machine), and closed after it.
   */
  mirrorJournal?:
    | ((run: {
        runId: string;
        path: string;
      }) => Promise<JournalFileMirror & { close(): Promise<void> }>)
    | undefined;
  /** Places sub-agents elsewhere (worker nodes): made from the run's runtime options once they are known. */
  transport?:
    | ((run: { runId: string; options: RuntimeOptions; resumed: boolean }) => Promise<Transport>)
    | undefined;
}

/** What a run came to: the job's result, or the error that stopped it before it had one. */
export interface RunOutcome {
  result?: JobResult | undefined;
  /** Set when the job could not run (the runtime failed to start, say); the run folder stays. */
  error?: unknown;
  /** True when `signal` or `cancel()` stopped it. */
  cancelled: boolean;
}

/** A live run. */
export interface RunSession {
  readonly runId: string;
  readonly task: string;
  readonly resumed: boolean;
  readonly paths: RunPaths;
  /** Every event of the run, in order. */
  readonly events: EventBus;
  readonly runtime: Runtime;
  /** Settles when the run has ended and its runtime, journal and trace are closed. Never rejects. */
  readonly done: Promise<RunOutcome>;
  /** Stops the run: the coordinator and every sub-agent are cancelled. */
  cancel(reason?: unknown): void;
}

/**
 * The run id, folder and task a run will have, checked without touching
 * anything: a resume needs its folder and a task (given, or in its trace).
 * Throws `usage.invalid_option` with what to do otherwise.
 */
export function resolveRun(options: Pick<StartRunOptions, 'out' | 'resume' | 'task'>): {
  runId: string;
  task: string;
  paths: RunPaths;
} {
  const runId = options.resume ?? createRunId();
  const runDir = join(options.out, runId);
  const paths: RunPaths = {
    runDir,
    trace: join(runDir, 'trace.jsonl'),
    journal: join(runDir, 'journal.jsonl'),
    report: join(runDir, 'report.md'),
    answer: join(runDir, 'answer.md'),
  };
  let task = options.task;
  if (options.resume !== undefined) {
    if (!existsSync(runDir)) {
      throw usage(`Cannot resume ${runId}: there is no run folder ${runDir} (check --out).`);
    }
    if (task === undefined && existsSync(paths.trace)) {
      task = readTrace(paths.trace).events.find((event) => event.type === 'run.started')?.task;
    }
    // A folder rebuilt from a journal kept elsewhere (a NATS mirror) has no trace yet: its journal names the task.
    if (task === undefined && existsSync(paths.journal)) {
      try {
        task = readJournal(paths.journal).task;
      } catch {
        // Not a journal: the message below says what to do.
      }
    }
    if (task === undefined) {
      throw usage(
        `Cannot resume ${runId}: its trace has no run.started event; pass the task again.`,
      );
    }
  }
  if (task === undefined || task.trim() === '') throw usage('A run needs a task.');
  return { runId, task, paths };
}

/**
 * Starts a run and returns it live. Resolves once the run is under way
 * (its folder, journal, trace and runtime are open); `done` settles when it
 * has ended and everything is closed.
 *
 * @example
 * const run = await startRun({ task: 'Compare the notes in docs/', out: 'runs', model, workspace: 'docs' });
 * run.events.on('agent.finished', (event) => console.log(event.agentId, event.status));
 * const { result } = await run.done;
 */
export async function startRun(options: StartRunOptions): Promise<RunSession> {
  const { runId, task, paths } = resolveRun(options);
  const resumed = options.resume !== undefined;
  // The folder is made and locked first: one that cannot be used fails here with its real cause.
  // The lock tells `troupe trace --follow` elsewhere that this process writes the trace.
  const releaseLock = prepareRunFolder(paths.runDir, options.out);
  // A file of the run that cannot be written (disk full) stops the run; the first failure is its error.
  const stop = new AbortController();
  let storageFailure: TroupeError | undefined;
  const onStorageError = (error: TroupeError): void => {
    storageFailure ??= error;
    if (!stop.signal.aborted) stop.abort(error);
  };
  let journal: FileJournal | undefined;
  let mirror: (JournalFileMirror & { close(): Promise<void> }) | undefined;
  let trace: TraceWriter;
  try {
    if (options.journal !== false && options.mirrorJournal !== undefined) {
      mirror = await options.mirrorJournal({ runId, path: paths.journal });
    }
    // Opened first: a journal of another run or task stops here, with the trace untouched.
    // Redacted like every file troupe writes: a recorded call that held a secret goes live on resume.
    journal =
      options.journal === false
        ? undefined
        : new FileJournal(
            paths.journal,
            { runId, task },
            {
              redact: createRedactor(options.env ?? process.env),
              onError: onStorageError,
              mirror,
            },
          );
    // A resumed run starts a fresh trace.jsonl (seq is gap-free per attempt); earlier attempts stay beside it.
    if (resumed) rotateTrace(paths.trace);
    trace = new TraceWriter(paths.trace, {
      env: options.env ?? process.env,
      onError: onStorageError,
    });
  } catch (error) {
    journal?.close();
    await mirror?.close();
    releaseLock();
    throw storageError(error, paths.runDir);
  }
  const bus = options.bus ?? new EventBus();
  trace.attach(bus);
  const {
    task: _task,
    out: _out,
    resume: _resume,
    bus: _bus,
    signal,
    maxSteps,
    coordinatorRoles,
    journal: _journal,
    mirrorJournal: _mirrorJournal,
    transport: makeTransport,
    ...runtimeParts
  } = options;
  const runtimeOptions: RuntimeOptions = {
    ...runtimeParts,
    runId,
    bus,
    outDir: paths.runDir,
    results: { dir: join(paths.runDir, 'results'), reuse: resumed },
    ...(journal === undefined ? {} : { journal }),
  };
  let runtime: Runtime;
  try {
    if (makeTransport !== undefined) {
      runtimeOptions.transport = await makeTransport({ runId, options: runtimeOptions, resumed });
    }
    runtime = new Runtime(runtimeOptions);
  } catch (error) {
    trace.close();
    journal?.close();
    await mirror?.close();
    releaseLock();
    throw error;
  }
  // The threads start while the coordinator makes its first model calls.
  runtime.prestart();

  const onAbort = (): void => stop.abort(signal?.reason);
  if (signal?.aborted === true) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });

  const done = (async (): Promise<RunOutcome> => {
    let result: JobResult | undefined;
    let error: unknown;
    try {
      result = await runJob({
        task,
        runtime,
        signal: stop.signal,
        ...(maxSteps === undefined ? {} : { maxSteps }),
        ...(coordinatorRoles === undefined ? {} : { roles: coordinatorRoles }),
      });
    } catch (caught) {
      error = caught;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      await runtime.close().catch((caught: unknown) => {
        error ??= caught;
      });
      journal?.close();
      // What the journal wrote last reaches its mirror before the run says it is done (bounded).
      await mirror?.close();
      trace.close();
      releaseLock();
    }
    const final = result?.final.trimEnd() ?? '';
    if (final !== '') {
      try {
        writeFileSync(paths.answer, `${createRedactor(options.env ?? process.env)(final)}\n`);
      } catch (caught) {
        error ??= storageError(caught, paths.answer);
      }
    }
    // The storage failure is why the run stopped, whatever the job came to meanwhile.
    if (storageFailure !== undefined) error = storageFailure;
    return { result, error, cancelled: stop.signal.aborted && storageFailure === undefined };
  })();

  return {
    runId,
    task,
    resumed,
    paths,
    events: bus,
    runtime,
    done,
    cancel: (reason?: unknown) => {
      if (!stop.signal.aborted) stop.abort(reason ?? new Error('cancelled'));
    },
  };
}

function rotateTrace(tracePath: string): void {
  if (!existsSync(tracePath)) return;
  let attempt = 1;
  while (existsSync(tracePath.replace(/\.jsonl$/, `.${attempt}.jsonl`))) attempt += 1;
  renameSync(tracePath, tracePath.replace(/\.jsonl$/, `.${attempt}.jsonl`));
}

// A file system error of the run's own files as the run's error: the storage
// failed (disk full, I/O error) or it is another error, passed on as it is.
function storageError(error: unknown, path: string): unknown {
  if (!isStorageError(error)) return error;
  return new TroupeError('io.write_failed', `cannot write ${path}: ${describeDiskError(error)}`, {
    cause: error,
  });
}

function usage(message: string): TroupeError {
  return new TroupeError('usage.invalid_option', message);
}
