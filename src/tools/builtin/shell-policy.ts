import { TroupeError } from '../../errors.js';

/**
 * What the shell tool may run: an allowlist of programs, read-only git
 * subcommands, and patterns refused whatever the allowlist says. Checks are
 * on the parsed argument vector: there is no shell, so `;`, `&&`, `|`,
 * `$()` and backticks are plain characters, and a lone operator is refused
 * with a message saying so.
 */

/** Programs the shell tool allows by default: read-mostly, plus node and python3 (sandboxed). */
export const DEFAULT_SHELL_PROGRAMS: readonly string[] = [
  'ls',
  'cat',
  'head',
  'tail',
  'wc',
  'grep',
  'find',
  'sort',
  'uniq',
  'cut',
  'tr',
  'diff',
  'cmp',
  'echo',
  'printf',
  'date',
  'pwd',
  'stat',
  'file',
  'du',
  'basename',
  'dirname',
  'realpath',
  'sha256sum',
  'md5sum',
  'git',
  'node',
  'python3',
];

/** Git subcommands allowed by default: they read the repository and change nothing. */
export const DEFAULT_GIT_SUBCOMMANDS: readonly string[] = [
  'status',
  'log',
  'show',
  'diff',
  'ls-files',
  'ls-tree',
  'rev-parse',
  'rev-list',
  'blame',
  'grep',
  'describe',
  'shortlog',
  'cat-file',
  'show-ref',
  'branch',
  'tag',
  'remote',
];

/** The shell tool's allowlists. */
export interface ShellPolicy {
  /** Programs that may run (bare names). */
  programs: readonly string[];
  /** Git subcommands that may run, when git is allowed. */
  gitSubcommands: readonly string[];
}

/** The default policy. */
export const DEFAULT_SHELL_POLICY: ShellPolicy = {
  programs: DEFAULT_SHELL_PROGRAMS,
  gitSubcommands: DEFAULT_GIT_SUBCOMMANDS,
};

// Never run, whatever the allowlist says: disk and system tools, privilege changes, and
// programs that run other programs (a shell or a wrapper would bypass the checks here).
const NEVER: ReadonlyMap<string, string> = new Map([
  ...['dd', 'mkfs', 'fdisk', 'sfdisk', 'parted', 'wipefs', 'mkswap', 'shred', 'blkdiscard'].map(
    (name) => [name, 'it writes to disks or devices'] as const,
  ),
  ...[
    'mount',
    'umount',
    'reboot',
    'shutdown',
    'halt',
    'poweroff',
    'insmod',
    'rmmod',
    'modprobe',
  ].map((name) => [name, 'it changes the system'] as const),
  ...['sudo', 'su', 'doas', 'chroot', 'pkexec'].map(
    (name) => [name, 'it changes privileges'] as const,
  ),
  ...['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish', 'csh', 'tcsh', 'busybox'].map(
    (name) =>
      [name, 'it is a shell, and shell text is never run; call the program directly'] as const,
  ),
  ...['env', 'xargs', 'nohup', 'setsid', 'timeout', 'nice', 'stdbuf', 'watch', 'eval', 'exec'].map(
    (name) => [name, 'it runs other programs, which would bypass the allowlist'] as const,
  ),
]);

const SHELL_OPERATORS = new Set([
  ';',
  '&&',
  '||',
  '|',
  '|&',
  '&',
  '>',
  '>>',
  '<',
  '<<',
  '2>',
  '2>&1',
  '&>',
]);
const PROGRAM_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;
const DEVICE_PATH = /(?:^|=)\/dev\/(?!null$|stdin$|stdout$|stderr$)/;

function refuse(message: string): never {
  throw new TroupeError('tool.refused', message);
}

/**
 * Throws `tool.refused` with the reason when `program args` must not run:
 * not a bare program name, not on the allowlist, a never-run program, a
 * shell operator as an argument, a recursive delete or permission change,
 * a device path, a find action that deletes or runs programs, or a git
 * command that writes.
 */
export function checkShellCommand(
  program: string,
  args: readonly string[],
  policy: ShellPolicy,
): void {
  if (!PROGRAM_NAME.test(program)) {
    const hint = program.includes('/')
      ? 'Give a bare program name such as "ls", not a path.'
      : 'Give one program name such as "ls" and put every argument in args.';
    refuse(
      `${JSON.stringify(program.slice(0, 100))} is not a program name. ${hint} Commands run without a shell: pipes, ;, &&, redirects, $(...) and backticks do not work.`,
    );
  }
  const base = program.startsWith('mkfs.') ? 'mkfs' : program;
  const never = NEVER.get(base);
  if (never !== undefined) refuse(`${program} is never run by the shell tool: ${never}.`);
  if (!policy.programs.includes(program)) {
    refuse(
      `${program} is not on the shell allowlist, so it was not run. Allowed programs: ${policy.programs.join(', ')}.`,
    );
  }
  for (const arg of args) {
    if (SHELL_OPERATORS.has(arg)) {
      refuse(
        `The argument ${JSON.stringify(arg)} is a shell operator, but commands run without a shell: make one call per program and combine the results yourself.`,
      );
    }
    if (DEVICE_PATH.test(arg)) {
      refuse(
        `The argument ${JSON.stringify(arg.slice(0, 100))} names a device; device access is refused.`,
      );
    }
  }
  checkProgramArgs(program, args, policy);
}

function hasShortFlag(args: readonly string[], letters: string): boolean {
  return args.some(
    (arg) => /^-[A-Za-z]+$/.test(arg) && [...letters].some((letter) => arg.includes(letter)),
  );
}

function checkProgramArgs(program: string, args: readonly string[], policy: ShellPolicy): void {
  switch (program) {
    case 'rm':
    case 'rmdir':
      if (
        hasShortFlag(args, 'rR') ||
        args.includes('--recursive') ||
        args.includes('--no-preserve-root')
      ) {
        refuse('Recursive deletes are refused. Delete single files, one by one, if you must.');
      }
      if (args.some((arg) => ['/', '*', '~', '.', '..'].includes(arg))) {
        refuse('Deleting /, ~, ., .. or * is refused.');
      }
      return;
    case 'chmod':
    case 'chown':
    case 'chgrp':
      if (hasShortFlag(args, 'R') || args.includes('--recursive') || args.includes('/')) {
        refuse(`Recursive ${program} and ${program} on / are refused.`);
      }
      return;
    case 'find': {
      const action = args.find((arg) =>
        [
          '-delete',
          '-exec',
          '-execdir',
          '-ok',
          '-okdir',
          '-fprint',
          '-fprint0',
          '-fprintf',
          '-fls',
        ].includes(arg),
      );
      if (action !== undefined) {
        refuse(
          `find ${action} is refused: it deletes, writes or runs other programs. Use find to list only.`,
        );
      }
      return;
    }
    case 'git':
      checkGit(args, policy);
      return;
    default:
      return;
  }
}

const GIT_WRITE_FLAGS = new Set([
  '-d',
  '-D',
  '--delete',
  '-m',
  '-M',
  '--move',
  '-c',
  '-C',
  '--copy',
  '-f',
  '--force',
  '-a',
  '-s',
  '-u',
  '-F',
  '--set-upstream-to',
  '--unset-upstream',
  '--edit-description',
]);

function checkGit(args: readonly string[], policy: ShellPolicy): void {
  const [subcommand, ...rest] = args;
  if (subcommand === undefined || subcommand.startsWith('-')) {
    refuse(
      'git needs a subcommand first (git log, git status …); git options before the subcommand (-c, -C, --git-dir …) are refused.',
    );
  }
  if (!policy.gitSubcommands.includes(subcommand)) {
    refuse(
      `git ${subcommand} is refused: only subcommands that read the repository are allowed (${policy.gitSubcommands.join(', ')}).`,
    );
  }
  const risky = rest.find(
    (arg) =>
      /^--(?:output|ext-diff|exec|upload-pack|receive-pack|textconv)(?:=|$)/.test(arg) ||
      /^--(?:force|force-with-lease|mirror|hard|delete)(?:=|$)/.test(arg),
  );
  if (risky !== undefined)
    refuse(`git ${subcommand} ${risky} is refused: it writes or runs programs.`);
  if (subcommand === 'push' && rest.some((arg) => arg === '-f' || arg.startsWith('+'))) {
    refuse('Force pushes are refused.');
  }
  if (subcommand === 'clean' && hasShortFlag(rest, 'fdxX'))
    refuse('git clean is refused: it deletes files.');
  if (subcommand === 'branch' || subcommand === 'tag') {
    const listing = rest.includes('-l') || rest.includes('--list');
    const writes = rest.some((arg) => GIT_WRITE_FLAGS.has(arg));
    const positional = rest.some((arg) => !arg.startsWith('-'));
    if (writes || (positional && !listing)) {
      refuse(
        `git ${subcommand} may only list (git ${subcommand} --list [pattern]); creating, moving or deleting is refused.`,
      );
    }
  }
  if (subcommand === 'remote') {
    const lists =
      rest.length === 0 || (rest.length === 1 && ['-v', '--verbose'].includes(rest[0] ?? ''));
    const getsUrl = rest.length === 2 && rest[0] === 'get-url';
    if (!lists && !getsUrl)
      refuse('git remote may only list (git remote -v, git remote get-url <name>).');
  }
}

/**
 * Git arguments that keep a repository's own config from running programs
 * (pager, fsmonitor, hooks, ssh, external diff and textconv drivers).
 */
export function safeGitArgs(args: readonly string[]): string[] {
  const [subcommand, ...rest] = args;
  if (subcommand === undefined) return [...GIT_SAFE_PREFIX];
  const diffing = ['diff', 'show', 'log'].includes(subcommand)
    ? ['--no-ext-diff', '--no-textconv']
    : [];
  return [...GIT_SAFE_PREFIX, subcommand, ...diffing, ...rest];
}

const GIT_SAFE_PREFIX: readonly string[] = [
  '--no-pager',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.pager=cat',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.sshCommand=false',
  '-c',
  'protocol.allow=never',
];
