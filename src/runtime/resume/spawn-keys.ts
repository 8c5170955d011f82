import { sha256Hex } from '../../util/sha256.js';

// A (role, task, parent) triple longer than this is counted under its digest, not its text: a
// run of many agents with long tasks would otherwise hold every task's text to its end.
const COUNTED_AS_TEXT_UP_TO = 64;

/**
 * Stable keys for spawned agents: a hash of the role, the task, the parent's
 * key and how many times that same triple was spawned before in the run, so
 * a resumed run that spawns the same things in the same order finds the same
 * keys (for stored results and for the journal).
 */
export class SpawnKeys {
  // Spawns so far per triple: by its JSON text when short, else by that text's digest (a JSON
  // array's text starts with `[`, so the two never meet), so each entry holds at most ~64 characters.
  readonly #seen = new Map<string, number>();

  /** The key of the next spawn of (role, task) under a parent whose key is `parentKey`. */
  next(role: string, task: string, parentKey: string): string {
    const triple = JSON.stringify([role, task, parentKey]);
    const counted = triple.length <= COUNTED_AS_TEXT_UP_TO ? triple : sha256Hex(triple);
    const occurrence = this.#seen.get(counted) ?? 0;
    this.#seen.set(counted, occurrence + 1);
    return sha256Hex(`${triple}#${occurrence}`).slice(0, 32);
  }
}
