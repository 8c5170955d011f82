import { z } from 'zod';
import { TroupeError } from '../errors.js';
import type { AnyTool } from '../tools/tool.js';
import { defineTool } from '../tools/tool.js';
import type { ActorResult, AgentRef } from './actor.js';

/** How a fan-out treats failures: wait for all, stop at k successes, or stop at the first failure. */
export const DelegationPolicySchema = z.enum(['all_settled', 'quorum', 'fail_fast']);
export type DelegationPolicy = z.infer<typeof DelegationPolicySchema>;

/** The arguments of the `delegate` tool; `roles` narrows `role` to an enum the model sees. */
export function delegateInputSchema(roles?: readonly [string, ...string[]]) {
  const role = roles === undefined ? z.string() : z.enum(roles);
  return DelegateInputSchema.extend({
    tasks: z
      .array(
        z.object({
          role: role.describe('The role of the sub-agent (see the role list).'),
          task: z.string().describe('The whole task for that sub-agent, self-contained.'),
        }),
      )
      .min(1)
      .describe('One entry per sub-agent; they all run in parallel.'),
  });
}

/** The arguments of the `delegate` tool. */
export const DelegateInputSchema = z.object({
  tasks: z
    .array(
      z.object({
        role: z.string().describe('The role of the sub-agent (see the role list).'),
        task: z.string().describe('The whole task for that sub-agent, self-contained.'),
      }),
    )
    .min(1)
    .describe('One entry per sub-agent; they all run in parallel.'),
  policy: DelegationPolicySchema.optional().describe(
    'all_settled (default): wait for every sub-agent, failures reported beside results. quorum: stop once `quorum` succeed. fail_fast: stop at the first failure.',
  ),
  quorum: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('With policy quorum: how many must succeed.'),
});
export type DelegateInput = z.infer<typeof DelegateInputSchema>;

/** What a fan-out needs from the runtime: spawning a batch (publishers first) under one parent. */
export interface BatchSpawner {
  spawnBatch(parentId: string, tasks: readonly { role: string; task: string }[]): AgentRef[];
}

/** What a worker actor's `delegate` tool asks the main thread to do. */
export interface DelegationRequester {
  spawn(actorId: string, input: DelegateInput): Promise<ActorResult[]>;
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
): Promise<ActorResult[]> {
  const policy = input.policy ?? 'all_settled';
  const refs = spawner.spawnBatch(parentId, input.tasks);
  if (policy === 'all_settled') return Promise.all(refs.map((ref) => ref.result));

  const needed =
    policy === 'quorum' ? Math.min(input.quorum ?? refs.length, refs.length) : refs.length;
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

/** The results of a fan-out as the delegating model reads them. */
export function formatDelegationResults(results: readonly ActorResult[]): string {
  return JSON.stringify(
    results.map((result) => ({
      agentId: result.agentId,
      role: result.role,
      status: result.status,
      ...(result.error === undefined ? {} : { error: result.error.message }),
      final: result.final,
      ...(result.output === undefined ? {} : { output: result.output }),
    })),
    null,
    2,
  );
}

/**
 * The delegation tool a worker actor whose role may delegate gets; it
 * round-trips to the main thread on behalf of the calling agent, so one
 * instance serves every actor of the role.
 */
export function delegationTools(requester: DelegationRequester): AnyTool[] {
  return [
    defineTool({
      name: 'delegate',
      description:
        'Hand tasks to sub-agents that run in parallel, and get every result back (failures are reported beside the results).',
      parameters: DelegateInputSchema,
      execute: async (input, context) => {
        if (input.policy === 'quorum' && input.quorum === undefined) {
          throw new TroupeError(
            'tool.invalid_input',
            'policy "quorum" needs `quorum` (how many must succeed).',
          );
        }
        return formatDelegationResults(await requester.spawn(context.agentId, input));
      },
    }),
  ];
}
