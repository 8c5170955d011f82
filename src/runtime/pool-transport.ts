import type { RuntimeOptions } from './runtime-options.js';
import { LocalTransport } from './wire/local-transport.js';
import type { HostConfig } from './wire/protocol.js';
import { DEFAULT_AGENT_THREAD_LIMITS, defaultAgentThreads } from './wire/thread-start.js';
import { type ToolLaneLinks, ToolPool } from './wire/tool-pool.js';

/**
 * The transport a runtime uses when given none: a LocalTransport (piscina
 * pool) whose workers get the run's workspace, grants, tool modules and
 * environment.
 */
export function createPoolTransport(runId: string, options: RuntimeOptions): LocalTransport {
  const threads = options.threads ?? defaultAgentThreads();
  return new LocalTransport({
    threads,
    config: hostConfigOf(runId, options),
    // One thread first, more as every one is saturated (the scheduler asks); with the user's tools
    // in the actor threads, all at once: a tool that crashes its thread takes only that thread's
    // share of the actors.
    startThreads: options.toolIsolation === 'thread' ? threads : 1,
    resourceLimits: { ...DEFAULT_AGENT_THREAD_LIMITS, ...options.threadLimits },
    // The same bound as the tool threads': a host silent this long is stopped, its culprit named.
    blockedMs: options.blockedThreadMs ?? 5000,
  });
}

/** What every host of a run is built from: the run's workspace, grants, tool modules and environment. */
export function hostConfigOf(runId: string, options: RuntimeOptions): HostConfig {
  return {
    runId,
    workspace: options.workspace,
    ...(options.outDir === undefined ? {} : { outDir: options.outDir }),
    grants: [...options.grants],
    toolModules: [...(options.toolModules ?? [])],
    ...(options.mcp === undefined ? {} : { mcp: { ...options.mcp } }),
    ...(options.env === undefined ? {} : { env: definedEnv(options.env) }),
    hasApprove: options.approve !== undefined,
    ...(isolatesTools(options) ? { isolateTools: true } : {}),
    eventText: true,
    ...(options.journal === undefined ? {} : { journal: true }),
    ...(options.unsafeNoSandbox === true ? { unsafeNoSandbox: true } : {}),
    ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
    ...(options.budget?.tokens !== undefined || options.budget?.costUsd !== undefined
      ? { budget: true }
      : {}),
  };
}

/** True when the run's user tool modules run on the tool pool (the default), not in the actor threads. */
export function isolatesTools(options: RuntimeOptions): boolean {
  return options.toolIsolation !== 'thread' && (options.toolModules?.length ?? 0) > 0;
}

/**
 * The pool user tool code runs on, apart from the actors: 2 threads by
 * default, each with a 256 MiB old generation, a per-call timeout and a
 * watchdog that stops a thread whose heartbeat stops (docs/ARCHITECTURE.md,
 * "Failure model"). With `lanes`, actor threads call its threads directly.
 */
export function createToolPool(
  runId: string,
  options: RuntimeOptions,
  lanes?: ToolLaneLinks | undefined,
): ToolPool {
  return new ToolPool({
    lanes,
    threads: options.toolThreads ?? 2,
    timeoutMs: options.toolTimeoutMs,
    blockedMs: options.blockedThreadMs,
    limits: options.toolThreadLimits,
    config: {
      runId,
      workspace: options.workspace,
      ...(options.outDir === undefined ? {} : { outDir: options.outDir }),
      grants: [...options.grants],
      toolModules: [...(options.toolModules ?? [])],
      ...(options.env === undefined ? {} : { env: definedEnv(options.env) }),
      hasApprove: options.approve !== undefined,
      ...(options.unsafeNoSandbox === true ? { unsafeNoSandbox: true } : {}),
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
      // Bounded before it crosses: the main thread never holds more per call.
      maxResultChars: 64_000,
    },
  });
}

function definedEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value;
  return out;
}
