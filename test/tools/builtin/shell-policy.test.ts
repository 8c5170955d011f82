import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../../src/errors.js';
import {
  checkShellCommand,
  DEFAULT_SHELL_POLICY,
  type ShellPolicy,
  safeGitArgs,
} from '../../../src/tools/builtin/shell-policy.js';

const withRm: ShellPolicy = {
  ...DEFAULT_SHELL_POLICY,
  programs: [...DEFAULT_SHELL_POLICY.programs, 'rm', 'chmod', 'dd'],
};

function verdict(program: string, args: string[], policy = DEFAULT_SHELL_POLICY): string {
  try {
    checkShellCommand(program, args, policy);
    return 'allowed';
  } catch (error) {
    return isTroupeError(error, 'tool.refused') ? `refused: ${error.message}` : String(error);
  }
}

describe('checkShellCommand', () => {
  it.each([
    ['ls', ['-la']],
    ['grep', ['-rn', 'TODO', 'src']],
    ['git', ['log', '--oneline', '-5']],
    ['git', ['branch', '--list']],
    ['git', ['remote', '-v']],
    ['echo', ['$(touch pwned)', '`id`']],
    ['find', ['.', '-name', '*.md']],
    ['cat', ['/dev/null']],
  ])('allows %s %j', (program, args) => {
    expect(verdict(program, args)).toBe('allowed');
  });

  it.each([
    ['a program with shell text', 'ls; rm -rf .', [], /not a program name/],
    ['a program path', '/bin/rm', [], /not a path/],
    ['a program off the allowlist', 'curl', ['https://x'], /not on the shell allowlist/],
    ['a shell', 'bash', ['-c', 'id'], /shell text is never run/],
    ['a wrapper that runs programs', 'xargs', ['rm'], /bypass the allowlist/],
    ['dd even when allowlisted', 'dd', ['if=/dev/zero', 'of=x'], /writes to disks/],
    ['mkfs variants', 'mkfs.ext4', ['/dev/sda1'], /writes to disks/],
    ['a pipe operator', 'cat', ['a.txt', '|', 'sh'], /shell operator/],
    ['an && operator', 'echo', ['a', '&&', 'rm'], /shell operator/],
    ['a ; operator', 'echo', ['a', ';', 'id'], /shell operator/],
    ['a redirect', 'echo', ['x', '>', 'a.txt'], /shell operator/],
    ['a device path', 'cat', ['/dev/sda'], /names a device/],
    ['a device write argument', 'sort', ['-o', 'of=/dev/sda'], /names a device/],
    ['find -delete', 'find', ['.', '-delete'], /find -delete is refused/],
    ['find -exec', 'find', ['.', '-exec', 'rm', '{}', ';'], /shell operator|find -exec/],
    ['git push', 'git', ['push', '--force'], /only subcommands that read/],
    [
      'git options before the subcommand',
      'git',
      ['-c', 'core.pager=sh', 'log'],
      /options before the subcommand/,
    ],
    ['git log --output', 'git', ['log', '--output=x'], /writes or runs programs/],
    ['git diff --ext-diff', 'git', ['diff', '--ext-diff'], /writes or runs programs/],
    ['creating a branch', 'git', ['branch', 'evil'], /may only list/],
    ['deleting a tag', 'git', ['tag', '-d', 'v1'], /may only list/],
    ['adding a remote', 'git', ['remote', 'add', 'x', 'y'], /may only list/],
  ])('refuses %s', (_name, program, args, reason) => {
    expect(verdict(program, args)).toMatch(reason);
  });

  it.each([
    ['rm -rf', ['-rf', 'x']],
    ['rm -fR', ['-fR', 'x']],
    ['rm -r -f', ['-r', '-f', 'x']],
    ['rm --recursive', ['--recursive', 'x']],
    ['rm --no-preserve-root', ['--no-preserve-root', 'x']],
    ['rm of the root', ['/']],
    ['rm of everything', ['*']],
  ])('refuses %s even when rm is allowlisted', (_name, args) => {
    expect(verdict('rm', args, withRm)).toMatch(/refused/);
  });

  it('refuses a recursive chmod even when chmod is allowlisted', () => {
    expect(verdict('chmod', ['-R', '777', '.'], withRm)).toMatch(/Recursive chmod/);
    expect(verdict('chmod', ['644', 'a.txt'], withRm)).toBe('allowed');
  });

  it('allows a single-file rm when rm is allowlisted', () => {
    expect(verdict('rm', ['notes.tmp'], withRm)).toBe('allowed');
  });
});

describe('safeGitArgs', () => {
  it('disables pager, fsmonitor, hooks and external diff drivers', () => {
    const args = safeGitArgs(['diff', 'HEAD']);
    expect(args.slice(0, 1)).toEqual(['--no-pager']);
    expect(args).toContain('core.fsmonitor=false');
    expect(args.slice(-4)).toEqual(['diff', '--no-ext-diff', '--no-textconv', 'HEAD']);
  });
});
