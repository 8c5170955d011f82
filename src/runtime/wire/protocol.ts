import { MessagePort } from 'node:worker_threads';
import { z } from 'zod';
import { JournalEntrySchema } from '../../agent/journal.js';
import { ErrorCodeSchema, SerializedErrorSchema, TroupeError } from '../../errors.js';
import { compileCheck } from '../../events/event-check.js';
import { AgentStopReasonSchema, type UnsequencedEvent } from '../../events/schema.js';
import { McpServerConfigSchema } from '../../mcp/config.js';
import { ModelSpecSchema } from '../../model/model.js';
import { ModelResponseSchema, UsageSchema } from '../../model/types.js';
import { ActorResultSchema } from '../../roles/result.js';
import { RoleSpecSchema } from '../../roles/role-spec.js';
import { SandboxPolicySchema } from '../../tools/sandbox-policy.js';
import { PermissionTierSchema } from '../../tools/tool.js';

export { type RoleSpec, RoleSpecSchema } from '../../roles/role-spec.js';

/**
 * The main ⇄ worker protocol. Every message on a host's port is an array of
 * items, batched per event-loop turn; both sides parse what they receive.
 * Events (the bulk of the traffic) are validated once, in the worker that
 * made them, and travel as themselves; every other item is parsed here.
 */

/** What a host is built from: its run's settings, sent with the host's task (HostTask.config). */
export const HostConfigSchema = z.object({
  runId: z.string(),
  workspace: z.string(),
  outDir: z.string().optional(),
  grants: z.array(PermissionTierSchema),
  /** Absolute paths of user ESM modules exporting tools. */
  toolModules: z.array(z.string()),
  env: z.record(z.string(), z.string()).optional(),
  /** True when the main thread answers approval requests. */
  hasApprove: z.boolean(),
  /** True when the main thread keeps a journal: actors send their records and intents. */
  journal: z.boolean().optional(),
  /** Run shell and python without the OS sandbox (bubblewrap): the run's `--unsafe-no-sandbox`. */
  unsafeNoSandbox: z.boolean().optional(),
  /** The run's sandbox policy: limits, protected-path writes, egress domains. */
  sandbox: SandboxPolicySchema.optional(),
  /** The run's MCP servers by name (`RuntimeOptions.mcp`); each host starts those its actors need. */
  mcp: z.record(z.string(), McpServerConfigSchema).optional(),
  /**
   * Run the user tool modules' tools on the main thread's tool pool, not in
   * this thread (`RuntimeOptions.toolIsolation` 'pool'): a call goes straight
   * to a tool thread on a lane the main thread opened (`tool.lane`), or, with
   * no lane, crosses to the main thread as `tool.requested`.
   */
  isolateTools: z.boolean().optional(),
  /**
   * The run has a token or cost budget: every model call reserves its room
   * with the main thread first (`budget.reserve`), which caps its `max_tokens`.
   */
  budget: z.boolean().optional(),
  /**
   * Events go to the main thread as their JSON text (a string item), which
   * the main thread parses once and the trace and `--json` write as they are,
   * spliced with the bus's stamp, instead of serializing each event again
   * (the local transport; a NATS node's hosts send events as objects).
   */
  eventText: z.boolean().optional(),
});
export type HostConfig = z.infer<typeof HostConfigSchema>;

/** The end of one actor attempt inside a worker: its end-of-stream marker on the host's port. */
export const ActorOutcomeSchema = z.object({
  stopReason: AgentStopReasonSchema,
  final: z.string(),
  usage: UsageSchema,
  steps: z.number().int().nonnegative(),
  error: SerializedErrorSchema.optional(),
});
export type ActorOutcome = z.infer<typeof ActorOutcomeSchema>;

/** An actor's result as a delegating worker actor receives it: the one result schema. */
export const ActorResultDataSchema = ActorResultSchema;

/**
 * What a delegating worker actor asks about sub-agents of its own, besides
 * `delegate`: start one without waiting (`spawn_agent`), wait for some
 * (`wait_agents`), steer one (`send_message`).
 */
export const ChildRequestSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('spawn'), role: z.string(), task: z.string() }),
  // No ids: every sub-agent the actor started.
  z.object({ op: z.literal('wait'), ids: z.array(z.string()) }),
  z.object({ op: z.literal('send'), agentId: z.string(), message: z.string() }),
]);
export type ChildRequest = z.infer<typeof ChildRequestSchema>;

/** The main thread's answer to a ChildRequest: a refusal is `ok: false` with a code and message. */
export const ChildAnswerSchema = z.object({
  ok: z.boolean(),
  message: z.string(),
  code: ErrorCodeSchema.optional(),
  /** The started sub-agent (spawn). */
  agentId: z.string().optional(),
  /** The sub-agents' results, in the order asked (wait). */
  results: z.array(ActorResultDataSchema).optional(),
});
export type ChildAnswer = z.infer<typeof ChildAnswerSchema>;

/** Starts one attempt of an actor on a host. */
export const ActorStartSchema = z.object({
  type: z.literal('actor.start'),
  actorId: z.string(),
  parentId: z.string().optional(),
  /** Key of a role defined on this host. */
  role: z.string(),
  /** Key of a model defined on this host. */
  model: z.string(),
  task: z.string(),
  /** The attempt number, from 1; retries restart the actor from its task. */
  attempt: z.number().int().positive(),
  /** The actor's stable key (its result key), when the run stores results; names its journal. */
  key: z.string().optional(),
  /**
   * Journaling (NATS worker nodes): `replay` holds the actor's recorded model
   * responses, returned in order instead of calling the model; with `record`,
   * each live response is sent back as `journal.record`.
   */
  journal: z.object({ replay: z.array(ModelResponseSchema), record: z.boolean() }).optional(),
  /** What the run's journal (RuntimeOptions.journal) holds for this actor (resume, retry): replayed before it goes live. */
  entries: z.array(JournalEntrySchema).optional(),
});

// A record from a worker is written as it came (checked whole when a resume reads it); only its shape is checked here.
const JournalWireEntrySchema = z.looseObject({
  kind: z.enum(['model', 'tool.started', 'tool', 'inbox']),
  step: z.number().int().nonnegative(),
});

export const MainToWorkerSchema = z.discriminatedUnion('type', [
  /** A role, sent once per host; actors name it by key (histories and specs stay put, only deltas cross). */
  z.object({ type: z.literal('role.define'), key: z.string(), role: RoleSpecSchema }),
  /** A model spec, sent once per host. */
  z.object({ type: z.literal('model.define'), key: z.string(), model: ModelSpecSchema }),
  ActorStartSchema,
  z.object({ type: z.literal('actor.cancel'), actorId: z.string(), reason: z.string() }),
  z.object({
    type: z.literal('mailbox.deliver'),
    actorId: z.string(),
    messageId: z.string(),
    /** The user message, already formatted (see formatChannelMessage). */
    content: z.string(),
    channel: z.string().optional(),
    from: z.string().optional(),
  }),
  z.object({ type: z.literal('channel.closed'), actorId: z.string(), channel: z.string() }),
  z.object({
    type: z.literal('publish.answered'),
    requestId: z.number().int(),
    ok: z.boolean(),
    message: z.string(),
    code: z.string().optional(),
  }),
  z.object({
    type: z.literal('approval.answered'),
    requestId: z.number().int(),
    approved: z.boolean(),
  }),
  z.object({
    type: z.literal('spawn.answered'),
    requestId: z.number().int(),
    results: z.array(ActorResultDataSchema),
  }),
  z.object({
    type: z.literal('child.answered'),
    requestId: z.number().int(),
    answer: ChildAnswerSchema,
  }),
  /** Progress a pooled tool call reported, in order, before its answer. */
  z.object({
    type: z.literal('tool.progress'),
    requestId: z.number().int(),
    notes: z.array(z.string()),
  }),
  /** The end of a pooled tool call: its result, or the error the model reads. */
  z.object({
    type: z.literal('tool.answered'),
    requestId: z.number().int(),
    ok: z.boolean(),
    content: z.string(),
    code: ErrorCodeSchema.optional(),
  }),
  /**
   * A direct lane to tool thread `thread` (local transport only): pooled
   * calls go on `port` without the main thread; `state` is the thread's
   * shared state (its load, and whether it is closed for a suspect).
   */
  z.object({
    type: z.literal('tool.lane'),
    thread: z.number().int().positive(),
    port: z.custom<MessagePort>((value) => value instanceof MessagePort, {
      message: 'a MessagePort',
    }),
    state: z.instanceof(SharedArrayBuffer),
  }),
  /**
   * Tool thread `thread` is gone (`what` says how). `blame` says who caused
   * it: `culprit`, a call of this host, was named (`named`: by the thread or
   * the watchdog, maybe on another host); `sole`: the thread held one call,
   * not the main thread's; `nobody`: every call it ran is a suspect and runs
   * again alone. Calls still running on the lane run again.
   */
  z.object({
    type: z.literal('tool.lane.down'),
    thread: z.number().int().positive(),
    what: z.string(),
    blame: z.enum(['named', 'sole', 'nobody']),
    culprit: z.number().int().optional(),
  }),
  /**
   * The answer to `budget.reserve`: room for the call with its capped
   * `max_tokens` and the reservation that settles it, or a refusal and why.
   */
  z.object({
    type: z.literal('budget.answered'),
    requestId: z.number().int(),
    ok: z.boolean(),
    maxTokens: z.number().int().positive().optional(),
    reservation: z.number().int().positive().optional(),
    reason: z.string().optional(),
  }),
  /** A journal intent is durable: the tool may run; or it could not be written (`refused`): it must not. */
  z.object({
    type: z.literal('journal.answered'),
    requestId: z.number().int(),
    refused: z.string().optional(),
  }),
  /** A `journal.record` is stored: the journaled actor's model call `step` may return. */
  z.object({
    type: z.literal('journal.stored'),
    actorId: z.string(),
    step: z.number().int().positive(),
  }),
  z.object({ type: z.literal('host.shutdown') }),
]);
export type MainToWorker = z.infer<typeof MainToWorkerSchema>;
/** What the main thread sends (before defaults are applied by the worker's parse). */
export type MainToWorkerInput = z.input<typeof MainToWorkerSchema>;

export const WorkerToMainSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('host.ready'), threadId: z.number().int() }),
  /** The end of an attempt; always after the attempt's last event on the same port. */
  z.object({ type: z.literal('actor.result'), actorId: z.string(), outcome: ActorOutcomeSchema }),
  /** An Agent run ended and the actor goes on (a subscriber runs several); answers `ask`. */
  z.object({ type: z.literal('actor.turn'), actorId: z.string(), final: z.string() }),
  z.object({
    type: z.literal('mailbox.consumed'),
    actorId: z.string(),
    count: z.number().int().positive(),
  }),
  z.object({
    type: z.literal('channel.publish'),
    requestId: z.number().int(),
    actorId: z.string(),
    channel: z.string(),
    payload: z.unknown(),
  }),
  z.object({
    type: z.literal('approval.requested'),
    requestId: z.number().int(),
    actorId: z.string(),
    tool: z.string(),
    summary: z.string(),
    detail: z.string().optional(),
    role: z.string().optional(),
  }),
  z.object({
    type: z.literal('spawn.requested'),
    requestId: z.number().int(),
    actorId: z.string(),
    tasks: z.array(z.object({ role: z.string(), task: z.string() })),
    policy: z.enum(['all_settled', 'quorum', 'fail_fast']).optional(),
    quorum: z.number().int().positive().optional(),
  }),
  z.object({
    type: z.literal('child.requested'),
    requestId: z.number().int(),
    actorId: z.string(),
    request: ChildRequestSchema,
  }),
  /** A call of a user tool, run on the tool pool (see HostConfig.isolateTools). */
  z.object({
    type: z.literal('tool.requested'),
    requestId: z.number().int(),
    actorId: z.string(),
    tool: z.string(),
    input: z.unknown(),
    /** A suspect of a tool thread's death that nobody was named for: it runs alone. */
    solo: z.boolean().optional(),
  }),
  /** A model call asks for room in the tree budget before it is sent (HostConfig.budget). */
  z.object({
    type: z.literal('budget.reserve'),
    requestId: z.number().int(),
    actorId: z.string(),
    promptTokens: z.number().int().nonnegative(),
    maxTokens: z.number().int().positive(),
    minTokens: z.number().int().positive(),
  }),
  /**
   * A budgeted call ended: `reservation` (from the answer) settles with the
   * call's usage, `aborted` or `failed`; `requestId` alone withdraws an ask
   * still waiting for its answer (the call was cancelled).
   */
  z.object({
    type: z.literal('budget.settle'),
    actorId: z.string(),
    reservation: z.number().int().positive().optional(),
    requestId: z.number().int().optional(),
    outcome: z.union([UsageSchema, z.literal('aborted'), z.literal('failed')]),
  }),
  /** The actor gave up on a pooled tool call (it was cancelled). */
  z.object({ type: z.literal('tool.cancelled'), requestId: z.number().int() }),
  /**
   * An entry for the run's journal (a model response, a tool result), ahead
   * of the event that announces it: `line`, encoded by the host with
   * `journalLine` when it knows the actor's key, else `entry`.
   */
  z.object({
    type: z.literal('journal.entry'),
    actorId: z.string(),
    entry: JournalWireEntrySchema.optional(),
    line: z.string().optional(),
  }),
  /**
   * Journal records of several actors, as one text of lines each made by
   * `journalLine` with the actor's key from `actor.start`: what a host's
   * actors recorded in one batch, sent ahead of the batch's events (and of
   * its intents, which then carry neither `line` nor `entry`). A host sends
   * these for a run journal kept by the main thread it talks to directly.
   */
  z.object({ type: z.literal('journal.lines'), text: z.string() }),
  /** A tool that is not idempotent is about to run: answered once the intent is durable. */
  z.object({
    type: z.literal('journal.intent'),
    requestId: z.number().int(),
    actorId: z.string(),
    entry: JournalWireEntrySchema.optional(),
    line: z.string().optional(),
  }),
  z.object({ type: z.literal('host.error'), error: SerializedErrorSchema }),
  /** A live model response of a journaled actor: call number `step` (from 1) of the actor. */
  z.object({
    type: z.literal('journal.record'),
    actorId: z.string(),
    step: z.number().int().positive(),
    response: ModelResponseSchema,
  }),
]);
export type WorkerToMain = z.infer<typeof WorkerToMainSchema>;

/** The task piscina runs once per thread: the host lives as long as it does. */
export interface HostTask {
  hostId: number;
  /** The host's port (transferred); every item of the protocol goes over it. */
  port: unknown;
  /** Shared with the main thread's watchdog (see HOST_STATE); absent: no watchdog. */
  state?: SharedArrayBuffer | undefined;
  /**
   * The run's host settings (parsed with HostConfigSchema by the thread).
   * Sent with the task, not as piscina's workerData, so a pool's threads can
   * start before its run is known (see thread-start.ts).
   */
  config: unknown;
}

/**
 * An actor thread's shared state: Int32 slot `beat`, a heartbeat the host
 * bumps on a timer; slot `named`, the byte length of the name written at
 * HOST_NAME_OFFSET (`<actorId>\0<tool>`, UTF-8) while that actor's tool
 * runs synchronous code, 0 otherwise. A blocked thread cannot speak, so this
 * is how the watchdog learns whose tool blocked it. Slot `busy`: how busy
 * the thread's event loop was between its last two beats, in thousandths
 * (the scheduler gives a thread more actors while it has time to spare).
 */
export const HOST_STATE = { beat: 0, named: 1, busy: 2 } as const;
/** Where the name starts in an actor thread's shared state, in bytes. */
export const HOST_NAME_OFFSET = 12;
/** Bytes of an actor thread's shared state. */
export const HOST_STATE_BYTES = 268;

/**
 * What a host puts on the wire and the main thread acts on: protocol items,
 * and events as themselves (an item with `v: 1` is an event), with no
 * wrapper in either thread.
 */
export type WorkerWireItem = WorkerToMain | UnsequencedEvent;

/**
 * What a local host's port carries: wire items, and events as their JSON
 * text (a string item; see `HostConfig.eventText`).
 */
export type HostWireItem = WorkerWireItem | string;

/** True when a wire item is an event (events carry `v: 1`; protocol items never do). */
export function isWireEvent(item: WorkerWireItem): item is UnsequencedEvent {
  return (item as { v?: unknown }).v === 1;
}

/**
 * Parses one port message from a worker: an array of items. Events pass
 * through (validated in the worker that made them; the main thread checks
 * their envelope); every other item is parsed here. An invalid item is
 * reported in `invalid` and skipped, never taking the rest of the batch with it.
 */
export function parseWorkerMessage(data: unknown): {
  items: WorkerWireItem[];
  invalid: string[];
} {
  return parseItems(data, false) as { items: WorkerWireItem[]; invalid: string[] };
}

/**
 * Parses one port message from a local host: parseWorkerMessage's items,
 * and events as their JSON text (string items), passed on as they are: the
 * host link parses each and checks its envelope before the bus adopts it.
 */
export function parseHostMessage(data: unknown): { items: HostWireItem[]; invalid: string[] } {
  return parseItems(data, true);
}

function parseItems(
  data: unknown,
  texts: boolean,
): {
  items: HostWireItem[];
  invalid: string[];
} {
  const items: HostWireItem[] = [];
  const invalid: string[] = [];
  if (!Array.isArray(data)) {
    invalid.push('a message that is not a batch');
    return { items, invalid };
  }
  for (const item of data) {
    if (typeof item === 'string') {
      if (texts) items.push(item);
      else invalid.push('an event as text, which this link does not take');
      continue;
    }
    // The fast path: events are the bulk.
    if (typeof item === 'object' && item !== null && (item as { v?: unknown }).v === 1) {
      // Checked by the host link (envelope) before the bus adopts it.
      items.push(item as UnsequencedEvent);
      continue;
    }
    // Pooled tool calls and journal lines are the next bulk: checked by hand.
    if (isToolRequest(item) || isJournalLine(item) || isJournalLines(item)) {
      items.push(item);
      continue;
    }
    // The rest (an actor's result and turn, once per agent): a check compiled
    // from the item's own schema (compileCheck: zod's rules, no output built);
    // zod parses what it refuses, and writes the message.
    const check = workerItemCheck(item);
    if (check?.(item) === true) {
      items.push(item as WorkerWireItem);
      continue;
    }
    const parsed = WorkerToMainSchema.safeParse(item);
    if (parsed.success) items.push(parsed.data);
    else invalid.push(z.prettifyError(parsed.error));
  }
  return { items, invalid };
}

// The compiled check of each worker item type, made on its first use.
const workerItemChecks = new Map<string, (value: unknown) => boolean>();
function workerItemCheck(item: unknown): ((value: unknown) => boolean) | undefined {
  const type = (item as { type?: unknown } | null)?.type;
  if (typeof type !== 'string') return undefined;
  let check = workerItemChecks.get(type);
  if (check === undefined) {
    const option = (WorkerToMainSchema.options as readonly z.ZodObject[]).find(
      (candidate) => (candidate.shape['type'] as z.ZodLiteral<string>).value === type,
    );
    if (option === undefined) return undefined;
    check = compileCheck(option);
    workerItemChecks.set(type, check);
  }
  return check;
}

// Built once: a host parses every message the main thread sends it.
const MainToWorkerBatchSchema = z.array(MainToWorkerSchema);

/** Parses one port message from the main thread: an array of items. Throws `runtime.protocol`. */
export function parseMainMessage(data: unknown): MainToWorker[] {
  // Answers of pooled tool calls and of journal intents, the bulk while tools run, are checked by hand.
  if (Array.isArray(data) && data.every((item) => isToolAnswer(item) || isJournalAnswer(item)))
    return data as MainToWorker[];
  const parsed = MainToWorkerBatchSchema.safeParse(data);
  if (!parsed.success) {
    throw new TroupeError(
      'runtime.protocol',
      `The main thread sent an invalid message: ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}

function isToolRequest(item: unknown): item is Extract<WorkerToMain, { type: 'tool.requested' }> {
  const request = item as Partial<Extract<WorkerToMain, { type: 'tool.requested' }>> | null;
  return (
    typeof request === 'object' &&
    request !== null &&
    request.type === 'tool.requested' &&
    Number.isInteger(request.requestId) &&
    typeof request.actorId === 'string' &&
    typeof request.tool === 'string'
  );
}

// A journal record or intent as a host encodes it (its line is written as it came).
function isJournalLine(
  item: unknown,
): item is Extract<WorkerToMain, { type: 'journal.entry' | 'journal.intent' }> {
  const record = item as Partial<
    Extract<WorkerToMain, { type: 'journal.entry' | 'journal.intent' }>
  > | null;
  return (
    typeof record === 'object' &&
    record !== null &&
    (record.type === 'journal.entry' ||
      (record.type === 'journal.intent' && Number.isInteger(record.requestId))) &&
    typeof record.actorId === 'string' &&
    typeof record.line === 'string' &&
    record.entry === undefined
  );
}

// A batch's journal lines, or an intent whose line went with them.
function isJournalLines(item: unknown): boolean {
  const record = item as {
    type?: unknown;
    text?: unknown;
    requestId?: unknown;
    actorId?: unknown;
    line?: unknown;
    entry?: unknown;
  } | null;
  if (typeof record !== 'object' || record === null) return false;
  if (record.type === 'journal.lines') return typeof record.text === 'string';
  return (
    record.type === 'journal.intent' &&
    Number.isInteger(record.requestId) &&
    typeof record.actorId === 'string' &&
    record.line === undefined &&
    record.entry === undefined
  );
}

function isJournalAnswer(item: unknown): boolean {
  const answer = item as Partial<Extract<MainToWorker, { type: 'journal.answered' }>> | null;
  return (
    typeof answer === 'object' &&
    answer !== null &&
    answer.type === 'journal.answered' &&
    Number.isInteger(answer.requestId) &&
    (answer.refused === undefined || typeof answer.refused === 'string')
  );
}

function isToolAnswer(item: unknown): boolean {
  const answer = item as Partial<Extract<MainToWorker, { type: 'tool.answered' }>> | null;
  return (
    typeof answer === 'object' &&
    answer !== null &&
    answer.type === 'tool.answered' &&
    Number.isInteger(answer.requestId) &&
    typeof answer.ok === 'boolean' &&
    typeof answer.content === 'string' &&
    (answer.code === undefined || ErrorCodeSchema.safeParse(answer.code).success)
  );
}
