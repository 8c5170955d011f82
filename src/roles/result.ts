import { z } from 'zod';
import { SerializedErrorSchema } from '../errors.js';
import { AgentStatusSchema } from '../events/schema.js';
import { UsageSchema } from '../model/types.js';

/**
 * What an actor came to, as data: the one shape a parent, a delegating
 * worker actor (over the wire) and the resume store all use. Every actor
 * reaches exactly one, whatever happens to its thread.
 */
export const ActorResultSchema = z.object({
  agentId: z.string(),
  role: z.string(),
  status: AgentStatusSchema,
  /** The final answer (or the last thing the model said, when it stopped early). */
  final: z.string(),
  /** The final answer parsed against the role's output schema, when the role has one. */
  output: z.unknown().optional(),
  /** Why it did not complete; absent when completed. */
  error: SerializedErrorSchema.optional(),
  /** Tokens of every attempt. */
  usage: UsageSchema,
  /** Steps of the last attempt. */
  steps: z.number().int().nonnegative(),
  /** True when the result was taken from an earlier run (resume) instead of running again. */
  reused: z.boolean().optional(),
});

/**
 * What an actor came to. `AgentRef.result` resolves to one, never rejects,
 * never hangs.
 */
export interface ActorResult {
  agentId: string;
  role: string;
  status: z.infer<typeof AgentStatusSchema>;
  /** The final answer (or the last thing the model said, when it stopped early). */
  final: string;
  /** The final answer parsed against the role's output schema, when the role has one. */
  output?: unknown;
  /** Why it did not complete; absent when completed. */
  error?: z.infer<typeof SerializedErrorSchema> | undefined;
  /** Tokens of every attempt. */
  usage: z.infer<typeof UsageSchema>;
  /** Steps of the last attempt. */
  steps: number;
  /** True when the result was taken from an earlier run (resume) instead of running again. */
  reused?: boolean | undefined;
}
