import { plainError, TroupeError } from '../../errors.js';
import type { EventPayload } from '../../events/schema.js';
import type { AnyRole } from '../../roles/role.js';
import type { Router } from '../messaging/router.js';
import type { ReusableResult } from '../resume/result-store.js';
import type { AgentRef } from './actor.js';
import { reusedRef } from './actor-ref.js';

/** What resume replays need from the runtime. */
export interface ResumeReplayDeps {
  router: Router;
  emit(agentId: string, payload: EventPayload): void;
}

/**
 * Spawns answered from an earlier run's stored results (resume), and the
 * stored messages of reused publishers, published again while they replay.
 */
export class ResumeReplay {
  readonly #deps: ResumeReplayDeps;
  // Reused publishers replaying their messages (resume): who they are, for their events.
  readonly #reused = new Map<string, { role: string; parentId: string | undefined }>();
  readonly #replays = new Set<Promise<void>>();

  constructor(deps: ResumeReplayDeps) {
    this.#deps = deps;
  }

  /** The role and parent of a reused publisher still replaying, for its events. */
  who(agentId: string): { role: string; parentId: string | undefined } | undefined {
    return this.#reused.get(agentId);
  }

  /** The replays not yet delivered (none of them rejects). */
  pending(): Promise<void>[] {
    return [...this.#replays];
  }

  /**
   * Answers a spawn from an earlier run's stored result. A publisher's stored
   * messages are published again to the current subscribers (in order,
   * validated as always, from its id); it counts as a live publisher until
   * they are delivered, so the close notice comes behind them, and its
   * result resolves then. The replay waits a turn, so the subscribers spawned
   * in the same batch are there to receive it.
   */
  reuse(id: string, role: AnyRole, parentId: string | undefined, stored: ReusableResult): AgentRef {
    const { router, emit } = this.#deps;
    const ref = reusedRef(id, stored.result);
    if (stored.published.length === 0) return ref;
    this.#reused.set(id, { role: role.name, parentId });
    router.addPublisher(id, role.publishes);
    const replay = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => router.replay(id, stored.published))
      .then((refused) => {
        for (const answer of refused) {
          emit(id, {
            type: 'callback.error',
            callback: 'resume replay',
            error: plainError(new TroupeError(answer.code ?? 'channel.unknown', answer.message)),
          });
        }
      })
      // Like every result, this one never rejects.
      .catch(() => undefined)
      .finally(() => {
        this.#reused.delete(id);
        this.#replays.delete(replay);
      });
    this.#replays.add(replay);
    return { ...ref, result: replay.then(() => ref.result) };
  }
}
