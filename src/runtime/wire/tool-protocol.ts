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
});
export type ToolHostConfig = z.infer<typeof ToolHostConfigSchema>;

/**
 * The task piscina runs once per tool thread. `state` is shared memory the
 * main thread's watchdog reads: [0] a heartbeat the thread bumps on a timer,
 * [1] the call whose synchronous code runs now (0 for none).
 */
export interface ToolHostTask {
  port: unknown;
  state: SharedArrayBuffer;
}

/** Indexes into a tool thread's shared state. */
export const TOOL_STATE = { beat: 0, running: 1 } as const;

export const MainToToolSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('call'),
    callId: z.number().int().positive(),
    tool: z.string(),
    input: z.unknown(),
    agentId: z.string(),
    role: z.string().optional(),
  }),
  /** The caller gave up (its agent was cancelled, or the call timed out): abort the tool's signal. */
  z.object({ type: z.literal('cancel'), callId: z.number().int().positive() }),
  z.object({
    type: z.literal('approval.answered'),
    callId: z.number().int().positive(),
    requestId: z.number().int().positive(),
    approved: z.boolean(),
  }),
  z.object({ type: z.literal('shutdown') }),
]);
export type MainToTool = z.infer<typeof MainToToolSchema>;

export const ToolToMainSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('progress'), callId: z.number().int(), note: z.string() }),
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
   * or a process.exit, with the call whose code caused it when known.
   */
  z.object({ type: z.literal('fatal'), callId: z.number().int().optional(), what: z.string() }),
]);
export type ToolToMain = z.infer<typeof ToolToMainSchema>;

const MainToToolBatchSchema = z.array(MainToToolSchema);
const ToolToMainBatchSchema = z.array(ToolToMainSchema);

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

/** Parses one message from a tool thread (in the main thread); undefined when invalid. */
export function parseToolToMain(data: unknown): ToolToMain[] | undefined {
  if (Array.isArray(data) && data.every(isDone)) return data as ToolToMain[];
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
    (call.role === undefined || typeof call.role === 'string')
  );
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
