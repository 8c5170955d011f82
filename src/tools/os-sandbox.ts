import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { TroupeError } from '../errors.js';
import { lazyBuiltin } from '../util/lazy-builtin.js';

// Loaded on the first probe: most threads never run a program (see lazy-builtin.ts).
const loadChildProcess = lazyBuiltin<typeof import('node:child_process')>('node:child_process');

/**
 * The OS sandbox for exec tools (shell, python) and stdio MCP servers:
 * bubblewrap, as Claude Code and Codex use on Linux. The child sees a
 * minimal filesystem: the system folders programs need (read-only), the
 * workspace (writable only when the tools may write), a private /tmp and
 * HOME, a fresh /proc; nothing else of the host (no other homes, /root,
 * /var, /srv, /opt, /mnt, /run, other projects). It runs in new user, PID,
 * network, IPC and UTS namespaces as a non-root user without capabilities,
 * in a new session, dies with its parent, and runs under resource limits
 * (prlimit from util-linux). See docs/SECURITY.md.
 */

/** Whether bubblewrap can start on this machine, and why not. */
export interface SandboxStatus {
  available: boolean;
  /** Absolute path of bwrap, when found. */
  bwrapPath?: string | undefined;
  /** Absolute path of prlimit (util-linux), which applies the resource limits. */
  prlimitPath?: string | undefined;
  /** Why the sandbox is unavailable, for the refusal message. */
  reason?: string | undefined;
}

/** Options for probing and building the sandbox. */
export interface OsSandboxOptions {
  /** Path of the bwrap binary (default: looked up on PATH, then /usr/bin/bwrap). */
  bwrapPath?: string | undefined;
}

/** Resource limits for one sandboxed program (and everything it starts). */
export interface ExecLimits {
  /** CPU seconds (RLIMIT_CPU), summed over the time the program runs. */
  cpuSeconds: number;
  /** Address space per process, bytes (RLIMIT_AS). */
  memoryBytes: number;
  /** Processes and threads of the sandbox user (RLIMIT_NPROC). */
  processes: number;
  /** Largest file a process may write, bytes (RLIMIT_FSIZE). */
  fileSizeBytes: number;
  /** Open file descriptors per process (RLIMIT_NOFILE). */
  openFiles: number;
  /** Size of the private /tmp (a tmpfs, in memory), bytes. */
  tmpBytes: number;
}

/** The limits every exec tool runs under unless the run sets others (`--exec-limit`). */
export const DEFAULT_EXEC_LIMITS: Readonly<ExecLimits> = Object.freeze({
  cpuSeconds: 120,
  memoryBytes: 2 * 1024 ** 3,
  processes: 256,
  fileSizeBytes: 256 * 1024 ** 2,
  openFiles: 1024,
  tmpBytes: 256 * 1024 ** 2,
});

/** What to run inside the sandbox. */
export interface SandboxSpec {
  /** Absolute path of the program (resolved outside the sandbox). */
  program: string;
  args: readonly string[];
  /** Absolute real path of the workspace: mounted read-only, unless listed in `writable`. */
  workspace: string;
  /** Absolute working directory, inside the workspace. */
  cwd: string;
  /** The complete, already scrubbed environment of the child (HOME and TMPDIR are set here). */
  env: Readonly<Record<string, string>>;
  /** Absolute real paths mounted read-write (the workspace, or the run's output folder). */
  writable?: readonly string[];
  /**
   * Absolute paths that exist and are mounted read-only on top of the writable
   * ones (protected paths: .git, .envrc …; see protected-paths.ts).
   */
  readOnlyOver?: readonly string[];
  /** More absolute folders mounted read-only (a program installed outside /usr). */
  readOnly?: readonly string[];
  /** Keep the host's network (stdio MCP servers with the network tier only). Default false. */
  shareNetwork?: boolean;
  /** Resource limits; applied with `prlimitPath`. */
  limits?: ExecLimits;
  /** prlimit's absolute path (from the probe); without it no rlimits are set. */
  prlimitPath?: string | undefined;
  /** Absolute paths of secret files and folders to hide when a mount would show them. */
  hiddenPaths?: readonly string[];
  /** More read-only mounts (source on the host, target in the sandbox), made after /tmp. */
  mounts?: readonly { source: string; target: string }[];
  /** A program and arguments that run first and start the rest (the egress bridge). */
  wrapper?: readonly string[];
  /**
   * Report the sandbox's first process on fd 3 and wait for a byte on fd 4
   * before starting anything in it (its mounts are made by then), so the
   * caller can move it into a pids cgroup and check its mounts first (see
   * pids-cgroup.ts, mount-check.ts and runProcess's `gate`).
   */
  holdBeforeStart?: boolean;
}

/** How to install the sandbox, for refusal messages. */
export const SANDBOX_INSTALL_HINT =
  'Install bubblewrap and util-linux (Debian/Ubuntu: `apt-get install bubblewrap util-linux`; Fedora: `dnf install bubblewrap util-linux`) on a kernel that allows unprivileged user namespaces, or rerun with --unsafe-no-sandbox to run exec tools without an OS sandbox (not recommended).';

/** Where HOME is inside the sandbox: a folder in the private /tmp. */
export const SANDBOX_HOME = '/tmp/home';

/** Credential files and folders under HOME hidden if a mount would show them. */
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

/** Host folders the sandbox mounts read-only: programs and their libraries. */
export const SYSTEM_READ_ONLY: readonly string[] = ['/usr'];

/** Top-level names that are symlinks into /usr on merged-/usr systems, or folders elsewhere. */
const ROOT_LINKS: readonly string[] = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** Files and folders of /etc that programs need (libraries, certificates, time zone, git, python). */
export const ETC_READ_ONLY: readonly string[] = [
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/alternatives',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/ca-certificates.conf',
  '/etc/pki',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/host.conf',
  '/etc/gai.conf',
  '/etc/gitconfig',
  '/etc/mime.types',
  '/etc/magic',
  '/etc/magic.mime',
  '/etc/os-release',
  '/etc/debian_version',
  '/etc/python3',
  '/etc/locale.alias',
];

/** Folders in which exec tools look up programs first (they are inside the sandbox view). */
export const SYSTEM_BIN_DIRS: readonly string[] = ['/usr/local/bin', '/usr/bin', '/bin'];

const probes = new Map<string, Promise<SandboxStatus>>();

/** Finds bwrap: `options.bwrapPath`, else PATH, else /usr/bin/bwrap. */
export function findBwrap(options: OsSandboxOptions = {}): string | undefined {
  if (options.bwrapPath !== undefined) return options.bwrapPath;
  return findSystemProgram('bwrap');
}

function findSystemProgram(name: string): string | undefined {
  const directories = (process.env['PATH'] ?? '').split(path.delimiter).filter(path.isAbsolute);
  for (const directory of [...SYSTEM_BIN_DIRS, ...directories]) {
    const candidate = path.join(directory, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Checks once per bwrap path (cached) whether bubblewrap can start here
 * with the namespaces the sandbox uses, and finds prlimit. Never throws.
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
  const prlimitPath = findSystemProgram('prlimit');
  if (prlimitPath === undefined) {
    return Promise.resolve({
      available: false,
      bwrapPath,
      reason: 'prlimit (util-linux), which sets the resource limits, is not installed',
    });
  }
  const args = [
    ...systemMounts(),
    ...['--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'],
    ...namespaceFlags(false),
    ...['--', prlimitPath, '--nofile=64', '--', 'true'],
  ];
  return new Promise((resolve) => {
    loadChildProcess().execFile(
      bwrapPath,
      args,
      { timeout: 10_000, env: { PATH: '/usr/bin:/bin' } },
      (error, _stdout, stderr) => {
        if (error === null) {
          resolve({ available: true, bwrapPath, prlimitPath });
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
 * start; returns the probe (bwrap and prlimit paths).
 */
export async function requireSandbox(
  tool: string,
  options: OsSandboxOptions = {},
): Promise<SandboxStatus & { bwrapPath: string }> {
  const status = await probeSandbox(options);
  if (status.available && status.bwrapPath !== undefined) {
    return { ...status, bwrapPath: status.bwrapPath };
  }
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
 * The folder to mount read-only so that `program` runs inside the sandbox:
 * undefined when it lies in the system folders already, else its
 * installation prefix (the parent of its `bin/`, as for nvm or pyenv).
 */
export function programMount(program: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(program);
  } catch {
    return undefined;
  }
  if (SYSTEM_READ_ONLY.some((root) => isInsideOrEqual(root, real))) return undefined;
  const folder = path.dirname(real);
  const prefix = path.basename(folder) === 'bin' ? path.dirname(folder) : folder;
  return prefix === '/' ? folder : prefix;
}

function systemMounts(): string[] {
  const args: string[] = [];
  for (const root of SYSTEM_READ_ONLY) args.push('--ro-bind', root, root);
  for (const link of ROOT_LINKS) {
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(link);
    } catch {
      continue;
    }
    if (stats.isSymbolicLink()) args.push('--symlink', readlinkSync(link), link);
    else if (stats.isDirectory()) args.push('--ro-bind', link, link);
  }
  for (const entry of ETC_READ_ONLY) args.push('--ro-bind-try', entry, entry);
  return args;
}

// The host uid, unless it is root: root in the sandbox would own every root-owned file.
function sandboxUid(): string {
  const uid = process.getuid?.() ?? 1000;
  return String(uid === 0 ? 1000 : uid);
}

function sandboxGid(): string {
  const gid = process.getgid?.() ?? 1000;
  return String(gid === 0 ? 1000 : gid);
}

function namespaceFlags(shareNetwork: boolean): string[] {
  return [
    '--unshare-all',
    ...(shareNetwork ? ['--share-net'] : []),
    ...['--unshare-user', '--disable-userns', '--uid', sandboxUid(), '--gid', sandboxGid()],
    '--die-with-parent',
    '--new-session',
  ];
}

/** The prlimit arguments for `limits`, before `--` and the program. */
export function prlimitArgs(limits: ExecLimits): string[] {
  const whole = (value: number): number => Math.max(1, Math.floor(value));
  return [
    // Soft below hard: the soft limit sends SIGXCPU (reported as the CPU limit), the hard one SIGKILL.
    `--cpu=${whole(limits.cpuSeconds)}:${whole(limits.cpuSeconds) + 2}`,
    `--as=${whole(limits.memoryBytes)}`,
    `--nproc=${whole(limits.processes)}`,
    `--fsize=${whole(limits.fileSizeBytes)}`,
    `--nofile=${whole(limits.openFiles)}`,
  ];
}

/**
 * The bwrap argument list that runs `spec.program` in the sandbox. Mount
 * order matters: later mounts sit on top of earlier ones, so the private
 * /tmp comes before the workspace (a workspace under /tmp stays visible),
 * and the read-only protected paths come after the writable folders.
 */
export function bwrapArgs(spec: SandboxSpec): string[] {
  const args = [
    ...(spec.holdBeforeStart === true ? ['--info-fd', '3', '--block-fd', '4'] : []),
    ...systemMounts(),
    ...['--dev', '/dev', '--proc', '/proc'],
  ];
  const limits = spec.limits ?? DEFAULT_EXEC_LIMITS;
  args.push('--size', String(Math.max(1024 * 1024, Math.floor(limits.tmpBytes))));
  args.push('--tmpfs', '/tmp', '--dir', SANDBOX_HOME);
  for (const mount of spec.mounts ?? []) args.push('--ro-bind', mount.source, mount.target);
  const mounted: string[] = [...SYSTEM_READ_ONLY];
  for (const folder of spec.readOnly ?? []) {
    if (mounted.some((root) => isInsideOrEqual(root, folder))) continue;
    args.push('--ro-bind', folder, folder);
    mounted.push(folder);
  }
  args.push('--ro-bind', spec.workspace, spec.workspace);
  mounted.push(spec.workspace);
  for (const folder of spec.writable ?? []) {
    args.push('--bind', folder, folder);
    mounted.push(folder);
  }
  for (const entry of spec.readOnlyOver ?? []) args.push('--ro-bind', entry, entry);
  for (const secret of spec.hiddenPaths ?? []) {
    if (!existsSync(secret) || !mounted.some((root) => isInside(root, secret))) continue;
    // A folder becomes an empty tmpfs; a file is replaced by /dev/null.
    args.push(...(isDirectory(secret) ? ['--tmpfs', secret] : ['--ro-bind', '/dev/null', secret]));
  }
  args.push(...namespaceFlags(spec.shareNetwork === true), '--clearenv');
  const env = { ...spec.env, HOME: SANDBOX_HOME, TMPDIR: '/tmp' };
  for (const [name, value] of Object.entries(env)) args.push('--setenv', name, value);
  args.push('--chdir', spec.cwd, '--', ...(spec.wrapper ?? []));
  if (spec.prlimitPath !== undefined) args.push(spec.prlimitPath, ...prlimitArgs(limits), '--');
  args.push(spec.program, ...spec.args);
  return args;
}

function isInsideOrEqual(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(`${root}${path.sep}`);
}

function isInside(root: string, candidate: string): boolean {
  return candidate.startsWith(`${root}${path.sep}`);
}

function isDirectory(candidate: string): boolean {
  try {
    return statSync(candidate).isDirectory();
  } catch {
    return false;
  }
}
