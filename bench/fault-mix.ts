import type { ModelSpec } from '../src/model/model.js';
import type { ScriptStep } from '../src/model/script.js';
import { type AnyRole, defineRole, userTool } from '../src/roles/role.js';

/**
 * The fault mix of issue 11, shared by its test (test/integration/isolation.test.ts)
 * and `npm run bench`: the tools are test/fixtures/tools/faults.mjs.
 */

/** Every kind of fault of issue 11: seven tool faults, two model faults. */
export const FAULT_KINDS = [
  'throws',
  'exit',
  'timer',
  'rejection',
  'oom',
  'hang',
  'spin',
  'model500',
  'model400',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The fault tool each tool-fault kind calls (test/fixtures/tools/faults.mjs). */
const TOOL_OF: Partial<Record<FaultKind, string>> = {
  throws: 'boom',
  exit: 'boom_exit',
  timer: 'crash_later',
  rejection: 'reject_later',
  oom: 'eat_memory',
  hang: 'never_settle',
  spin: 'spin_forever',
};

// mulberry32: a small seeded generator, so the mix is the same on every run.
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Which role each of `n` agents gets: a `share` of them faulty (every kind
 * at least once, in turn), at places a seeded shuffle picks; the rest healthy.
 */
export function faultMixPlan(n: number, share: number, seed: number): (FaultKind | 'healthy')[] {
  const next = random(seed);
  const order = Array.from({ length: n }, (_, index) => index);
  for (let index = n - 1; index > 0; index -= 1) {
    const other = Math.floor(next() * (index + 1));
    [order[index], order[other]] = [order[other] as number, order[index] as number];
  }
  const faulty = Math.max(FAULT_KINDS.length, Math.round(n * share));
  const plan: (FaultKind | 'healthy')[] = new Array(n).fill('healthy');
  for (let index = 0; index < faulty; index += 1)
    plan[order[index] as number] = FAULT_KINDS[index % FAULT_KINDS.length] as FaultKind;
  return plan;
}

/** The healthy role and one role per fault kind. */
export function faultMixRoles(): AnyRole[] {
  const healthy = defineRole({
    name: 'healthy',
    description: 'h',
    system: 'h',
    tools: [userTool('echo')],
  });
  const faulty = FAULT_KINDS.map((kind) =>
    defineRole({
      name: kind,
      description: kind,
      system: kind,
      tools: TOOL_OF[kind] === undefined ? [] : [userTool(TOOL_OF[kind] as string)],
      // A model fault is retried twice, quickly, then fails with its cause.
      retry: { maxRetries: 2, backoffMs: 10 },
    }),
  );
  return [healthy, ...faulty];
}

/**
 * The scripted model of the mix: healthy agents call `echo` twice, faulty
 * ones their fault; every answer after `latencyMs` (default none).
 */
export function faultMixScript(latencyMs = 0): ModelSpec {
  const steps: ScriptStep[] = [
    {
      match: { role: 'healthy', call: 1 },
      toolCalls: [{ name: 'echo', arguments: { text: 'one' } }],
    },
    {
      match: { role: 'healthy', call: 2 },
      toolCalls: [{ name: 'echo', arguments: { text: 'two' } }],
    },
    { match: { role: 'healthy' }, content: 'healthy done', repeat: true },
    {
      match: { role: 'model500' },
      error: { code: 'model.server', status: 500, message: 'HTTP 500 from the provider' },
      repeat: true,
    },
    {
      match: { role: 'model400' },
      error: { code: 'model.bad_request', status: 400, message: 'HTTP 400: invalid request' },
      repeat: true,
    },
  ];
  for (const [kind, tool] of Object.entries(TOOL_OF)) {
    steps.push(
      { match: { role: kind, call: 1 }, toolCalls: [{ name: tool }] },
      { match: { role: kind }, content: 'the faulty one answered', repeat: true },
    );
  }
  return { provider: 'scripted', script: { steps, defaultLatencyMs: latencyMs } };
}
