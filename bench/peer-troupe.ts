import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventBus } from '../src/events/bus.js';
import { TraceWriter } from '../src/events/trace.js';
import type { ModelSpec } from '../src/model/model.js';
import { defineRole, userTool } from '../src/roles/role.js';
import { FileJournal } from '../src/runtime/resume/journal.js';
import { Runtime } from '../src/runtime/runtime.js';
import {
  type FanoutRun,
  FINAL_ANSWER,
  measurePhases,
  type PeerWorkload,
  type PhaseMeasurement,
} from './fanout-phases.js';

/**
 * troupe's side of the peers' fan-out: the workload's agents spawned on the
 * runtime as `troupe run` hosts them (its own bus with the run's trace
 * writer, the tool on the tool pool as a user tool module), on the scripted
 * model, or on any other model spec (the real SDK path uses `openai`).
 */

const toolModule = join(fileURLToPath(import.meta.url), '..', 'tools.js');

/** The scripted model of the workload: a `noop` call on every turn but the last. */
export function workloadSpec(workload: PeerWorkload): ModelSpec {
  const call = { toolCalls: [{ name: 'noop', arguments: {} }] };
  return {
    provider: 'scripted',
    script: {
      defaultLatencyMs: workload.latencyMs,
      steps: [...Array.from({ length: workload.turns - 1 }, () => call), { content: FINAL_ANSWER }],
    },
  };
}

export async function troupePhases(
  workload: PeerWorkload,
  model: ModelSpec = workloadSpec(workload),
): Promise<PhaseMeasurement> {
  const workspace = mkdtempSync(join(tmpdir(), 'troupe-peers-'));
  const bus = new EventBus();
  const trace = new TraceWriter(join(workspace, 'run', 'trace.jsonl'));
  trace.attach(bus);
  const journal =
    workload.journal === true
      ? new FileJournal(join(workspace, 'run', 'journal.jsonl'), { runId: 'bench', task: 'bench' })
      : undefined;
  const worker = defineRole({
    name: 'worker',
    description: 'Runs the benchmark workload.',
    system: 'You run the benchmark.',
    tools: [userTool('noop')],
    retry: 'fail_fast',
  });
  const runtime = new Runtime({
    bus,
    model,
    roles: [worker],
    workspace,
    grants: ['read'],
    toolModules: [toolModule],
    maxActorsPerThread: Math.max(5000, workload.n),
    maxQueued: Math.max(100_000, workload.n),
    ...(journal === undefined ? {} : { journal }),
  });
  const run: FanoutRun = async (n) => {
    const results = await Promise.all(
      Array.from({ length: n }, (_, index) => runtime.spawn('worker', `task ${index}`).result),
    );
    return results.filter(
      (result) => result.status !== 'completed' || result.final !== FINAL_ANSWER,
    ).length;
  };
  try {
    return await measurePhases(workload.n, run);
  } finally {
    await runtime.close();
    journal?.close();
    trace.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}
