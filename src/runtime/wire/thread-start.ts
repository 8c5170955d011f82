import { availableParallelism } from 'node:os';
import type { ResourceLimits } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { troupeFileUrl } from '../../util/package-files.js';

/**
 * Starting the agent pool's threads before the runtime that uses them
 * exists. A thread's start (Node's bootstrap for the thread, then troupe's
 * modules compiled for its isolate) is the longest part of a cold
 * `troupe run` before the first sub-agent's model request; the CLI starts
 * the threads as soon as it knows the command, while the main thread still
 * loads its own modules, and the run's LocalTransport adopts them.
 *
 * This module is kept light (piscina, Node built-ins and util/package-files only): it is loaded
 * first, before zod and the rest of troupe.
 */

/** What a pool's threads are: the same shape is needed to adopt a prestarted pool. */
export interface AgentPoolShape {
  /** The worker entry's file URL (`agentWorkerUrl()`). */
  filename: string;
  threads: number;
  resourceLimits?: ResourceLimits | undefined;
}

/** Default agent threads: one per core, at most 4. */
export function defaultAgentThreads(): number {
  return Math.min(4, Math.max(1, availableParallelism()));
}

/**
 * Default per-thread limits of the agent pool: a bounded young generation.
 * Unbounded, V8 grows it to ~48 MiB per thread in a fan-out; at 4 MiB a
 * thread holding hundreds of waiting actors scavenged three times as often
 * and spent about a third of its time collecting; 16 MiB measured ~5% less
 * CPU per agent (~14% less on the cold run) than 4 MiB for ~9 MiB more peak
 * RSS at N = 1,000 (docs/PERFORMANCE.md).
 */
export const DEFAULT_AGENT_THREAD_LIMITS: Readonly<ResourceLimits> = {
  maxYoungGenerationSizeMb: 16,
};

/**
 * The built worker entry. Workers load built JS, so it is dist/'s from
 * source (tests run the TypeScript files), as a library and from the bundles.
 */
export function agentWorkerUrl(): URL {
  return troupeFileUrl('dist/workers/agent-entry.cjs');
}

/**
 * A piscina pool of `shape` that starts `startThreads` threads now (all by
 * default; piscina starts the others when host tasks wait for a thread):
 * one long-lived host task per thread, so `concurrentTasksPerWorker: 1`;
 * `atomics: 'disabled'` keeps an idle thread's event loop running between
 * messages; no workerData (each host gets its run's config with its task,
 * so threads can start before the run is known).
 */
export function createAgentPool(shape: AgentPoolShape, startThreads = shape.threads): Piscina {
  return new Piscina({
    filename: shape.filename,
    minThreads: Math.min(startThreads, shape.threads),
    maxThreads: shape.threads,
    concurrentTasksPerWorker: 1,
    atomics: 'disabled',
    idleTimeout: Number.POSITIVE_INFINITY,
    ...(shape.resourceLimits === undefined ? {} : { resourceLimits: shape.resourceLimits }),
  });
}

interface Prestarted {
  shape: AgentPoolShape;
  pool: Piscina;
  errors: unknown[];
}

let prestarted: Prestarted | undefined;

/**
 * Starts a pool of `shape` with one thread now, for the next LocalTransport
 * of the same shape in this process to adopt (`adoptPrestartedPool`); the
 * others start when it does. One thread, not all: on a machine with few
 * cores, the main thread loading its own modules and one thread loading
 * the host's keep the cores busy, and more threads starting at once only
 * slow both down (the first sub-agent needs one ready thread). Its thread
 * loads the agent host's modules at once. Idle piscina threads do not keep
 * the process alive, so a pool nobody adopts (a usage error) costs nothing
 * at exit. Does nothing when one is already waiting.
 */
export function prestartAgentPool(shape: AgentPoolShape): void {
  if (prestarted !== undefined) return;
  const pool = createAgentPool(shape, 1);
  const errors: unknown[] = [];
  // Unhandled, a pool 'error' event would take the process down; the adopter reports them.
  pool.on('error', (error: unknown) => errors.push(error));
  prestarted = { shape, pool, errors };
}

/**
 * The prestarted pool when it has `shape` (it is handed over once, with the
 * errors its threads reported while it waited); undefined otherwise. A
 * waiting pool of another shape is destroyed: its threads would never be used.
 */
export function adoptPrestartedPool(
  shape: AgentPoolShape,
): { pool: Piscina; errors: readonly unknown[] } | undefined {
  const waiting = prestarted;
  if (waiting === undefined) return undefined;
  prestarted = undefined;
  if (!sameShape(waiting.shape, shape)) {
    void waiting.pool.destroy();
    return undefined;
  }
  waiting.pool.removeAllListeners('error');
  return { pool: waiting.pool, errors: waiting.errors };
}

function sameShape(a: AgentPoolShape, b: AgentPoolShape): boolean {
  return (
    a.filename === b.filename &&
    a.threads === b.threads &&
    sameLimits(a.resourceLimits ?? {}, b.resourceLimits ?? {})
  );
}

function sameLimits(a: ResourceLimits, b: ResourceLimits): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof ResourceLimits>;
  for (const key of keys) if (a[key] !== b[key]) return false;
  return true;
}
