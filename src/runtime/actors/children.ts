import { errorMessage, isTroupeError, TroupeError } from '../../errors.js';
import { compactIds } from '../../roles/delegation-digest.js';
import { startedMessage } from '../../roles/delegation-tools.js';
import type { ChildAnswer, ChildRequest } from '../wire/protocol.js';
import type { ActorResult, AgentRef } from './actor.js';
import type { BatchSpawner } from './delegation.js';

/**
 * The results of the sub-agents `ids` among those a parent started (`refs`),
 * in the order asked; no ids means every one, in start order. An id it did
 * not start throws `tool.invalid_input` naming the ones it did.
 */
export async function waitForChildren(
  refs: ReadonlyMap<string, AgentRef>,
  ids: readonly string[],
  signal?: AbortSignal,
): Promise<ActorResult[]> {
  if (ids.length === 0 && refs.size === 0) {
    throw new TroupeError(
      'tool.invalid_input',
      'There is nothing to wait for: you have started no sub-agent yet.',
    );
  }
  const unknown = ids.filter((id) => !refs.has(id));
  if (unknown.length > 0) {
    throw new TroupeError(
      'tool.invalid_input',
      `Unknown agent id${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}. Started so far: ${compactIds([...refs.keys()]) || '(none)'}.`,
    );
  }
  const waited = ids.length === 0 ? [...refs.values()] : ids.map((id) => refs.get(id) as AgentRef);
  // A waiter that is stopped stops what it waits for: the results then come back at once.
  const onAbort = (): void => {
    for (const ref of waited) ref.cancel('the waiting agent was stopped');
  };
  if (signal?.aborted === true) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await Promise.all(waited.map((ref) => ref.result));
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Steers a sub-agent the parent started: resolves with what the model is
 * told once the message is in its mailbox. An unknown id throws
 * `tool.invalid_input`; a finished sub-agent, `runtime.closed`.
 */
export async function sendToChild(
  refs: ReadonlyMap<string, AgentRef>,
  agentId: string,
  message: string,
): Promise<string> {
  const ref = refs.get(agentId);
  if (ref === undefined)
    throw new TroupeError('tool.invalid_input', `Unknown agent id ${agentId}.`);
  await ref.send(message);
  return `Delivered to ${agentId}.`;
}

/** What WorkerChildren needs from the runtime. */
export interface WorkerChildrenDeps extends BatchSpawner {
  /** True when the actor's role may delegate. */
  mayDelegate(actorId: string): boolean;
  /** Every role name the runtime knows. */
  roleNames(): readonly string[];
}

/**
 * The main thread's side of the `spawn_agent`, `wait_agents` and
 * `send_message` tools of worker actors whose role may delegate: the
 * sub-agents each one started (with those tools or `delegate`), and the
 * answers to their requests, with the coordinator's semantics. Refusals
 * are answers, never throws.
 */
export class WorkerChildren {
  readonly #deps: WorkerChildrenDeps;
  readonly #refs = new Map<string, Map<string, AgentRef>>();

  constructor(deps: WorkerChildrenDeps) {
    this.#deps = deps;
  }

  /** Keeps the refs a parent started, so it can wait for and steer them; returns them. */
  track(parentId: string, refs: AgentRef[]): AgentRef[] {
    let map = this.#refs.get(parentId);
    if (map === undefined) {
      map = new Map();
      this.#refs.set(parentId, map);
    }
    for (const ref of refs) map.set(ref.id, ref);
    return refs;
  }

  /** Spawns a batch under `parentId` (publishers first) and keeps the refs. */
  spawnBatch(parentId: string, tasks: readonly { role: string; task: string }[]): AgentRef[] {
    return this.track(parentId, this.#deps.spawnBatch(parentId, tasks));
  }

  /** Forgets a parent's sub-agents (it finished: they are cancelled with it). */
  forget(parentId: string): void {
    this.#refs.delete(parentId);
  }

  /** Answers one request of actor `actorId`. Resolves, never rejects. */
  async answer(actorId: string, request: ChildRequest): Promise<ChildAnswer> {
    if (!this.#deps.mayDelegate(actorId)) {
      return {
        ok: false,
        code: 'tool.not_allowed',
        message: `${actorId} may not start sub-agents: its role does not delegate.`,
      };
    }
    const refs = this.#refs.get(actorId) ?? new Map<string, AgentRef>();
    try {
      switch (request.op) {
        case 'spawn': {
          const names = this.#deps.roleNames();
          if (!names.includes(request.role)) {
            throw new TroupeError(
              'tool.invalid_input',
              `Unknown role "${request.role}". Known roles: ${names.join(', ')}.`,
            );
          }
          const [ref] = this.spawnBatch(actorId, [{ role: request.role, task: request.task }]);
          if (ref === undefined) throw new TroupeError('internal', 'Nothing was started.');
          return { ok: true, message: startedMessage(ref.id), agentId: ref.id };
        }
        case 'wait': {
          const results = await waitForChildren(refs, request.ids);
          return { ok: true, message: `${results.length} finished.`, results };
        }
        case 'send':
          return { ok: true, message: await sendToChild(refs, request.agentId, request.message) };
      }
    } catch (error) {
      return {
        ok: false,
        code: isTroupeError(error) ? error.code : 'tool.failed',
        message: errorMessage(error),
      };
    }
  }
}
