import { afterEach, describe, expect, it } from 'vitest';
import {
  FAULT_KINDS,
  type FaultKind,
  faultMixPlan,
  faultMixRoles,
  faultMixScript,
} from '../../bench/fault-mix.js';
import type { ActorResult } from '../../src/roles/result.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from './helpers.js';

afterEach(async () => {
  await closeRuntimes();
});

// What the faulty agent's tool result (tool faults) or error (model faults) must say.
const CAUSE: Record<FaultKind, RegExp> = {
  throws: /boom: the tool failed on purpose/,
  exit: /boom_exit called process\.exit\(3\)/,
  timer: /crash_later threw an uncaught exception \(uncaught: crashed on purpose\)/,
  rejection: /reject_later left an unhandled promise rejection \(.*rejected on purpose\)/,
  // The GC storm before the end may trip the watchdog first: either way the culprit is named.
  oom: /eat_memory (ran its thread out of memory|blocked its thread for \d+ ms)/,
  hang: /never_settle did not finish within 4000 ms/,
  spin: /spin_forever blocked its thread for \d+ ms/,
  model500: /HTTP 500/,
  model400: /HTTP 400/,
};

describe('Isolation: one faulty tool never takes healthy agents with it', () => {
  it('runs 500 agents on 4 threads with every kind of fault; no healthy agent fails', async () => {
    const plan = faultMixPlan(500, 0.1, 20_261_202);
    const { runtime, events } = makeRuntime({
      threads: 4,
      roles: faultMixRoles(),
      model: faultMixScript(),
      toolThreads: 2,
      // Bounds well above what a starved thread waits on a loaded 2-core CI machine
      // (500 ms mistook a healthy thread's late heartbeat for a blocking call there).
      toolTimeoutMs: 4000,
      blockedThreadMs: 2000,
      toolThreadLimits: { maxOldGenerationSizeMb: 64 },
    });
    const refs = plan.map((kind, index) => runtime.spawn(kind, `task ${index}`));
    const results = await Promise.all(refs.map((ref) => ref.result));

    const healthy = results.filter((_, index) => plan[index] === 'healthy');
    const healthyFailed = healthy.filter((result) => result.status !== 'completed');
    expect(healthyFailed.map((result) => `${result.agentId}: ${result.error?.message}`)).toEqual(
      [],
    );
    for (const result of healthy) expect(result.final).toBe('healthy done');

    const toolResults = ofType(events, 'tool.result');
    const seen = new Set<string>();
    results.forEach((result: ActorResult, index) => {
      const kind = plan[index] as FaultKind | 'healthy';
      if (kind === 'healthy') return;
      seen.add(kind);
      if (kind === 'model500' || kind === 'model400') {
        expect(result.status).toBe('failed');
        expect(result.error?.message).toMatch(CAUSE[kind]);
        return;
      }
      // A tool fault costs its own tool call: the model reads why and answers.
      expect(result).toMatchObject({ status: 'completed', final: 'the faulty one answered' });
      const own = toolResults.find((event) => event.agentId === result.agentId);
      expect(own?.ok).toBe(false);
      expect(own?.content).toMatch(CAUSE[kind]);
    });
    expect([...seen].sort()).toEqual([...FAULT_KINDS].sort());
    expectWellFormed(events);
  }, 180_000);
});
