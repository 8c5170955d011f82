import type { DelegateInput } from '../../roles/delegation-tools.js';
import type { ActorResult, AgentRef } from './actor.js';

/** What a fan-out needs from the runtime: spawning a batch (publishers first) under one parent. */
export interface BatchSpawner {
  spawnBatch(parentId: string, tasks: readonly { role: string; task: string }[]): AgentRef[];
}

/**
 * Runs a fan-out under `parentId` and returns every result, in task order.
 * all_settled never cancels a sibling; quorum cancels the rest once k
 * succeeded (or once k can no longer succeed); fail_fast cancels the rest at
 * the first failure. Resolves, never rejects: misuse becomes failed results.
 */
export async function runDelegation(
  spawner: BatchSpawner,
  parentId: string,
  input: DelegateInput,
  signal?: AbortSignal,
): Promise<ActorResult[]> {
  const policy = input.policy ?? 'all_settled';
  const refs = spawner.spawnBatch(parentId, input.tasks);
  const detach = cancelOnAbort(refs, signal);
  try {
    return await settle(refs, policy, input.quorum);
  } finally {
    detach();
  }
}

// The caller stopped (its signal aborted): every sub-agent of the fan-out is
// cancelled at once, so the results come back as soon as they have stopped.
function cancelOnAbort(refs: readonly AgentRef[], signal: AbortSignal | undefined): () => void {
  if (signal === undefined) return () => {};
  const onAbort = (): void => {
    for (const ref of refs) ref.cancel('the delegating agent was stopped');
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

async function settle(
  refs: readonly AgentRef[],
  policy: DelegateInput['policy'] & string,
  quorum: number | undefined,
): Promise<ActorResult[]> {
  if (policy === 'all_settled') return Promise.all(refs.map((ref) => ref.result));

  const needed = policy === 'quorum' ? Math.min(quorum ?? refs.length, refs.length) : refs.length;
  let succeeded = 0;
  let failed = 0;
  let stopped = false;
  const stop = (reason: string): void => {
    if (stopped) return;
    stopped = true;
    for (const ref of refs) ref.cancel(reason);
  };
  await Promise.all(
    refs.map(async (ref) => {
      const result = await ref.result;
      if (stopped) return;
      if (result.status === 'completed') succeeded += 1;
      else failed += 1;
      if (policy === 'fail_fast' && result.status !== 'completed') {
        stop(`sibling ${result.agentId} ${result.status}; fail-fast policy`);
      } else if (policy === 'quorum' && succeeded >= needed) {
        stop(`quorum of ${needed} reached`);
      } else if (policy === 'quorum' && refs.length - failed < needed) {
        stop(`quorum of ${needed} can no longer be reached`);
      }
    }),
  );
  return Promise.all(refs.map((ref) => ref.result));
}
