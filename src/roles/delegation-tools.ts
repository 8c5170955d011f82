import { join } from 'node:path';
import { z } from 'zod';
import { TroupeError } from '../errors.js';
import { type AnyTool, defineTool } from '../tools/tool.js';
import { formatDelegationResults, saveDelegationResults } from './delegation-digest.js';
import type { ActorResult } from './result.js';

/** How a fan-out treats failures: wait for all, stop at k successes, or stop at the first failure. */
export const DelegationPolicySchema = z.enum(['all_settled', 'quorum', 'fail_fast']);
export type DelegationPolicy = z.infer<typeof DelegationPolicySchema>;

const TaskSchema = z.object({
  role: z.string().describe('The role of the sub-agent (see the role list).'),
  task: z.string().describe('The whole task for that sub-agent, self-contained.'),
});

/** The arguments of the `delegate` tool. */
export const DelegateInputSchema = z.object({
  tasks: z.array(TaskSchema).min(1).describe('One entry per sub-agent; they all run in parallel.'),
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

/** The arguments of the `delegate` tool; `roles` narrows `role` to an enum the model sees. */
export function delegateInputSchema(roles?: readonly [string, ...string[]]) {
  if (roles === undefined) return DelegateInputSchema;
  return DelegateInputSchema.extend({
    tasks: z
      .array(TaskSchema.extend({ role: z.enum(roles).describe('The role of the sub-agent.') }))
      .min(1)
      .describe('One entry per sub-agent; they all run in parallel.'),
  });
}

/** What `delegate` tells the model by default. */
export const DELEGATE_DESCRIPTION =
  'Hand tasks to sub-agents that run in parallel, and get every result back (failures are reported beside the results).';
/** What `spawn_agent` tells the model. */
export const SPAWN_AGENT_DESCRIPTION =
  'Start one sub-agent and return its id at once, without waiting; collect it later with wait_agents.';
/** What `wait_agents` tells the model. */
export const WAIT_AGENTS_DESCRIPTION =
  'Wait for sub-agents you started (with spawn_agent or delegate) and return their results: by ids (each whole), or a page of all of them, optionally only those of one status.';
/** What `send_message` tells the model. */
export const SEND_MESSAGE_DESCRIPTION =
  'Send a message to a running sub-agent; it reads it before its next model call.';

/** The model's answer to a started sub-agent. */
export function startedMessage(agentId: string): string {
  return `Started ${agentId}.`;
}

/**
 * What the four delegation tools need, for the agent `callerId` that calls
 * them. The coordinator implements it directly over the runtime; a worker
 * actor whose role may delegate implements it by a round trip to the main
 * thread. Each method may reject with a `TroupeError`, which the tool turns
 * into the model's error result.
 */
export interface Delegator {
  /** Runs a fan-out under `callerId` and resolves with every result, in task order. */
  delegate(callerId: string, input: DelegateInput, signal: AbortSignal): Promise<ActorResult[]>;
  /** Starts one sub-agent under `callerId`; resolves with its id. */
  spawn(callerId: string, role: string, task: string): Promise<string>;
  /** The results of sub-agents `callerId` started, in the order asked; no ids means every one, in start order. */
  wait(callerId: string, ids: readonly string[], signal: AbortSignal): Promise<ActorResult[]>;
  /** Steers a sub-agent `callerId` started; resolves with what the model is told. */
  send(callerId: string, agentId: string, message: string): Promise<string>;
}

/** How the delegation tools are shaped for one agent. */
export interface DelegationToolOptions {
  /** The roles it may delegate to: `role` becomes an enum the model sees. */
  roles?: readonly string[] | undefined;
  /** Replaces the default description of `delegate`. */
  delegateDescription?: string | undefined;
  /** The most characters a delegate or wait_agents result has (default DEFAULT_DIGEST_CHARS). */
  digestChars?: number | undefined;
}

/** What wait_agents pages through without ids (at most this many per call by default). */
const DEFAULT_PAGE = 100;

const WaitStatusSchema = z.enum(['completed', 'failed', 'timed_out', 'cancelled', 'not_completed']);

/** The arguments of the `wait_agents` tool. */
export const WaitInputSchema = z.object({
  ids: z
    .array(z.string())
    .min(1)
    .optional()
    .describe(
      'Agent ids, e.g. ["researcher-1"]. Without ids: every sub-agent you started, in start order.',
    ),
  status: WaitStatusSchema.optional().describe(
    'Only results with this status (not_completed: failed, timed out or cancelled).',
  ),
  offset: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('Skip this many of the chosen results (default 0), to page through many.'),
  limit: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(`At most this many results (default: all ids asked for, else ${DEFAULT_PAGE}).`),
});
export type WaitInput = z.infer<typeof WaitInputSchema>;

/**
 * One page of the results `wait_agents` waited for: those of `status`, from
 * `offset`, at most `limit`, as a digest that says which page it is and how
 * to ask for the next.
 */
export function formatWaitResults(
  results: readonly ActorResult[],
  input: WaitInput,
  maxChars?: number,
): string {
  const chosen =
    input.status === undefined
      ? results
      : results.filter((result) =>
          input.status === 'not_completed'
            ? result.status !== 'completed'
            : result.status === input.status,
        );
  const offset = input.offset ?? 0;
  const limit = input.limit ?? (input.ids === undefined ? DEFAULT_PAGE : chosen.length);
  const page = chosen.slice(offset, offset + limit);
  const which = input.status === undefined ? '' : ` ${input.status.replace('_', ' ')}`;
  if (page.length === 0) {
    return `No results here: ${chosen.length}${which} of the ${results.length} waited for, and offset ${offset} is past them.`;
  }
  const paged = page.length < chosen.length;
  const next = offset + page.length;
  const heading = paged
    ? `Results ${offset + 1}–${next} of ${chosen.length}${which} (of ${results.length} waited for).${next < chosen.length ? ` Next page: wait_agents ${JSON.stringify({ ...(input.status === undefined ? {} : { status: input.status }), offset: next })}.` : ''}`
    : undefined;
  return formatDelegationResults(page, { heading, maxChars });
}

/**
 * `delegate`, `spawn_agent`, `wait_agents` and `send_message`, written once
 * for every agent that may delegate. They act for the calling agent (its id
 * comes with the call), so one instance serves every agent of a role.
 */
export function delegationTools(
  delegator: Delegator,
  options: DelegationToolOptions = {},
): AnyTool[] {
  const roles =
    options.roles !== undefined && options.roles.length > 0
      ? (options.roles as readonly [string, ...string[]])
      : undefined;
  const roleSchema = roles === undefined ? z.string() : z.enum(roles);
  // Each agent's fan-outs are saved as <agentId>-1.jsonl, -2 and on.
  const calls = new Map<string, number>();
  const nextCall = (agentId: string): number => {
    const call = (calls.get(agentId) ?? 0) + 1;
    calls.set(agentId, call);
    return call;
  };
  return [
    defineTool({
      name: 'delegate',
      // Re-run on resume: the sub-agents are journaled themselves (stored results, their own journals).
      replay: 'rerun',
      description: options.delegateDescription ?? DELEGATE_DESCRIPTION,
      parameters: delegateInputSchema(roles),
      execute: async (input, context) => {
        if (input.policy === 'quorum' && input.quorum === undefined) {
          throw new TroupeError(
            'tool.invalid_input',
            'policy "quorum" needs `quorum` (how many must succeed).',
          );
        }
        const results = await delegator.delegate(context.agentId, input, context.signal);
        // The digest may cut answers; every result stays whole in the run folder.
        const saved =
          context.outputDir === undefined
            ? undefined
            : await saveDelegationResults(
                join(context.outputDir, 'delegations'),
                `${context.agentId}-${nextCall(context.agentId)}.jsonl`,
                results,
                context.env,
              );
        return formatDelegationResults(results, { saved, maxChars: options.digestChars });
      },
    }),
    defineTool({
      name: 'spawn_agent',
      // Re-run on resume: the sub-agents are journaled themselves (stored results, their own journals).
      replay: 'rerun',
      description: SPAWN_AGENT_DESCRIPTION,
      parameters: z.object({
        role: roleSchema.describe('The role of the sub-agent.'),
        task: z.string().describe('The whole task, self-contained.'),
      }),
      execute: async ({ role, task }, context) =>
        startedMessage(await delegator.spawn(context.agentId, role, task)),
    }),
    defineTool({
      name: 'wait_agents',
      // Re-run on resume: the sub-agents are journaled themselves (stored results, their own journals).
      replay: 'rerun',
      description: WAIT_AGENTS_DESCRIPTION,
      parameters: WaitInputSchema,
      execute: async (input, context) =>
        formatWaitResults(
          await delegator.wait(context.agentId, input.ids ?? [], context.signal),
          input,
          options.digestChars,
        ),
    }),
    defineTool({
      name: 'send_message',
      description: SEND_MESSAGE_DESCRIPTION,
      parameters: z.object({ agentId: z.string(), message: z.string() }),
      execute: ({ agentId, message }, context) => delegator.send(context.agentId, agentId, message),
    }),
  ];
}
