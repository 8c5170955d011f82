import { z } from 'zod';
import { ErrorCodeSchema } from '../errors.js';
import { UsageSchema } from './types.js';

/**
 * The data-only script of the `scripted` model. Being plain data, a script
 * travels inside a ModelSpec and is rebuilt in any worker thread.
 *
 * On each call the model takes the first unused step whose `match` fits the
 * request. A step is used up once taken, unless `repeat` is set.
 */
export const ScriptMatchSchema = z
  .object({
    /** The caller's agent name must equal this. */
    agent: z.string().optional(),
    /** The caller's role must equal this. */
    role: z.string().optional(),
    /** This must be the nth call (1-based) to this model instance. */
    call: z.number().int().positive().optional(),
    /** The last message must be a tool result whose content contains this text. */
    lastToolResultContains: z.string().optional(),
    /** The last message must be a tool result with this error state. */
    lastToolResultIsError: z.boolean().optional(),
    /** The last message must be a user message containing this text. */
    lastUserContains: z.string().optional(),
    /** Some message in the conversation must contain this text. */
    conversationContains: z.string().optional(),
  })
  .strict();
export type ScriptMatch = z.infer<typeof ScriptMatchSchema>;

export const ScriptToolCallSchema = z.object({
  name: z.string(),
  /** Arguments as an object, or a raw string to simulate malformed JSON from a model. */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).default({}),
  id: z.string().optional(),
});

export const ScriptStepSchema = z
  .object({
    match: ScriptMatchSchema.optional(),
    content: z.string().default(''),
    toolCalls: z.array(ScriptToolCallSchema).default([]),
    thinking: z.string().optional(),
    usage: UsageSchema.optional(),
    /** Wait this long before answering (simulated network time), in milliseconds. */
    latencyMs: z.number().nonnegative().optional(),
    /** Busy the thread this long before answering (simulated CPU time), in milliseconds. */
    cpuMs: z.number().nonnegative().optional(),
    /** Fail the call with this error instead of answering. */
    error: z
      .object({
        code: ErrorCodeSchema.default('model.server'),
        message: z.string(),
        status: z.number().int().optional(),
      })
      .optional(),
    /** Keep this step for later calls instead of using it up. */
    repeat: z.boolean().default(false),
  })
  .strict();
export type ScriptStep = z.input<typeof ScriptStepSchema>;
export type ParsedScriptStep = z.output<typeof ScriptStepSchema>;

export const ScriptSchema = z.object({
  steps: z.array(ScriptStepSchema),
  /** Latency for steps that name none, in milliseconds. */
  defaultLatencyMs: z.number().nonnegative().default(0),
});
export type Script = z.input<typeof ScriptSchema>;
export type ParsedScript = z.output<typeof ScriptSchema>;
