import type { ChildProcess } from 'node:child_process';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { errorMessage, TroupeError } from '../../errors.js';
import { lazyBuiltin } from '../../util/lazy-builtin.js';
import { requireProtectedMounts } from '../mount-check.js';
import {
  bwrapArgs,
  DEFAULT_EXEC_LIMITS,
  defaultHiddenPaths,
  type ExecLimits,
  type OsSandboxOptions,
  programMount,
  requireSandbox,
  SYSTEM_BIN_DIRS,
} from '../os-sandbox.js';
import { createExecCgroup, type ExecCgroup } from '../pids-cgroup.js';
import {
  ALLOW_PROTECTED_FLAG,
  guardProtectedPaths,
  type ProtectedGuard,
  type SweepResult,
} from '../protected-paths.js';
import { isInside } from '../sandbox.js';
import { scrubEnv } from '../scrub-env.js';
import type { ToolContext } from '../tool.js';
import {
  type EgressProxy,
  PROXY_SOCKET_NAME,
  proxyEnv,
  SANDBOX_BRIDGE_CODE,
  SANDBOX_PROXY_FOLDER,
  SANDBOX_PROXY_PORT,
  startEgressProxy,
} from './egress-proxy.js';
import { formatBytes } from './read-file.js';

export { DEFAULT_EXEC_TIMEOUT_MS, ExecTimeoutSchema } from './exec-params.js';

// Loaded on the first exec call: most threads never run a program (see lazy-builtin.ts).
const loadChildProcess = lazyBuiltin<typeof import('node:child_process')>('node:child_process');

/**
 * Child processes for the exec tools: no shell ever, a process group killed
 * on timeout, abort or too much output, and the OS sandbox unless the
 * context opted out.
 */

/** What to run. */
export interface RunProcessOptions {
  /** Absolute path of the program. */
  file: string;
  args: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string>>;
  /** Killed after this long (milliseconds). */
  timeoutMs: number;
  /** stdout plus stderr beyond this many bytes is dropped and the process killed. */
  maxOutputBytes: number;
  signal: AbortSignal;
  /** Written to stdin, which is then closed (default: stdin closed at once). */
  input?: string;
  /** Called with the child's pid once it is started (tests use it to check the kill). */
  onSpawn?: (pid: number) => void;
  /**
   * What must happen before anything runs in the sandbox. The program must
   * be bwrap started with `--info-fd 3 --block-fd 4`
   * (`SandboxSpec.holdBeforeStart`): it reports its sandbox's first process
   * on fd 3 and waits on fd 4 until `gate` has settled: moved into the pids
   * cgroup, so nothing forks outside it, and its mounts checked. If `gate`
   * throws or rejects, nothing is started and the result's `refused` says why.
   */
  gate?: (sandboxPid: number) => Promise<void>;
}

/** How a child process ended. */
export interface ProcessResult {
  /** Exit code, or null when killed by a signal. */
  exitCode: number | null;
  /** The signal that ended it, if any. */
  signalName: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** True when output passed `maxOutputBytes` and the process was stopped. */
  outputCapped: boolean;
  /** Protected entries the sandboxed program created, found and removed after it ended. */
  protectedSweep?: SweepResult | undefined;
  /** Why the program was not started: the `gate` failed. */
  refused?: string | undefined;
}

/**
 * Runs a program without a shell in its own process group. Resolves with
 * the outcome (also on timeout and cap); rejects only when it cannot start
 * or `signal` aborts.
 */
export function runProcess(options: RunProcessOptions): Promise<ProcessResult> {
  options.signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const child = loadChildProcess().spawn(options.file, [...options.args], {
      cwd: options.cwd,
      env: { ...options.env },
      shell: false,
      detached: true,
      stdio:
        options.gate === undefined
          ? ['pipe', 'pipe', 'pipe']
          : ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    if (child.pid !== undefined) options.onSpawn?.(child.pid);
    let refused: string | undefined;
    if (options.gate !== undefined) {
      releaseThroughGate(child, options.gate, (reason) => {
        refused = reason;
      });
    }
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let bytes = 0;
    let timedOut = false;
    let outputCapped = false;
    let aborted = false;
    let exited = false;
    let settled = false;

    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const finish = (exitCode: number | null, signalName: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      if (aborted) {
        reject(options.signal.reason);
        return;
      }
      resolve({
        exitCode,
        signalName,
        stdout: decode(stdout),
        stderr: decode(stderr),
        timedOut,
        outputCapped,
        ...(refused === undefined ? {} : { refused }),
      });
    };
    // Stop: kill the whole group, and stop waiting for pipes a stray grandchild may hold.
    const stop = (): void => {
      killGroup();
      for (const stream of child.stdio.slice(1)) stream?.destroy();
      if (exited) finish(child.exitCode, child.signalCode);
    };
    const onAbort = (): void => {
      aborted = true;
      stop();
    };
    const collect = (sink: Buffer[]) => (chunk: Buffer) => {
      if (outputCapped) return;
      const room = options.maxOutputBytes - bytes;
      if (chunk.length > room) {
        sink.push(chunk.subarray(0, Math.max(0, room)));
        bytes = options.maxOutputBytes;
        outputCapped = true;
        stop();
        return;
      }
      sink.push(chunk);
      bytes += chunk.length;
    };

    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    options.signal.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', collect(stdout));
    child.stderr.on('data', collect(stderr));
    child.stdin.on('error', () => {
      // The child may exit without reading its input (EPIPE); its exit status tells the story.
    });
    child.stdin.end(options.input ?? '');
    child.on('error', (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      reject(
        new TroupeError(
          'tool.failed',
          `Could not start ${path.basename(options.file)}: ${errorMessage(error)}`,
          {
            cause: error,
          },
        ),
      );
    });
    child.on('exit', (code, signalName) => {
      exited = true;
      if (timedOut || outputCapped || aborted) finish(code, signalName);
    });
    child.on('close', (code, signalName) => finish(code, signalName));
  });
}

/**
 * Reads bwrap's report (fd 3) of its sandbox's first process, passes it
 * through `gate`, then lets bwrap go on (a byte on fd 4). If bwrap fails
 * before it reports, it exits on its own and its stderr tells why; if the
 * gate fails, the program is not started (bwrap is killed with its group)
 * and `onRefused` gets the reason.
 */
function releaseThroughGate(
  child: ChildProcess,
  gate: (sandboxPid: number) => Promise<void>,
  onRefused: (reason: string) => void,
): void {
  const info = child.stdio[3] as Readable | null;
  const go = child.stdio[4] as Writable | null;
  if (info === null || go === null) return;
  go.on('error', () => {
    // bwrap died before reading its gate; its exit status tells why.
  });
  let report = '';
  info.setEncoding('utf8');
  info.on('data', (text: string) => {
    report += text;
  });
  info.on('error', () => undefined);
  // Nothing runs: bwrap is killed with its group (reading EOF on fd 4, it would go on).
  const refuse = (reason: string): void => {
    onRefused(reason);
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  };
  info.on('end', () => {
    const sandboxPid = /"child-pid":\s*(\d+)/.exec(report)?.[1];
    if (sandboxPid === undefined) {
      go.destroy();
      return;
    }
    const pid = Number(sandboxPid);
    // The sandbox waits on fd 4, so it only ends if it was killed (a timeout, a cancel): then its
    // pid may already name another process, which the gate must not move into the sandbox's
    // cgroup (whose release kills everything in it). Its parent is bwrap while it waits.
    if (child.exitCode !== null || child.signalCode !== null || parentPid(pid) !== child.pid) {
      refuse('the sandbox ended before its program started');
      return;
    }
    gate(pid).then(
      () => go.end('go'),
      (error: unknown) => refuse(errorMessage(error)),
    );
  });
}

/** The parent pid of `pid` from /proc, or undefined when it has ended. */
function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

function decode(chunks: Buffer[]): string {
  return new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks));
}

/**
 * Finds `name` as an absolute executable path: first in the system folders
 * the sandbox shows (/usr/local/bin, /usr/bin, /bin), then on the PATH of
 * `env`, skipping relative PATH entries and folders inside the workspace (a
 * program the model wrote there must not stand in for `ls`). Undefined when
 * not found.
 */
export function resolveProgram(
  name: string,
  env: Readonly<Record<string, string | undefined>>,
  workspace: string,
): string | undefined {
  const onPath = (env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin').split(path.delimiter);
  for (const directory of [...SYSTEM_BIN_DIRS, ...onPath]) {
    if (!path.isAbsolute(directory) || isInside(workspace, path.resolve(directory))) continue;
    const candidate = path.join(directory, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here; try the next folder.
    }
  }
  return undefined;
}

/** What an exec tool runs. */
export interface ExecRequest {
  /** Tool name, for messages. */
  tool: string;
  /** Program name (looked up on PATH) or absolute path. */
  program: string;
  args: readonly string[];
  /** Absolute real working directory inside the workspace. */
  cwd: string;
  /** Absolute real path of the workspace. */
  workspace: string;
  timeoutMs: number;
  maxOutputBytes: number;
  input?: string;
  /** Variables set in the child after scrubbing. */
  setEnv?: Readonly<Record<string, string>>;
  /** More variable names passed through the scrub. */
  passEnv?: readonly string[];
  sandbox?: OsSandboxOptions;
}

/** The limits of a run: the defaults with the run's overrides (`--exec-limit`). */
export function execLimitsOf(context: ToolContext): ExecLimits & { outputBytes?: number } {
  return { ...DEFAULT_EXEC_LIMITS, ...context.sandbox?.limits };
}

/**
 * The folders a sandboxed program may write: none without the write tier,
 * the run's output folder when writes are confined to it, else the
 * workspace.
 */
export async function writableRoots(context: ToolContext, workspace: string): Promise<string[]> {
  if (!context.grants.includes('write')) return [];
  if (context.outputDir === undefined) return [workspace];
  await mkdir(context.outputDir, { recursive: true });
  return [await realpath(context.outputDir)];
}

/**
 * Prepares an exec tool's program and returns the function that runs it.
 * Everything that can refuse without running anything happens here, before
 * the tool asks for approval: the program is looked up (system folders
 * first), and the sandbox must be able to start (`sandbox.unavailable` with
 * an install hint) unless `context.unsafeNoSandbox` is set. The child gets
 * a scrubbed environment and runs under bubblewrap (see os-sandbox.ts) with
 * the run's resource limits, its protected paths read-only, and no network
 * namespace of the host's.
 */
export async function prepareExec(
  request: ExecRequest,
  context: ToolContext,
): Promise<() => Promise<ProcessResult>> {
  const env = scrubEnv(context.env ?? process.env, {
    ...(request.passEnv === undefined ? {} : { passEnv: request.passEnv }),
    set: { TMPDIR: '/tmp', ...request.setEnv },
  });
  const file = path.isAbsolute(request.program)
    ? request.program
    : resolveProgram(request.program, env, request.workspace);
  if (file === undefined) {
    throw new TroupeError(
      'tool.failed',
      `${request.program} is not installed on this machine (not found on PATH), so ${request.tool} cannot run it.`,
      { details: { program: request.program, notFound: true } },
    );
  }
  const limits = execLimitsOf(context);
  const common = {
    cwd: request.cwd,
    timeoutMs: request.timeoutMs,
    maxOutputBytes: Math.min(
      request.maxOutputBytes,
      limits.outputBytes ?? Number.POSITIVE_INFINITY,
    ),
    signal: context.signal,
    ...(request.input === undefined ? {} : { input: request.input }),
  };
  if (context.unsafeNoSandbox === true) {
    return () => runProcess({ ...common, file, args: request.args, env });
  }
  const sandbox = await requireSandbox(request.tool, request.sandbox);
  const writable = await writableRoots(context, request.workspace);
  const programFolder = programMount(file);
  const egress = context.grants.includes('network');
  const node = egress ? (resolveProgram('node', env, request.workspace) ?? process.execPath) : '';
  const nodeFolder = egress ? programMount(node) : undefined;
  return async () => {
    const guard: ProtectedGuard =
      context.sandbox?.allowProtectedWrites === true
        ? { paths: [], sweep: async () => ({ removed: [], failed: [] }), release: async () => {} }
        : await guardProtectedPaths(writable);
    let proxy: EgressProxy | undefined;
    let cgroup: ExecCgroup | undefined;
    let swept = false;
    try {
      // With the network tier, the program's only way out is troupe's filtering proxy.
      if (egress) {
        proxy = await startEgressProxy({
          allowHosts: context.sandbox?.allowDomains,
          onDenied: (target, reason) =>
            context.progress?.(`${request.tool}: network access to ${target} denied (${reason})`),
        });
      }
      // As root, RLIMIT_NPROC does not hold: a pids cgroup caps the process count instead.
      cgroup = isRoot() ? createExecCgroup(limits.processes + SANDBOX_OWN_PROCESSES) : undefined;
      if (isRoot() && cgroup === undefined && !warnedUncapped) {
        warnedUncapped = true;
        context.progress?.(
          `${request.tool}: the process limit (${limits.processes}) is not enforced: troupe runs as root and this machine gives it no writable pids cgroup (run as an ordinary user, or give troupe a cgroup)`,
        );
      }
      const args = bwrapArgs({
        holdBeforeStart: cgroup !== undefined || guard.paths.length > 0,
        program: file,
        args: request.args,
        workspace: request.workspace,
        cwd: request.cwd,
        env: proxy === undefined ? env : { ...env, ...proxyEnv() },
        writable,
        readOnlyOver: guard.paths,
        readOnly: [programFolder, nodeFolder].filter((folder) => folder !== undefined),
        limits,
        prlimitPath: sandbox.prlimitPath,
        hiddenPaths: defaultHiddenPaths((context.env ?? process.env)['HOME'] ?? os.homedir()),
        ...(proxy === undefined
          ? {}
          : {
              mounts: [{ source: proxy.folder, target: SANDBOX_PROXY_FOLDER }],
              wrapper: [
                node,
                '-e',
                SANDBOX_BRIDGE_CODE,
                '--',
                `${SANDBOX_PROXY_FOLDER}/${PROXY_SOCKET_NAME}`,
                String(SANDBOX_PROXY_PORT),
              ],
            }),
      });
      // bwrap itself gets the scrubbed environment too: inside the sandbox it is PID 1,
      // and its /proc/1/environ is readable by the child.
      const result = await runProcess({
        ...common,
        file: sandbox.bwrapPath,
        args,
        env,
        ...(cgroup === undefined && guard.paths.length === 0
          ? {}
          : {
              gate: async (sandboxPid: number) => {
                // First into the cgroup (nothing has forked yet), then the mounts, once made.
                cgroup?.add(sandboxPid);
                if (guard.paths.length > 0) {
                  await requireProtectedMounts(sandboxPid, writable, guard.paths);
                }
              },
            }),
      });
      // Everything in the sandbox has ended: what it created below the read-only mounts
      // (a protected entry deeper than the root of a writable folder) is found and removed.
      swept = true;
      const protectedSweep = await guard.sweep();
      return protectedSweep.removed.length + protectedSweep.failed.length === 0
        ? result
        : { ...result, protectedSweep };
    } finally {
      cgroup?.release();
      await proxy?.close();
      // Also when the call was cancelled or could not start: nothing planted may stay.
      if (!swept) await guard.sweep().catch(() => undefined);
      await guard.release();
    }
  };
}

/** Processes of the sandbox's own besides the program's: bwrap's init and the egress bridge's threads. */
const SANDBOX_OWN_PROCESSES = 16;

let warnedUncapped = false;

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

const LIMIT_SIGNALS: Readonly<Record<string, (limits: ExecLimits) => string>> = {
  SIGXCPU: (limits) => `it used up its CPU time limit (${limits.cpuSeconds} s)`,
  SIGXFSZ: (limits) =>
    `it tried to write a file larger than the file size limit (${formatBytes(limits.fileSizeBytes)})`,
};
const SIGNAL_NUMBERS: Readonly<Record<number, string>> = {
  24: 'SIGXCPU',
  25: 'SIGXFSZ',
  9: 'SIGKILL',
};

/** Why a sandboxed program ended, when a resource limit ended it; undefined otherwise. */
export function limitReason(result: ProcessResult, limits: ExecLimits): string | undefined {
  // bwrap reports a child killed by signal N as exit code 128 + N.
  const signalName =
    result.signalName ??
    (result.exitCode !== null && result.exitCode > 128
      ? SIGNAL_NUMBERS[result.exitCode - 128]
      : undefined);
  const bySignal = signalName === undefined ? undefined : LIMIT_SIGNALS[signalName]?.(limits);
  if (bySignal !== undefined) return bySignal;
  const text = `${result.stderr}\n${result.stdout}`;
  if (/MemoryError|Cannot allocate memory|out of memory|ENOMEM|allocation failed/i.test(text)) {
    return `it ran out of memory (limit ${formatBytes(limits.memoryBytes)} of address space per process)`;
  }
  if (
    /Resource temporarily unavailable|EAGAIN|fork: retry|Too many open files|EMFILE/i.test(text)
  ) {
    return `it hit the process limit (${limits.processes}) or the open-file limit (${limits.openFiles})`;
  }
  if (/File too large|EFBIG/i.test(text)) {
    return `it tried to write a file larger than the file size limit (${formatBytes(limits.fileSizeBytes)})`;
  }
  if (/No space left on device|ENOSPC/i.test(text)) {
    return `it ran out of space (the private /tmp holds ${formatBytes(limits.tmpBytes)})`;
  }
  return undefined;
}

/** What the model is told about protected entries its program created, or undefined. */
function describeSweep(sweep: SweepResult | undefined): string | undefined {
  if (sweep === undefined || sweep.removed.length + sweep.failed.length === 0) return undefined;
  const parts: string[] = [];
  if (sweep.removed.length > 0) {
    const names = sweep.removed.map((item) => `${item.relative} (${item.entry.reason})`);
    parts.push(
      `it created protected paths, which troupe removed again: ${names.join('; ')}. Files that other programs run on their own are read-only to the exec tools; leave them unchanged and tell the user what you would change (the user can rerun with ${ALLOW_PROTECTED_FLAG}).`,
    );
  }
  if (sweep.failed.length > 0) {
    const names = sweep.failed.map((item) => `${item.relative}: ${item.error}`);
    parts.push(
      `troupe could not remove protected paths it created: ${names.join('; ')}. Tell the user to check them before running git or opening the folder.`,
    );
  }
  return parts.join(' ');
}

/** Renders a finished process for the model; throws for failures (non-zero exit, timeout). */
export function describeProcessResult(
  commandLine: string,
  result: ProcessResult,
  timeoutMs: number,
  limits?: ExecLimits,
): string {
  const sections: string[] = [];
  if (result.stdout !== '') sections.push(`stdout:\n${result.stdout.trimEnd()}`);
  if (result.stderr !== '') sections.push(`stderr:\n${result.stderr.trimEnd()}`);
  if (result.outputCapped) {
    sections.push(
      '[output cap reached: the process was stopped and the rest of its output dropped]',
    );
  }
  const body = sections.join('\n\n') || '(no output)';
  if (result.refused !== undefined) {
    throw new TroupeError('tool.refused', `${commandLine} was not run: ${result.refused}\n${body}`);
  }
  const planted = describeSweep(result.protectedSweep);
  if (planted !== undefined) {
    const how = result.timedOut
      ? `did not finish within ${timeoutMs} ms and was killed`
      : result.exitCode === null
        ? `was killed by ${result.signalName}`
        : `exited with code ${result.exitCode}`;
    throw new TroupeError('tool.refused', `${commandLine} ${how}, and ${planted}\n${body}`, {
      details: { protectedPaths: result.protectedSweep },
    });
  }
  if (result.timedOut) {
    throw new TroupeError(
      'tool.timeout',
      `${commandLine} did not finish within ${timeoutMs} ms and was killed. Try a smaller job or a larger timeoutMs.\n${body}`,
    );
  }
  if (result.exitCode !== 0 && !result.outputCapped) {
    const how =
      result.exitCode === null
        ? `was killed by ${result.signalName}`
        : `exited with code ${result.exitCode}`;
    const limit = limits === undefined ? undefined : limitReason(result, limits);
    const why =
      limit === undefined
        ? ''
        : ` It was stopped by the sandbox's resource limits: ${limit}. Do the work in smaller pieces.`;
    throw new TroupeError('tool.failed', `${commandLine} ${how}.${why}\n${body}`, {
      details: { exitCode: result.exitCode, ...(limit === undefined ? {} : { limit }) },
    });
  }
  return body;
}
