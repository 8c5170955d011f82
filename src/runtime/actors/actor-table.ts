import type { ActorRecord } from './actor.js';

/** A node of the agent tree: an actor, or a root that runs outside the pool (the coordinator). */
export interface TreeNode {
  depth: number;
  /** The result-store key (the agent id when results are not stored). */
  key: string;
  children: Set<string>;
}

/**
 * The run's agent tree: actor records by id, the roots that run outside the
 * pool, and the per-role counters behind `<role>-<n>` ids.
 */
export class ActorTable {
  readonly #records = new Map<string, ActorRecord>();
  readonly #roots = new Map<string, TreeNode>();
  readonly #counters = new Map<string, number>();

  /** The next id for `role`: `researcher-1`, `researcher-2`, … unique in the run. */
  nextId(role: string): string {
    const n = (this.#counters.get(role) ?? 0) + 1;
    this.#counters.set(role, n);
    return `${role}-${n}`;
  }

  /** Adds an actor and links it under its parent. */
  add(record: ActorRecord): void {
    this.#records.set(record.id, record);
    if (record.parentId !== undefined) this.node(record.parentId).children.add(record.id);
  }

  /** The actor with this id. */
  get(id: string): ActorRecord | undefined {
    return this.#records.get(id);
  }

  /** Every actor, in spawn order. */
  records(): IterableIterator<ActorRecord> {
    return this.#records.values();
  }

  /** Actors not finished yet. */
  live(): ActorRecord[] {
    return [...this.#records.values()].filter((record) => record.state !== 'finished');
  }

  /** True when `id` names an actor or a root. */
  has(id: string): boolean {
    return this.#records.has(id) || this.#roots.has(id);
  }

  /** Adds a root that runs outside the pool, at depth 0. */
  addRoot(id: string, key: string): void {
    if (!this.has(id)) this.#roots.set(id, { depth: 0, key, children: new Set() });
  }

  /** The first root (the coordinator when there is one). */
  firstRoot(): string | undefined {
    return this.#roots.keys().next().value;
  }

  /** The tree node of `id`; an id never seen becomes a root. */
  node(id: string): TreeNode {
    const record = this.#records.get(id);
    if (record !== undefined) {
      return { depth: record.depth, key: record.key ?? record.id, children: record.children };
    }
    let root = this.#roots.get(id);
    if (root === undefined) {
      root = { depth: 0, key: id, children: new Set() };
      this.#roots.set(id, root);
    }
    return root;
  }

  /** The live children of `id`. */
  liveChildren(id: string): ActorRecord[] {
    const ids = this.#records.get(id)?.children ?? this.#roots.get(id)?.children ?? new Set();
    const children: ActorRecord[] = [];
    for (const childId of ids) {
      const child = this.#records.get(childId);
      if (child !== undefined && child.state !== 'finished') children.push(child);
    }
    return children;
  }
}
