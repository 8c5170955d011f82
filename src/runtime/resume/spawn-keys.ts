import { sha256Hex } from '../../util/sha256.js';

/**
 * Stable keys for spawned agents: a hash of the role, the task, the parent's
 * key and how many times that same triple was spawned before in the run, so
 * a resumed run that spawns the same things in the same order finds the same
 * keys (for stored results and for the journal).
 */
export class SpawnKeys {
  readonly #seen = new Map<string, number>();

  /** The key of the next spawn of (role, task) under a parent whose key is `parentKey`. */
  next(role: string, task: string, parentKey: string): string {
    const triple = JSON.stringify([role, task, parentKey]);
    const occurrence = this.#seen.get(triple) ?? 0;
    this.#seen.set(triple, occurrence + 1);
    return sha256Hex(`${triple}#${occurrence}`).slice(0, 32);
  }
}
