import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { type CompressionSetting, CompressionSettingSchema } from '../agent/history.js';
import { TroupeError } from '../errors.js';
import type { EventBus } from '../events/bus.js';
import type { McpServers } from '../mcp/config.js';
import type { ModelSpec } from '../model/model.js';
import { ModelSpecSchema } from '../model/spec.js';
import type { AnyRole } from '../roles/role.js';
import { type SandboxPolicy, SandboxPolicySchema } from '../tools/sandbox-policy.js';
import { type ApprovalRequest, type PermissionTier, PermissionTierSchema } from '../tools/tool.js';
import type { TreeBudgetLimits } from './budget/tree-budget.js';
import type { ModelPrice } from './budget/usage-ledger.js';
import type { Journal } from './resume/journal.js';
import type { Transport } from './wire/transport.js';

/** Memory limits of each worker thread (Node's `resourceLimits`), in megabytes. */
export interface ThreadLimits {
  maxOldGenerationSizeMb?: number;
  maxYoungGenerationSizeMb?: number;
  codeRangeSizeMb?: number;
  stackSizeMb?: number;
}

/** How a Runtime is built. */
export interface RuntimeOptions {
  /** The model of roles that name none. */
  model: ModelSpec;
  /** Roles added to the built-ins (a role with a built-in's name replaces it). */
  roles?: readonly AnyRole[] | undefined;
  /**
   * The most actor threads (default the available cores, at most 4). One
   * starts with the first actor, and another when every thread is saturated:
   * full with actors waiting, or busy for a second with actors on it. With
   * `toolIsolation: 'thread'`, all start at once.
   */
  threads?: number | undefined;
  /** Absolute path of the workspace; file tools stay inside it. */
  workspace: string;
  /** Absolute path of the run's output folder; writes are confined to it. */
  outDir?: string | undefined;
  /** The permission tiers this run grants. */
  grants: readonly PermissionTier[];
  /** Absolute paths of ESM modules exporting tools; every thread loads them. */
  toolModules?: readonly string[] | undefined;
  /**
   * MCP servers by name, as in an `mcpServers` config (see parseMcpConfig).
   * A role uses a server it names in `mcp`, or one whose `troupe.roles` lists it.
   */
  mcp?: McpServers | undefined;
  /** One budget for the whole tree. */
  budget?: TreeBudgetLimits | undefined;
  /**
   * History compression of the coordinator and every actor (a role's own
   * setting wins field by field): `false` turns it off; an object sets the
   * context window (for a model troupe does not know), the share of it past
   * which a history is compressed (default 0.75) and the turns kept.
   * Default: on for models whose window is known (knownContextWindow).
   */
  compression?: CompressionSetting | undefined;
  /** US dollars per million tokens, per model name. */
  prices?: Readonly<Record<string, ModelPrice>> | undefined;
  runId?: string | undefined;
  /** The bus every event goes to (default a new one). */
  bus?: EventBus | undefined;
  /** Answers approval requests of tools in any thread. */
  approve?: ((request: ApprovalRequest) => Promise<boolean>) | undefined;
  /** Store completed results in `dir`; with `reuse`, a spawn whose result is stored returns it at once. */
  results?: { dir: string; reuse: boolean } | undefined;
  /**
   * The run's journal (see FileJournal): every model response and tool
   * result of every agent is recorded, and what it already holds is replayed
   * (resume, retries after a thread died), so no finished step is paid for twice.
   */
  journal?: Journal | undefined;
  /** How deep delegation may go below the coordinator (default 3). */
  maxDepth?: number | undefined;
  /**
   * Run the actors' shell and python tools without the OS sandbox
   * (bubblewrap), where none can start. Unsafe: only for commands you trust.
   */
  unsafeNoSandbox?: boolean | undefined;
  /** Resource limits, protected-path writes and egress domains for the tools (default: safe defaults). */
  sandbox?: SandboxPolicy | undefined;
  /** The environment models and tools see (default process.env). */
  env?: NodeJS.ProcessEnv | undefined;
  /** Where actors run (default worker threads on this machine). */
  transport?: Transport | undefined;
  /**
   * Per-thread memory limits (default: a 16 MiB young generation, no old-generation
   * limit); a thread past them dies, its actors fail, the pool replaces it.
   */
  threadLimits?: ThreadLimits | undefined;
  /** How long a cancelled actor gets to stop before its thread is stopped, in milliseconds (default 5,000). */
  cancelGraceMs?: number | undefined;
  /** Actors per thread at once; more wait in the admission queue (default 5,000). */
  maxActorsPerThread?: number | undefined;
  /** Spawns waiting for a place before more are refused (default 100,000). */
  maxQueued?: number | undefined;
  /**
   * Where the user tool modules' tools run: 'pool' (default) on a tool pool
   * apart from the actor threads, so a tool that crashes, spins or runs out
   * of memory costs one tool call of one agent; 'thread' inside the actor
   * threads (about one thread hop less per call, but a fatal tool takes its
   * thread's actors with it: only for tools you trust).
   */
  toolIsolation?: 'pool' | 'thread' | undefined;
  /** The most threads of the tool pool (default 2): it starts one and starts more while all are busy. */
  toolThreads?: number | undefined;
  /** A pooled tool call not settled after this long is answered with a timeout (default 120,000 ms). */
  toolTimeoutMs?: number | undefined;
  /**
   * A tool thread or actor thread whose heartbeat stops this long is stopped
   * as blocked (default 5,000 ms): the call or actor whose tool held it is
   * named and pays; the rest run again at once, uncharged.
   */
  blockedThreadMs?: number | undefined;
  /** Memory limits of each tool thread (default a 256 MiB old generation). */
  toolThreadLimits?: ThreadLimits | undefined;
}

const count = (min: number) => z.number().int().min(min).max(Number.MAX_SAFE_INTEGER);
const positive = z.number().positive().finite();
const absolutePath = z
  .string()
  .min(1)
  .refine((path) => isAbsolute(path), { error: 'must be an absolute path' });

const threadLimits = z.object({
  maxOldGenerationSizeMb: positive.optional(),
  maxYoungGenerationSizeMb: positive.optional(),
  codeRangeSizeMb: positive.optional(),
  stackSizeMb: positive.optional(),
});

// The parts of RuntimeOptions that are data. Functions, the bus and the
// transport are checked by TypeScript; roles and tool modules where they load.
const RuntimeOptionsSchema = z.object({
  model: ModelSpecSchema,
  threads: count(1).max(1024).optional(),
  workspace: absolutePath,
  outDir: absolutePath.optional(),
  grants: z.array(PermissionTierSchema),
  toolModules: z.array(absolutePath).optional(),
  budget: z
    .object({
      tokens: positive.optional(),
      costUsd: positive.optional(),
      timeMs: positive.optional(),
      softRatio: z.number().gt(0).max(1).optional(),
      lastTurnShare: z.number().min(0).lt(1).optional(),
    })
    .optional(),
  prices: z
    .record(
      z.string(),
      z.object({
        inputPerMTok: z.number().min(0).finite(),
        outputPerMTok: z.number().min(0).finite(),
      }),
    )
    .optional(),
  runId: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, {
      error:
        'must be 1-128 letters, digits, dots, dashes or underscores, not starting with a dot or dash',
    })
    .optional(),
  results: z.object({ dir: absolutePath, reuse: z.boolean() }).optional(),
  compression: CompressionSettingSchema.optional(),
  maxDepth: count(0).max(64).optional(),
  threadLimits: threadLimits.optional(),
  cancelGraceMs: z.number().min(0).finite().optional(),
  maxActorsPerThread: count(1).optional(),
  maxQueued: count(0).optional(),
  toolIsolation: z.enum(['pool', 'thread']).optional(),
  toolThreads: count(1).max(1024).optional(),
  toolTimeoutMs: positive.optional(),
  blockedThreadMs: positive.optional(),
  toolThreadLimits: threadLimits.optional(),
  sandbox: SandboxPolicySchema.optional(),
});

/**
 * Checks RuntimeOptions before anything starts, so a bad value is a
 * `usage.invalid_option` error naming the option, the rule and the value,
 * never a hang (`maxActorsPerThread: 0` would admit nothing) or a raw error
 * from a library underneath (`threads: 0` from piscina at the first spawn).
 */
export function validateRuntimeOptions(options: RuntimeOptions): void {
  const parsed = RuntimeOptionsSchema.safeParse(options);
  if (parsed.success) return;
  const problems = parsed.error.issues.map((issue) => {
    const path = issue.path.join('.');
    const value = issue.path.reduce<unknown>(
      (at, key) =>
        at !== null && typeof at === 'object'
          ? (at as Record<PropertyKey, unknown>)[key]
          : undefined,
      options,
    );
    return `${path || 'options'}: ${issue.message} (got ${describeValue(value)})`;
  });
  throw new TroupeError('usage.invalid_option', `Invalid RuntimeOptions: ${problems.join('; ')}.`);
}

function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (
    typeof value === 'number' ||
    typeof value === 'boolean' ||
    value === undefined ||
    value === null
  )
    return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value;
}
