import type { EventBus } from '../events/bus.js';
import type { McpServers } from '../mcp/config.js';
import type { ModelSpec } from '../model/model.js';
import type { AnyRole } from '../roles/role.js';
import type { ApprovalRequest, PermissionTier } from '../tools/tool.js';
import type { TreeBudgetLimits } from './budget/tree-budget.js';
import type { ModelPrice } from './budget/usage-ledger.js';
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
  /** Worker threads (default the available cores, at most 4). */
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
  /** US dollars per million tokens, per model name. */
  prices?: Readonly<Record<string, ModelPrice>> | undefined;
  runId?: string | undefined;
  /** The bus every event goes to (default a new one). */
  bus?: EventBus | undefined;
  /** Answers approval requests of tools in any thread. */
  approve?: ((request: ApprovalRequest) => Promise<boolean>) | undefined;
  /** Store completed results in `dir`; with `reuse`, a spawn whose result is stored returns it at once. */
  results?: { dir: string; reuse: boolean } | undefined;
  /** How deep delegation may go below the coordinator (default 3). */
  maxDepth?: number | undefined;
  /**
   * Run the actors' shell and python tools without the OS sandbox
   * (bubblewrap), where none can start. Unsafe: only for commands you trust.
   */
  unsafeNoSandbox?: boolean | undefined;
  /** The environment models and tools see (default process.env). */
  env?: NodeJS.ProcessEnv | undefined;
  /** Where actors run (default worker threads on this machine). */
  transport?: Transport | undefined;
  /**
   * Per-thread memory limits (default: a 4 MiB young generation, no old-generation
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
  /** Threads of the tool pool (default 2). */
  toolThreads?: number | undefined;
  /** A pooled tool call not settled after this long is answered with a timeout (default 120,000 ms). */
  toolTimeoutMs?: number | undefined;
  /** A tool thread whose heartbeat stops this long is stopped as blocked (default 5,000 ms). */
  blockedThreadMs?: number | undefined;
  /** Memory limits of each tool thread (default a 256 MiB old generation). */
  toolThreadLimits?: ThreadLimits | undefined;
}
