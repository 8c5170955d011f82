import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventBus } from '../src/events/bus.js';
import { TraceWriter } from '../src/events/trace.js';
import type { Script } from '../src/model/script.js';
import { defineRole, userTool } from '../src/roles/role.js';
import { createNatsTransport } from '../src/runtime/nats-setup.js';
import { Runtime } from '../src/runtime/runtime.js';
import type { RuntimeOptions } from '../src/runtime/runtime-options.js';
import { type NatsCluster, natsServerPath, startNatsCluster } from './nats.js';
import { median } from './stats.js';

/**
 * Where the NATS fan-out's time goes, round by round (Linux: reads /proc):
 *
 *   node --expose-gc dist/bench/nats-probe.js [nats|local] [rounds]
 *
 * Runs the bench's N = 1,000 fan-out (the same script, role, trace writer
 * and thread budget as `npm run bench -- --nats`) several times in one
 * process, on two local worker nodes or on the local pool, and prints for
 * each round the wall time, the CPU of every process of the cluster split
 * into its main thread, its busiest other thread and the rest (V8's
 * helper threads, tool threads), and per-agent phases from the events'
 * timestamps: spawn to first model request, a model call (200 ms of it is
 * the script's latency), a model response to the next request (the tool
 * call between). The first two rounds warm the JIT; the last line gives
 * the medians of the rounds after them. For profiles, run the nodes with
 * `--cpu-prof` (see docs/PERFORMANCE.md) and summarize the window the
 * last round prints with bench/profile-summary.ts `--between`.
 */

const N = 1000;
const FANOUT: Script = {
  defaultLatencyMs: 200,
  steps: [
    { toolCalls: [{ name: 'noop', arguments: {} }] },
    { toolCalls: [{ name: 'noop', arguments: {} }] },
    { content: 'done' },
  ],
};
const here = fileURLToPath(import.meta.url);
const toolModule = join(here, '..', 'tools.js');
const bencher = defineRole({
  name: 'bencher',
  description: 'b',
  system: 'You run the benchmark.',
  tools: [userTool('noop')],
  retry: 'fail_fast',
});
const quick = defineRole({
  name: 'quick',
  description: 'q',
  system: 'q',
  tools: [userTool('noop')],
  model: { provider: 'scripted', script: { steps: [{ content: 'done', repeat: true }] } },
  retry: 'fail_fast',
});

/** CPU of one process so far, in ms, per thread id (user + system; clock ticks are 1/100 s). */
function threadCpu(pid: number): Map<string, number> {
  const threads = new Map<string, number>();
  let ids: string[] = [];
  try {
    ids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const id of ids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${id}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      threads.set(id, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return threads;
}

interface ProcessCpu {
  total: number;
  main: number;
  busiest: number;
  rest: number;
}

function cpuBetween(
  pid: number,
  before: Map<string, number>,
  after: Map<string, number>,
): ProcessCpu {
  let total = 0;
  let main = 0;
  const others: number[] = [];
  for (const [id, ms] of after) {
    const used = ms - (before.get(id) ?? 0);
    total += used;
    if (id === String(pid)) main = used;
    else others.push(used);
  }
  const busiest = Math.max(0, ...others);
  return { total, main, busiest, rest: total - main - busiest };
}

// Per-agent phases from the events' timestamps (ms): what each agent waited for.
function phases(byAgent: Map<string, { type: string; ts: number }[]>): Record<string, number[]> {
  const out: Record<string, number[]> = { spawnToRequest: [], modelCall: [], betweenCalls: [] };
  for (const events of byAgent.values()) {
    const at = (type: string): number[] =>
      events.filter((event) => event.type === type).map((event) => event.ts);
    const requests = at('model.request');
    const responses = at('model.response');
    const spawned = at('agent.spawned')[0];
    if (spawned !== undefined && requests[0] !== undefined)
      out['spawnToRequest']?.push(requests[0] - spawned);
    requests.forEach((request, index) => {
      const response = responses[index];
      if (response !== undefined) out['modelCall']?.push(response - request);
      const previous = responses[index - 1];
      if (previous !== undefined) out['betweenCalls']?.push(request - previous);
    });
  }
  return out;
}

// When the agents were spawned, made their first model request and finished, from the first
// spawn (ms): a spawn latency that grows with the spawn's order is a rate, not a delay.
function spread(byAgent: Map<string, { type: string; ts: number }[]>): string {
  const firstOf = (events: { type: string; ts: number }[], type: string): number | undefined =>
    events.find((event) => event.type === type)?.ts;
  const rows: { spawned: number; request: number; finished: number }[] = [];
  for (const events of byAgent.values()) {
    const spawned = firstOf(events, 'agent.spawned');
    const request = firstOf(events, 'model.request');
    const finished = firstOf(events, 'agent.finished');
    if (spawned !== undefined && request !== undefined && finished !== undefined)
      rows.push({ spawned, request, finished });
  }
  if (rows.length === 0) return 'no agents';
  const start = Math.min(...rows.map((row) => row.spawned));
  const at = (values: number[], share: number): number => {
    const sorted = values.map((value) => value - start).sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] ?? 0;
  };
  const line = (name: string, values: number[]): string =>
    `${name} p10 ${at(values, 0.1)} p50 ${at(values, 0.5)} p90 ${at(values, 0.9)} last ${at(values, 1)}`;
  return [
    line(
      'spawned',
      rows.map((row) => row.spawned),
    ),
    line(
      'first request',
      rows.map((row) => row.request),
    ),
    line(
      'finished',
      rows.map((row) => row.finished),
    ),
  ].join('; ');
}

async function main(): Promise<void> {
  const mode = process.argv[2] === 'local' ? 'local' : 'nats';
  const rounds = Math.max(3, Number(process.argv[3] ?? 6));
  const workspace = mkdtempSync(join(tmpdir(), 'troupe-nats-probe-'));
  const runId = `probe-${process.pid}`;
  const extra: Partial<RuntimeOptions> = {};
  let cluster: NatsCluster | undefined;
  const processes: [string, number][] = [['coordinator', process.pid]];
  try {
    if (mode === 'nats') {
      const binary = natsServerPath();
      if (binary === undefined) throw new Error('nats-server is not installed');
      const threads = Math.min(4, Math.max(1, availableParallelism()));
      cluster = await startNatsCluster(binary, 2, Math.max(1, Math.floor(threads / 2)), 1);
      processes.push(...cluster.processes());
      extra.transport = await createNatsTransport(
        runId,
        {
          model: { provider: 'scripted', script: FANOUT },
          workspace,
          grants: ['read'],
          toolModules: [toolModule],
          runId,
        },
        { url: cluster.url },
      );
      extra.runId = runId;
    }
    const bus = new EventBus();
    const trace = new TraceWriter(join(workspace, 'run', 'trace.jsonl'));
    trace.attach(bus);
    const runtime = new Runtime({
      bus,
      model: { provider: 'scripted', script: FANOUT },
      roles: [bencher, quick],
      workspace,
      grants: ['read'],
      toolModules: [toolModule],
      maxActorsPerThread: 20_000,
      ...extra,
    });
    try {
      await runtime.spawn('quick', 'warm up').result;
      const walls: number[] = [];
      const perProcess = new Map<string, ProcessCpu[]>();
      for (let round = 0; round < rounds; round += 1) {
        (globalThis as { gc?: () => void }).gc?.();
        const byAgent = new Map<string, { type: string; ts: number }[]>();
        const stop = bus.onAny((event) => {
          if (!event.agentId.startsWith('bencher')) return;
          const events = byAgent.get(event.agentId) ?? [];
          if (events.length === 0) byAgent.set(event.agentId, events);
          events.push({ type: event.type, ts: event.ts });
        });
        const before = processes.map(([, pid]) => threadCpu(pid));
        const window = process.hrtime.bigint() / 1000n;
        const started = performance.now();
        const refs = Array.from({ length: N }, (_, index) =>
          runtime.spawn('bencher', `task ${index}`),
        );
        const results = await Promise.all(refs.map((ref) => ref.result));
        const wallMs = performance.now() - started;
        const windowEnd = process.hrtime.bigint() / 1000n;
        stop();
        const failed = results.filter((result) => result.status !== 'completed').length;
        const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
        console.log(
          `round ${round}: wall ${wallMs.toFixed(0)} ms, ${failed} failed, load ${load}, window --between ${window},${windowEnd}`,
        );
        processes.forEach(([name, pid], index) => {
          const cpu = cpuBetween(pid, before[index] ?? new Map(), threadCpu(pid));
          console.log(
            `  ${name.padEnd(12)} CPU ${String(cpu.total).padStart(5)} ms: main ${cpu.main}, busiest other thread ${cpu.busiest}, rest ${cpu.rest}`,
          );
          if (round >= 2) perProcess.set(name, [...(perProcess.get(name) ?? []), cpu]);
        });
        const text = Object.entries(phases(byAgent))
          .map(([name, values]) => `${name} p50 ${median(values).toFixed(0)}`)
          .join(', ');
        console.log(`  agents (ms): ${text}`);
        console.log(`  spread (ms from the first spawn): ${spread(byAgent)}`);
        if (round >= 2) walls.push(wallMs);
      }
      let sum = 0;
      const parts = [...perProcess].map(([name, cpus]) => {
        const total = median(cpus.map((cpu) => cpu.total));
        sum += total;
        return `${name} ${total} (main ${median(cpus.map((cpu) => cpu.main))})`;
      });
      console.log(
        `${mode}, medians of rounds 2-${rounds - 1}: wall ${median(walls).toFixed(0)} ms; CPU ms ${parts.join(', ')}; sum ${sum}`,
      );
    } finally {
      await runtime.close();
      trace.close();
    }
  } finally {
    await cluster?.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

await main();
