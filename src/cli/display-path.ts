import { homedir } from 'node:os';
import { isAbsolute, relative, sep } from 'node:path';

/**
 * A path as a person reads it in the CLI's footers and hints: relative to
 * `cwd` when it is inside it, else with `~` for the home folder (`$HOME`, as
 * a shell expands it), else whole. Every form works pasted into a shell.
 *
 * @example
 * displayPath('/home/ada/.local/state/troupe/runs/r1/trace.jsonl', '/work', { HOME: '/home/ada' });
 * // '~/.local/state/troupe/runs/r1/trace.jsonl'
 */
export function displayPath(path: string, cwd: string, env: NodeJS.ProcessEnv): string {
  const inCwd = relative(cwd, path);
  if (inCwd !== '' && !inCwd.startsWith('..') && !isAbsolute(inCwd)) return inCwd;
  const home = env['HOME']?.trim() || homedir();
  if (home === '' || home === sep) return path;
  const inHome = relative(home, path);
  if (inHome === '') return '~';
  if (!inHome.startsWith('..') && !isAbsolute(inHome)) return `~${sep}${inHome}`;
  return path;
}
