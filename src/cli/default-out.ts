import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where run folders go when `--out` is not given: `$XDG_STATE_HOME/troupe/runs`,
 * else `~/.local/state/troupe/runs` (the XDG base directory convention for
 * state, beside the chat history). Never inside the workspace: with the
 * default `--workspace .`, a `./troupe-runs` folder made each run's agents
 * read the traces and reports of the runs before it as material.
 */
export function defaultOutDir(env: NodeJS.ProcessEnv): string {
  const state = env['XDG_STATE_HOME']?.trim();
  if (state !== undefined && state !== '') return join(state, 'troupe', 'runs');
  const home = env['HOME']?.trim();
  return join(
    home === undefined || home === '' ? homedir() : home,
    '.local',
    'state',
    'troupe',
    'runs',
  );
}

/** The help of `--out` for commands that write runs, naming the default. */
export const OUT_FLAG_HELP =
  'where run folders go (default: $XDG_STATE_HOME/troupe/runs, else ~/.local/state/troupe/runs; outside the workspace)';
/** The help of `--out` for commands that read runs. */
export const OUT_READ_FLAG_HELP =
  'where run folders are (default: $XDG_STATE_HOME/troupe/runs, else ~/.local/state/troupe/runs)';
