import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';

/** Test-only tools that misbehave on purpose (built JS, loaded in workers). */
export const FAULT_TOOLS = fileURLToPath(new URL('../fixtures/tools/faults.mjs', import.meta.url));

const open: Runtime[] = [];

/** A runtime on a real pool of at most 2 threads; closed by `closeRuntimes` after each test. */
export function makeRuntime(options: Partial<RuntimeOptions> & Pick<RuntimeOptions, 'model'>): {
  runtime: Runtime;
  events: AgentEvent[];
} {
  const runtime = new Runtime({
    workspace: process.cwd(),
    grants: ['read'],
    threads: 2,
    toolModules: [FAULT_TOOLS],
    ...options,
  });
  const events: AgentEvent[] = [];
  runtime.bus.onAny((event) => events.push(event));
  open.push(runtime);
  return { runtime, events };
}

/** Closes every runtime a test made. */
export async function closeRuntimes(): Promise<void> {
  await Promise.all(open.splice(0).map((runtime) => runtime.close()));
}

/**
 * The stream invariants: seq gap-free from 0, one agent.spawned and one
 * agent.finished per agent, nothing of an agent before its spawned or after
 * its finished, and parents that exist.
 */
export function expectWellFormed(
  events: readonly AgentEvent[],
  roots: readonly string[] = [],
): void {
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
  const spawned = events.filter((event) => event.type === 'agent.spawned');
  const finished = events.filter((event) => event.type === 'agent.finished');
  expect(finished.length).toBe(spawned.length);
  expect(new Set(spawned.map((event) => event.agentId)).size).toBe(spawned.length);
  expect(new Set(finished.map((event) => event.agentId)).size).toBe(finished.length);
  const known = new Set([...roots, ...spawned.map((event) => event.agentId)]);
  for (const event of spawned)
    if (event.parentId !== undefined) expect(known.has(event.parentId)).toBe(true);
  const byAgent = new Map<string, AgentEvent[]>();
  for (const event of events) {
    if (roots.includes(event.agentId)) continue;
    const list = byAgent.get(event.agentId) ?? [];
    list.push(event);
    byAgent.set(event.agentId, list);
  }
  for (const [agentId, list] of byAgent) {
    expect(list[0]?.type, `${agentId} starts with agent.spawned`).toBe('agent.spawned');
    expect(list.at(-1)?.type, `${agentId} ends with agent.finished`).toBe('agent.finished');
  }
}

/** Events of one type, typed. */
export function ofType<TType extends AgentEvent['type']>(
  events: readonly AgentEvent[],
  type: TType,
) {
  return events.filter(
    (event): event is Extract<AgentEvent, { type: TType }> => event.type === type,
  );
}
