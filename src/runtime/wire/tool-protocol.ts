import { MessagePort } from 'node:worker_threads';
import { z } from 'zod';
import { ErrorCodeSchema } from '../../errors.js';
import { SandboxPolicySchema } from '../../tools/sandbox-policy.js';
import { PermissionTierSchema } from '../../tools/tool.js';

/**
 * The main ⇄ tool-thread protocol. User tool modules run on a pool of tool
 * threads of their own, apart from the actor threads: each tool thread runs
 * one long-lived task that owns a private port (transferred at start), and
 * every message on it is an array of items, batched per event-loop turn.
 */

/** What a tool thread is built from: its workerData. */
export const ToolHostConfigSchema = z.object({
  runId: z.string(),
  workspace: z.string(),
  outDir: z.string().optional(),
  grants: z.array(PermissionTierSchema),
  /** Absolute paths of user ESM modules exporting tools. */
  toolModules: z.array(z.string()),
  env: z.record(z.string(), z.string()).optional(),
  unsafeNoSandbox: z.boolean().optional(),
  /** The run's sandbox policy: limits, protected-path writes, egress domains. */
  sandbox: SandboxPolicySchema.optional(),
  /** True when the main thread answers approval requests. */
  hasApprove: z.boolean(),
  /** Results longer than this are cut in the tool thread, before they cross (the actor cuts again). */
  maxResultChars: z.number().int().positive(),
  /** A call that has not settled after this long is answered with a timeout (default 120,000 ms). */
  timeoutMs: z.number().positive().optional(),
  /** Calls running at once on the thread (default 32); more wait in the thread, in order. */
  maxCalls: z.number().int().positive().optional(),
});
export type ToolHostConfig = z.infer<typeof ToolHostConfigSchema>;

/**
 * The task piscina runs once per tool thread. `state` is shared memory (see
 * TOOL_STATE) that the main thread's watchdog and the actor threads read.
 */
export interface ToolHostTask {
  port: unknown;
  state: SharedArrayBuffer;
}

/**
 * Indexes into a tool thread's shared state (Int32 slots):
 * - `beat`: a heartbeat the thread bumps on a timer (the watchdog reads it);
 * - `running`, `lane`: the call whose synchronous code runs now (0 for
 *   none) and the lane it came on (0: the main thread);
 * - `inflight`, `inflightMain`: calls the thread holds (running or waiting),
 *   all and those of the main thread; a thread that dies holding exactly one
 *   names it even when nothing else can;
 * - `closed`: set by the main thread while it keeps the thread empty for a
 *   suspect that must run alone: lanes send nothing new (what arrives is sent back);
 * - `busy`: the thread's event-loop utilisation over its last heartbeat, in
 *   thousandths (the pool starts another thread when every thread is busy).
 */
export const TOOL_STATE = {
  beat: 0,
  running: 1,
  lane: 2,
  inflight: 3,
  inflightMain: 4,
  closed: 5,
  busy: 6,
} as const;

/**
 * A safety net only: each fatal call is answered once it is named, so a call
 * loses its thread at most once per fatal call of its neighbours.
 */
export const MAX_LOST_THREADS = 100;

/** What a call that killed or blocked its tool thread is answered. */
export function culpritMessage(tool: string, what: string): string {
  return `${tool} ${what}; its thread was replaced. Its work was lost: do not call it the same way again.`;
}

/** What a call is answered after neighbours' faults took its thread too often. */
export function lostMessage(tool: string, lost: number, what: string): string {
  return `${tool} was run ${lost} times and each time another tool's fault took its thread (last: a tool ${what}).`;
}

/** Bytes of a tool thread's shared state. */
export const TOOL_STATE_BYTES = 32;

const PortSchema = z.custom<MessagePort>((value) => value instanceof MessagePort, {
  message: 'a MessagePort',
});

const CallSchema = z.object({
  type: z.literal('call'),
  callId: z.number().int().positive(),
  tool: z.string(),
  input: z.unknown(),
  agentId: z.string(),
  role: z.string().optional(),
  /** A suspect: it runs alone (the thread is empty and closed to lanes). */
  solo: z.boolean().optional(),
});
/** The caller gave up (its agent was cancelled, or the call timed out): abort the tool's signal. */
const CancelSchema = z.object({ type: z.literal('cancel'), callId: z.number().int().positive() });
const ApprovalAnsweredSchema = z.object({
  type: z.literal('approval.answered'),
  callId: z.number().int().positive(),
  requestId: z.number().int().positive(),
  approved: z.boolean(),
});

export const MainToToolSchema = z.discriminatedUnion('type', [
  CallSchema,
  CancelSchema,
  ApprovalAnsweredSchema,
  /**
   * A direct lane to one actor host (its id): calls come and go on `port`
   * without the main thread; only supervision stays there.
   */
  z.object({ type: z.literal('lane.open'), lane: z.number().int().positive(), port: PortSchema }),
  /** The lane's host is gone: its calls are aborted, its port closed. */
  z.object({ type: z.literal('lane.close'), lane: z.number().int().positive() }),
  z.object({ type: z.literal('shutdown') }),
]);
export type MainToTool = z.infer<typeof MainToToolSchema>;

/** What an actor host sends on a lane: calls, cancels and approval answers. */
export type LaneToTool = Extract<MainToTool, { type: 'call' | 'cancel' | 'approval.answered' }>;

export const ToolToMainSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  /**
   * Progress a call reported, in order: the notes of one call in a row share
   * an item (a tool reporting in a loop is one item per batch, not one per note).
   */
  z.object({
    type: z.literal('progress'),
    callId: z.number().int(),
    notes: z.array(z.string()),
  }),
  z.object({
    type: z.literal('approval.requested'),
    callId: z.number().int(),
    requestId: z.number().int().positive(),
    tool: z.string(),
    summary: z.string(),
  }),
  z.object({
    type: z.literal('done'),
    callId: z.number().int(),
    ok: z.boolean(),
    /** The result (ok) or the error message (not ok). */
    content: z.string(),
    code: ErrorCodeSchema.optional(),
  }),
  /**
   * The thread is about to die: an uncaught exception, an unhandled rejection
   * or a process.exit, with the call whose code caused it when known (and its
   * lane; 0 or absent: the main thread's).
   */
  z.object({
    type: z.literal('fatal'),
    callId: z.number().int().optional(),
    lane: z.number().int().optional(),
    what: z.string(),
  }),
  /** The thread is closed for a suspect and holds no call now: the suspect may start. */
  z.object({ type: z.literal('idle') }),
  /** (Lanes only) the thread is closed for a suspect: place the call elsewhere. */
  z.object({ type: z.literal('moved'), callId: z.number().int() }),
]);
export type ToolToMain = z.infer<typeof ToolToMainSchema>;

const MainToToolBatchSchema = z.array(MainToToolSchema);
const ToolToMainBatchSchema = z.array(ToolToMainSchema);
const LaneToToolBatchSchema = z.array(
  z.discriminatedUnion('type', [CallSchema, CancelSchema, ApprovalAnsweredSchema]),
);

/**
 * Parses one message from the main thread (in a tool thread); undefined when
 * invalid. Calls, the bulk, are checked by hand (the schema explains nothing
 * here: an invalid message is dropped); the rest by the schema.
 */
export function parseMainToTool(data: unknown): MainToTool[] | undefined {
  if (Array.isArray(data) && data.every(isCall)) return data as MainToTool[];
  const parsed = MainToToolBatchSchema.safeParse(data);
  return parsed.success ? parsed.data : undefined;
}

/** Parses one message an actor host sent on a lane (in a tool thread); undefined when invalid. */
export function parseLaneToTool(data: unknown): LaneToTool[] | undefined {
  if (Array.isArray(data) && data.every(isCall)) return data as LaneToTool[];
  const parsed = LaneToToolBatchSchema.safeParse(data);
  return parsed.success ? parsed.data : undefined;
}

/** Parses one message from a tool thread (in the main thread, or an actor thread on a lane); undefined when invalid. */
export function parseToolToMain(data: unknown): ToolToMain[] | undefined {
  if (Array.isArray(data) && data.every(isDoneOrProgress)) return data as ToolToMain[];
  const parsed = ToolToMainBatchSchema.safeParse(data);
  return parsed.success ? parsed.data : undefined;
}

function isCall(item: unknown): boolean {
  const call = item as Partial<Extract<MainToTool, { type: 'call' }>> | null;
  return (
    typeof call === 'object' &&
    call !== null &&
    call.type === 'call' &&
    Number.isInteger(call.callId) &&
    typeof call.tool === 'string' &&
    typeof call.agentId === 'string' &&
    (call.role === undefined || typeof call.role === 'string') &&
    (call.solo === undefined || typeof call.solo === 'boolean')
  );
}

function isDoneOrProgress(item: unknown): boolean {
  return isDone(item) || isProgress(item);
}

function isProgress(item: unknown): boolean {
  const progress = item as Partial<Extract<ToolToMain, { type: 'progress' }>> | null;
  if (
    typeof progress !== 'object' ||
    progress === null ||
    progress.type !== 'progress' ||
    !Number.isInteger(progress.callId) ||
    !Array.isArray(progress.notes)
  )
    return false;
  for (const note of progress.notes) if (typeof note !== 'string') return false;
  return true;
}

function isDone(item: unknown): boolean {
  const done = item as Partial<Extract<ToolToMain, { type: 'done' }>> | null;
  return (
    typeof done === 'object' &&
    done !== null &&
    done.type === 'done' &&
    Number.isInteger(done.callId) &&
    typeof done.ok === 'boolean' &&
    typeof done.content === 'string' &&
    (done.code === undefined || ErrorCodeSchema.safeParse(done.code).success)
  );
}
