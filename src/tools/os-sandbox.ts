import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TroupeError } from '../errors.js';

/**
 * The OS sandbox for exec tools (shell, python): bubblewrap, as Claude Code
 * and Codex use on Linux. The root is mounted read-only, only the workspace
 * is writable, /tmp is private, the child gets a new PID namespace with a
 * fresh /proc (so it cannot read the parent's environment through
 * /proc/<pid>/environ), no network unless granted, and dies with its parent.
 */

/** Whether bubblewrap can start on this machine, and why not. */
export interface SandboxStatus {
  available: boolean;
  /** Absolute path of bwrap, when found. */
  bwrapPath?: string | undefined;
  /** Why the sandbox is unavailable, for the refusal message. */
  reason?: string | undefined;
}

/** Options for probing and building the sandbox. */
export interface OsSandboxOptions {
  /** Path of the bwrap binary (default: looked up on PATH, then /usr/bin/bwrap). */
  bwrapPath?: string | undefined;
}

/** What to run inside the sandbox. */
export interface SandboxSpec {
  /** Absolute path of the program (resolved outside the sandbox). */
  program: string;
  args: readonly string[];
  /** Absolute real path of the workspace: the only writable folder. */
  workspace: string;
  /** Absolute working directory, inside the workspace. */
  cwd: string;
  /** The complete, already scrubbed environment of the child. */
  env: Readonly<Record<string, string>>;
  /** Keep the network namespace (network tier granted). Default false: no network. */
  allowNetwork?: boolean;
  /** Absolute paths of secret files and folders to hide (default: see `DEFAULT_HIDDEN_PATHS`). */
  hiddenPaths?: readonly string[];
}

/** How to install the sandbox, for refusal messages. */
export const SANDBOX_INSTALL_HINT =
  'Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`), or rerun with --unsafe-no-sandbox to run exec tools without an OS sandbox (not recommended).';

/** Credential files and folders under HOME hidden from sandboxed programs (the root stays readable). */
export const DEFAULT_HIDDEN_HOME_PATHS: readonly string[] = [
  '.ssh',
  '.aws',
  '.azure',
  '.gnupg',
  '.kube',
  '.docker',
  '.netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.config/gcloud',
  '.config/gh',
];

const probes = new Map<string, Promise<SandboxStatus>>();

/** Finds bwrap: `options.bwrapPath`, else PATH, else /usr/bin/bwrap. */
export function findBwrap(options: OsSandboxOptions = {}): string | undefined {
  if (options.bwrapPath !== undefined) return options.bwrapPath;
  const directories = (process.env['PATH'] ?? '').split(path.delimiter).filter(path.isAbsolute);
  for (const directory of [...directories, '/usr/bin', '/bin']) {
    const candidate = path.join(directory, 'bwrap');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Checks once per bwrap path (cached) whether bubblewrap can start here
 * with the namespaces the sandbox uses. Never throws.
 */
export function probeSandbox(options: OsSandboxOptions = {}): Promise<SandboxStatus> {
  const bwrapPath = findBwrap(options);
  if (bwrapPath === undefined) {
    return Promise.resolve({ available: false, reason: 'bwrap (bubblewrap) is not installed' });
  }
  let probe = probes.get(bwrapPath);
  if (probe === undefined) {
    probe = runProbe(bwrapPath);
    probes.set(bwrapPath, probe);
  }
  return probe;
}

function runProbe(bwrapPath: string): Promise<SandboxStatus> {
  const args = [
    ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
    ...['--unshare-pid', '--unshare-net', '--die-with-parent', '--new-session', 'true'],
  ];
  return new Promise((resolve) => {
    execFile(
      bwrapPath,
      args,
      { timeout: 10_000, env: { PATH: '/usr/bin:/bin' } },
      (error, _stdout, stderr) => {
        if (error === null) {
          resolve({ available: true, bwrapPath });
          return;
        }
        const detail = String(stderr).trim() || error.message;
        resolve({ available: false, bwrapPath, reason: `bwrap cannot start here (${detail})` });
      },
    );
  });
}

/**
 * Throws `sandbox.unavailable` with an install hint unless bubblewrap can
 * start; returns the bwrap path.
 */
export async function requireSandbox(
  tool: string,
  options: OsSandboxOptions = {},
): Promise<string> {
  const status = await probeSandbox(options);
  if (status.available && status.bwrapPath !== undefined) return status.bwrapPath;
  throw new TroupeError(
    'sandbox.unavailable',
    `${tool} was not run: it runs only inside an OS sandbox, and ${status.reason ?? 'the sandbox is unavailable'}. ${SANDBOX_INSTALL_HINT} Do the task without ${tool}.`,
    { details: { reason: status.reason } },
  );
}

/** The secret paths to hide for a given HOME. */
export function defaultHiddenPaths(home: string | undefined): string[] {
  if (home === undefined || !path.isAbsolute(home)) return [];
  return DEFAULT_HIDDEN_HOME_PATHS.map((entry) => path.join(home, entry));
}

/**
 * The bwrap argument list that runs `spec.program` in the sandbox. Mount
 * order matters: later mounts sit on top of earlier ones, so the workspace
 * bind comes after the private /tmp (a workspace under /tmp stays visible).
 */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const args = [
    ...['--ro-bind', '/', '/'],
    ...['--dev', '/dev'],
    ...['--proc', '/proc'],
    ...['--tmpfs', '/tmp'],
  ];
  const hidden = spec.hiddenPaths ?? defaultHiddenPaths(spec.env['HOME'] ?? os.homedir());
  for (const secret of hidden) {
    if (!existsSync(secret) || isInsideOrEqual(spec.workspace, secret)) continue;
    // A folder becomes an empty tmpfs; a file is replaced by /dev/null.
    args.push(...(isDirectory(secret) ? ['--tmpfs', secret] : ['--ro-bind', '/dev/null', secret]));
  }
  args.push('--bind', spec.workspace, spec.workspace);
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (spec.allowNetwork !== true) args.push('--unshare-net');
  args.push('--die-with-parent', '--new-session', '--clearenv');
  for (const [name, value] of Object.entries(spec.env)) args.push('--setenv', name, value);
  args.push('--chdir', spec.cwd, '--', spec.program, ...spec.args);
  return args;
}

function isInsideOrEqual(root: string, candidate: string): boolean {
  return (
    candidate === root ||
    candidate.startsWith(`${root}${path.sep}`) ||
    root.startsWith(`${candidate}${path.sep}`)
  );
}

function isDirectory(candidate: string): boolean {
  try {
    return statSync(candidate).isDirectory();
  } catch {
    return false;
  }
}
