import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { type ActorResult, ActorResultSchema } from '../../roles/result.js';
import { createRedactor, redactStrings } from '../../util/redact.js';
import { type PublishedMessage, PublishedMessageSchema } from '../messaging/router.js';
import { SpawnKeys } from './spawn-keys.js';

/** One stored result on disk: `<dir>/<key>.json`. */
export const StoredResultSchema = z.object({
  v: z.literal(1),
  key: z.string(),
  role: z.string(),
  task: z.string(),
  parentKey: z.string(),
  result: ActorResultSchema.omit({ reused: true }),
  /**
   * What the actor published on channels, in order (validated payloads), so a
   * reuse can publish it again to subscribers that run again. Absent in files
   * written before it existed: such a publisher replays nothing.
   */
  published: z.array(PublishedMessageSchema).optional(),
});
export type StoredResult = z.infer<typeof StoredResultSchema>;

/** A stored result ready for reuse: the result (marked reused) and what to publish again. */
export interface ReusableResult {
  result: ActorResult;
  published: PublishedMessage[];
}

/**
 * Finished actors' results on disk, for resuming a run. A result's key is a
 * stable hash of its role, task and parent's key, plus how many times that
 * same triple was spawned before in the run, so a resumed run that spawns
 * the same things in the same order finds the same keys.
 */
export class ResultStore {
  readonly dir: string;
  readonly reuse: boolean;
  readonly #keys = new SpawnKeys();
  readonly #redact: (text: string) => string;
  readonly #mirror: ((key: string, stored: StoredResult) => void) | undefined;

  /**
   * `redact` (default: the secrets of `process.env` and well-known key
   * shapes) runs over every string stored: a key the model read in a
   * workspace document must not end up on disk in plain text.
   */
  constructor(options: {
    dir: string;
    reuse: boolean;
    redact?: (text: string) => string;
    /** Also keeps each stored result elsewhere (a NATS run's JetStream stream), already redacted. */
    mirror?: ((key: string, stored: StoredResult) => void) | undefined;
  }) {
    this.dir = options.dir;
    this.reuse = options.reuse;
    this.#redact = options.redact ?? createRedactor();
    this.#mirror = options.mirror;
  }

  /** The key of the next spawn of (role, task) under a parent whose key is `parentKey`. */
  nextKey(role: string, task: string, parentKey: string): string {
    return this.#keys.next(role, task, parentKey);
  }

  /** The completed result stored under `key` and its publications, when reuse is on and one exists. */
  get(key: string): ReusableResult | undefined {
    if (!this.reuse) return undefined;
    let text: string;
    try {
      text = readFileSync(join(this.dir, `${key}.json`), 'utf8');
    } catch {
      return undefined;
    }
    try {
      const stored = StoredResultSchema.parse(JSON.parse(text));
      if (stored.result.status !== 'completed') return undefined;
      return { result: { ...stored.result, reused: true }, published: stored.published ?? [] };
    } catch {
      // A torn or foreign file is as good as none: the actor runs again.
      return undefined;
    }
  }

  /**
   * Stores a completed result and what the actor published on channels
   * (atomically: a reader never sees half a file).
   */
  put(
    key: string,
    meta: { role: string; task: string; parentKey: string },
    result: ActorResult,
    published: readonly PublishedMessage[] = [],
  ): void {
    const stored: StoredResult = {
      v: 1,
      key,
      ...meta,
      result: {
        agentId: result.agentId,
        role: result.role,
        status: result.status,
        final: result.final,
        ...(result.output === undefined ? {} : { output: result.output }),
        ...(result.error === undefined ? {} : { error: result.error }),
        usage: result.usage,
        steps: result.steps,
      },
      ...(published.length === 0 ? {} : { published: [...published] }),
    };
    const redacted = redactStrings(stored, this.#redact) as StoredResult;
    writeStoredResult(this.dir, redacted);
    this.#mirror?.(key, redacted);
  }
}

/**
 * Writes a stored result as `<dir>/<key>.json`, atomically (a reader never
 * sees half a file); also how results kept elsewhere are restored.
 */
export function writeStoredResult(dir: string, stored: StoredResult): void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${stored.key}.json`);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(stored, null, 2)}\n`);
  renameSync(temporary, path);
}
