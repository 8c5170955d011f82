import { z } from 'zod';
import { SerializedErrorSchema } from '../errors.js';
import { StopReasonSchema, ToolCallSchema, UsageSchema } from '../model/types.js';

/**
 * The event stream's contract. Every callback, trace line and `--json` line is
 * one of these. The envelope is versioned (`v`); `seq` is stamped by the
 * main-thread EventBus alone, global and gap-free within a run.
 */
export const EventEnvelopeSchema = z.object({
  v: z.literal(1),
  seq: z.number().int().nonnegative(),
  /** Wall-clock time the event happened, in milliseconds since the epoch. */
  ts: z.number(),
  runId: z.string(),
  agentId: z.string(),
  parentId: z.string().optional(),
  role: z.string().optional(),
});
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;

/** The terminal status of one agent. */
export const AgentStatusSchema = z.enum(['completed', 'failed', 'cancelled', 'timed_out']);
export type AgentStatus = z.infer<typeof AgentStatusSchema>;

/** The terminal status of a whole run. */
export const RunStatusSchema = z.enum([
  'completed',
  'partial',
  'failed',
  'cancelled',
  'budget',
  'timed_out',
]);
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** Why an agent loop stopped. */
export const AgentStopReasonSchema = z.enum(['final', 'max_steps', 'budget', 'cancelled', 'error']);
export type AgentStopReason = z.infer<typeof AgentStopReasonSchema>;

export const StepKindSchema = z.enum(['tool_call', 'final', 'error']);

/** One step of an agent loop: a model reply and what came of it. */
export const StepSchema = z.object({
  index: z.number().int().nonnegative(),
  kind: StepKindSchema,
  detail: z.string(),
});
export type Step = z.infer<typeof StepSchema>;

export const ToolErrorSchema = z.object({ code: z.string(), message: z.string() });

const BudgetPayload = {
  scope: z.enum(['agent', 'tree']),
  metric: z.enum(['tokens', 'cost', 'time']),
  used: z.number(),
  limit: z.number(),
};

const e = EventEnvelopeSchema;

/** The union of every event type. Add a type here and every consumer sees it. */
export const AgentEventSchema = z.discriminatedUnion('type', [
  e.extend({
    type: z.literal('run.started'),
    task: z.string(),
    options: z.record(z.string(), z.unknown()).optional(),
  }),
  e.extend({
    type: z.literal('run.finished'),
    status: RunStatusSchema,
    final: z.string().optional(),
    error: SerializedErrorSchema.optional(),
    usage: UsageSchema.optional(),
  }),
  e.extend({
    type: z.literal('agent.spawned'),
    task: z.string(),
    model: z.string().optional(),
    depth: z.number().int().nonnegative().optional(),
  }),
  e.extend({
    type: z.literal('agent.finished'),
    status: AgentStatusSchema,
    stopReason: AgentStopReasonSchema.optional(),
    final: z.string().optional(),
    error: SerializedErrorSchema.optional(),
    usage: UsageSchema.optional(),
    steps: z.number().int().nonnegative().optional(),
    /** How many attempts the agent made (more than 1 after supervised retries). */
    attempts: z.number().int().positive().optional(),
  }),
  e.extend({ type: z.literal('agent.progress'), note: z.string() }),
  e.extend({ type: z.literal('agent.nudged'), reason: z.string() }),
  e.extend({
    type: z.literal('model.request'),
    step: z.number().int().nonnegative(),
    messages: z.number().int().nonnegative(),
    tools: z.number().int().nonnegative(),
    /** Answered from the run's journal (resume): no request reaches the model. */
    replayed: z.boolean().optional(),
    /** The call's `max_tokens` when the tree budget capped it (budgeted runs). */
    maxTokens: z.number().int().positive().optional(),
  }),
  e.extend({
    type: z.literal('model.delta'),
    kind: z.enum(['text', 'thinking', 'tool_call']),
    text: z.string(),
  }),
  e.extend({
    type: z.literal('model.response'),
    content: z.string(),
    toolCalls: z.array(ToolCallSchema),
    thinking: z.string().optional(),
    usage: UsageSchema,
    stopReason: StopReasonSchema.optional(),
    /**
     * Replayed from the run's journal (resume): `usage` is then zero (no new
     * tokens) and `replayedUsage` is what the recorded call cost, i.e. what the resume saved.
     */
    replayed: z.boolean().optional(),
    replayedUsage: UsageSchema.optional(),
  }),
  e.extend({
    type: z.literal('tool.call'),
    callId: z.string(),
    name: z.string(),
    input: z.unknown(),
    /** Its result comes from the run's journal (resume): the tool does not run again. */
    replayed: z.boolean().optional(),
  }),
  e.extend({
    type: z.literal('tool.result'),
    callId: z.string(),
    name: z.string(),
    ok: z.boolean(),
    content: z.string(),
    error: ToolErrorSchema.optional(),
    durationMs: z.number().nonnegative().optional(),
    replayed: z.boolean().optional(),
  }),
  /** An agent's request no longer matches its journal (resume): it stops replaying and goes on live. */
  e.extend({
    type: z.literal('journal.diverged'),
    step: z.number().int().nonnegative(),
    reason: z.string(),
  }),
  e.extend({ type: z.literal('step'), step: StepSchema }),
  e.extend({
    type: z.literal('message.sent'),
    channel: z.string(),
    messageId: z.string(),
    to: z.string().optional(),
    payload: z.unknown(),
  }),
  e.extend({
    type: z.literal('message.received'),
    channel: z.string(),
    messageId: z.string(),
    from: z.string(),
  }),
  e.extend({ type: z.literal('budget.warning'), ...BudgetPayload }),
  e.extend({ type: z.literal('budget.exceeded'), ...BudgetPayload }),
  e.extend({
    /**
     * The middle of the agent's history was folded into one summary message
     * (the system prompt and the task stay verbatim). Tokens are estimated
     * (three characters a token, tool schemas included). The summary's own
     * model call has no model.request / model.response: this event carries
     * its usage, and the journal records it like any model response.
     */
    type: z.literal('history.compressed'),
    beforeMessages: z.number().int().nonnegative(),
    afterMessages: z.number().int().nonnegative(),
    beforeTokens: z.number().int().nonnegative(),
    afterTokens: z.number().int().nonnegative(),
    /** Messages folded into the summary (an earlier summary among them counts as one). */
    foldedMessages: z.number().int().nonnegative().optional(),
    /** The limit the history passed: the share of the model's context window, in tokens. */
    limitTokens: z.number().int().nonnegative().optional(),
    /** The summary that replaced them (after the summary marker). */
    summary: z.string().optional(),
    /** The summary call's tokens (the default summarizer; a custom one reports none): the run's ledger counts them. */
    usage: UsageSchema.optional(),
    /** The summary came from the run's journal (resume): no model call, no new tokens. */
    replayed: z.boolean().optional(),
  }),
  /** A library (an SDK's console.warn) or Node (process.emitWarning) warned during this agent's work. */
  e.extend({
    type: z.literal('warning.raised'),
    source: z.enum(['console', 'node']),
    message: z.string(),
  }),
  e.extend({
    /** A role runs without built-in tools whose tier the run does not grant. */
    type: z.literal('role.adapted'),
    name: z.string(),
    dropped: z.array(z.string()),
    tiers: z.array(z.string()),
  }),
  e.extend({
    type: z.literal('callback.error'),
    callback: z.string(),
    error: SerializedErrorSchema,
  }),
]);

export type AgentEvent = z.infer<typeof AgentEventSchema>;
export type AgentEventType = AgentEvent['type'];
export type EventOf<TType extends AgentEventType> = Extract<AgentEvent, { type: TType }>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An event before the bus stamps it: what agents and workers emit. */
export type UnsequencedEvent = DistributiveOmit<AgentEvent, 'seq'>;

/** An event before its envelope is filled in: what an agent loop produces. */
export type EventPayload = DistributiveOmit<
  AgentEvent,
  'v' | 'seq' | 'ts' | 'runId' | 'agentId' | 'parentId' | 'role'
>;

/** Every event type name, for filters and CLI validation. */
export const EVENT_TYPES: readonly AgentEventType[] = AgentEventSchema.options.map(
  (option) => option.shape.type.value,
);

/** Parses one event, throwing a ZodError when it does not fit the schema. */
export function parseEvent(data: unknown): AgentEvent {
  return AgentEventSchema.parse(data);
}

/** Where agents put their events; the bus in the main thread, a port forwarder in a worker. */
export interface EventSink {
  emit(event: UnsequencedEvent): void;
}
