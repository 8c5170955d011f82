import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent } from '../src/agent/agent.js';
import { EventBus, waitForEvent } from '../src/events/bus.js';
import { AgentEventSchema } from '../src/events/schema.js';
import { TraceWriter } from '../src/events/trace.js';
import type { ModelSpec } from '../src/model/model.js';
import { ScriptedModel } from '../src/model/providers/scripted.js';
import type { Script } from '../src/model/script.js';
import { defineRole, userTool } from '../src/roles/role.js';
import { createNatsTransport } from '../src/runtime/nats-setup.js';
import { FileJournal } from '../src/runtime/resume/journal.js';
import { Runtime } from '../src/runtime/runtime.js';
import type { RuntimeOptions } from '../src/runtime/runtime-options.js';
import { ToolRegistry } from '../src/tools/registry.js';
import { type ColdStartResult, coldStartField, measureColdStart } from './cold-start.js';
import { compareBuilds, printComparison } from './compare.js';
import { FAULT_KINDS, faultMixPlan, faultMixRoles, faultMixScript } from './fault-mix.js';
import { liveFrame } from './live-frame.js';
import { natsServerPath, startNatsCluster } from './nats.js';
import { peersSection, type Spread, spreadOf } from './peers.js';
import { type ScaleMeasurement, scaleFanout } from './scale.js';
import { journalSdkPathSection, sdkPathSection } from './sdk-path.js';
import { median } from './stats.js';
import { burnTool, noopTool } from './tools.js';

/**
 * `npm run bench` (add `-- --full` for N = 10,000; `-- --isolation` for only
 * the isolation figures of issue 11, `-- --journal` for only the run
 * journal's cost at N = 1,000, `-- --compare <other build>` for this
 * build's N = 1,000 fan-out beside another build's (bench/compare.ts),
 * `-- --peers` for only the side-by-side table
 * with the peer frameworks (bench/peers.ts; with `--full`, added to the
 * whole run), each merged into latest.json): a fan-out of N
 * sub-agents, each three model turns on a scripted model that waits 200 ms
 * per call (two tool calls, then an answer), on troupe's worker pool and on
 * the in-process baseline (the same Agent with Promise.all), side by side in
 * one run; plus a CPU-bound tool, spawn latency and event throughput. Every
 * case runs in a fresh process (so peak RSS is its own), three times; each
 * fan-out measures the run after its same-size warm-ups (at least 2,000
 * agents in all) and keeps the cold first run beside it. The table shows
 * medians and bench/results/latest.json keeps them.
 */

type Impl = 'troupe' | 'in-process';
type Case =
  // `options`: runtime options on top of the defaults, to try one setting by hand
  // (`--case '{"kind":"fanout","impl":"troupe","n":1000,"options":{"toolThreads":1}}'`).
  | { kind: 'fanout'; impl: Impl; n: number; options?: Partial<RuntimeOptions> }
  | { kind: 'cpu'; impl: Impl; n: number; latencyMs?: number }
  | { kind: 'spawn'; samples: number }
  | { kind: 'events'; actors: number; perActor: number }
  | { kind: 'isolation'; mode: 'thread' | 'pool' | 'mix'; n: number }
  | { kind: 'scale'; n: number }
  | { kind: 'live-frame'; n: number }
  | { kind: 'journal'; journal: boolean; n: number }
  | { kind: 'journal-paired'; n: number; rounds: number }
  | { kind: 'nats'; n: number }
  | { kind: 'otel'; collector: OtelCollector; n: number };

// Issue 16: the fan-out with OpenTelemetry export off, to a collector that
// is up, to one that refuses connections, and to one that accepts them and
// never answers.
type OtelCollector = 'off' | 'accepting' | 'refused' | 'silent';

interface Measurement {
  wallMs: number;
  cpuMs: number;
  peakRssMiB: number;
  extra?: number;
  coldWallMs?: number;
  coldCpuMs?: number;
  /** The largest `extra` of the repeats (the fault mix's count of healthy agents failed). */
  extraMax?: number;
}

/** The journal paired in one process: the runs without it (wallMs, cpuMs) and with it, and the per-pair ratios' medians. */
interface PairedMeasurement extends Measurement {
  withWallMs: number;
  withCpuMs: number;
  wallRatio: number;
  cpuRatio: number;
  /** The main thread's own CPU (ms, medians of the pairs), where Linux reports it per thread. */
  mainCpuMs?: number;
  withMainCpuMs?: number;
}

const LATENCY_MS = 200;
const TURNS = 3;
const IDEAL_MS = LATENCY_MS * TURNS;
const CPU_TOOL_MS = 50;
const REPEATS = 3;
// The NATS comparison swings more between rounds than the others (four processes on a shared machine).
const NATS_ROUNDS = 5;
const here = fileURLToPath(import.meta.url);
const toolModule = join(here, '..', 'tools.js');
// The fault tools of the isolation case (plain ESM in the repository, not built).
const faultModule = join(here, '..', '..', '..', 'test', 'fixtures', 'tools', 'faults.mjs');
const ISOLATION_N = 500;
const ISOLATION_THREADS = 4;
const ISOLATION_REPEATS = 5;
// Issue 14: the fan-out with and without the run journal, in turns.
const JOURNAL_N = 1000;
const JOURNAL_REPEATS = 3;
// Pairs (without, with) of the in-process comparison, in alternating order.
const JOURNAL_PAIRS = 8;
const OTEL_N = 1000;
const OTEL_ROUNDS = 5;
// The package root of this build (dist/bench/run.js → .).
const root = join(here, '..', '..', '..');
const COLD_STARTS = 10;
// Issue 18: agents of the real SDK path (streamed HTTP to a local server, per client process).
const SDK_PATH_N = 200;
// Pairs of fresh processes for the journal on the real SDK path (issue 14).
const JOURNAL_SDK_PAIRS = 5;

function fanoutScript(
  latencyMs: number,
  tool: { name: string; arguments: Record<string, unknown> },
): Script {
  return {
    defaultLatencyMs: latencyMs,
    steps: [{ toolCalls: [tool] }, { toolCalls: [tool] }, { content: 'done' }],
  };
}

const FANOUT = fanoutScript(LATENCY_MS, { name: 'noop', arguments: {} });
const CPU = fanoutScript(0, { name: 'burn_cpu', arguments: { ms: CPU_TOOL_MS } });
// Issue 18: the CPU-bound tool with the model's latency (16 agents x 2 calls of ~60 ms, 200 ms
// per model call); its CPU phase is the wall time less the three model turns.
const CPU_LATENCY_TOOL_MS = 60;
const cpuWithLatency = (latencyMs: number): Script =>
  fanoutScript(latencyMs, { name: 'burn_cpu', arguments: { ms: CPU_LATENCY_TOOL_MS } });
const QUICK: Script = { steps: [{ content: 'done', repeat: true }] };

const bencher = defineRole({
  name: 'bencher',
  description: 'b',
  system: 'You run the benchmark.',
  tools: [userTool('noop'), userTool('burn_cpu')],
  retry: 'fail_fast',
});
const quick = defineRole({
  name: 'quick',
  description: 'q',
  system: 'q',
  tools: [userTool('flood_progress')],
  model: { provider: 'scripted', script: QUICK },
  retry: 'fail_fast',
});

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

function peakRssMiB(): number {
  // maxRSS is in KiB on Linux and macOS.
  return process.resourceUsage().maxRSS / 1024;
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

// The runtime as `troupe run` builds it: its own EventBus with the run's
// trace writer attached (every event serialized, redacted and written), so
// the numbers are those of what the CLI ships, not of a bare runtime.
// TROUPE_BENCH_REVALIDATE=1 puts back the old second zod parse of every
// worker event on the main thread, to measure what removing it gained;
// TROUPE_BENCH_NO_TRACE=1 leaves the trace writer detached, to measure what
// the trace costs (and to compare with builds whose bench had none).
async function withRuntime<T>(
  spec: ModelSpec,
  run: (runtime: Runtime) => Promise<T>,
  extra: Partial<RuntimeOptions> = {},
  onBus?: (bus: EventBus) => void,
): Promise<T> {
  const workspace = mkdtempSync(join(tmpdir(), 'troupe-bench-'));
  const bus = new EventBus();
  onBus?.(bus);
  if (process.env['TROUPE_BENCH_REVALIDATE'] === '1') {
    const adopt = bus.adopt.bind(bus);
    bus.adopt = (event) => adopt(AgentEventSchema.parse({ ...event, seq: 0 }));
  }
  const trace = new TraceWriter(join(workspace, 'run', 'trace.jsonl'));
  if (process.env['TROUPE_BENCH_NO_TRACE'] !== '1') trace.attach(bus);
  const runtime = new Runtime({
    bus,
    model: spec,
    roles: [bencher, quick],
    workspace,
    grants: ['read'],
    toolModules: [toolModule],
    maxActorsPerThread: 20_000,
    ...extra,
  });
  try {
    // Warm the pool: threads started, modules loaded (spawning on a running pool).
    await runtime.spawn('quick', 'warm up').result;
    return await run(runtime);
  } finally {
    await runtime.close();
    trace.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}

// Warm-up runs of the same size first, in the same process, so the measured run
// has JIT-compiled code in every thread (V8 still optimizes through the fifth
// run at N=1,000: see docs/PERFORMANCE.md); the cold first run is kept too.
async function troupeFanout(
  n: number,
  script: Script,
  extra: Partial<RuntimeOptions> = {},
  onBus?: (bus: EventBus) => void,
  otherCpuMs?: () => number | undefined,
): Promise<Measurement> {
  return withRuntime(
    { provider: 'scripted', script },
    async (runtime) => {
      const once = (): Promise<Measurement> => fanoutOnce(runtime, n, otherCpuMs);
      const cold = await once();
      let warm = cold;
      for (let index = 0; index < warmups(n); index += 1) warm = await once();
      // Peak RSS is the cold run's: what a process running one such job needs.
      return {
        ...warm,
        peakRssMiB: cold.peakRssMiB,
        coldWallMs: cold.wallMs,
        coldCpuMs: cold.cpuMs,
      };
    },
    extra,
    onBus,
  );
}

// The export is attached to the run's bus as `troupe run --otel` attaches it;
// `extra` is how long closing it took after the run (its bounded last flush).
async function otelFanout(collector: OtelCollector, n: number): Promise<Measurement> {
  if (collector === 'off') return troupeFanout(n, FANOUT);
  const sockets = new Set<Socket>();
  // 'accepting': a collector that reads each request and answers 200 (without
  // decoding it, so the bench process pays only for the export);
  // 'silent': one that takes connections and requests and never answers.
  const server = createServer((request, response) => {
    if (collector !== 'accepting') return;
    request.resume();
    request.on('end', () =>
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
    );
  });
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const closeServer = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  if (collector === 'refused') await closeServer();
  const { exportToOtel } = await import('../src/observe/otel-exporter.js');
  let exporter: ReturnType<typeof exportToOtel> | undefined;
  const measured = await troupeFanout(n, FANOUT, {}, (bus) => {
    exporter = exportToOtel(bus, {
      url: `http://127.0.0.1:${port}/v1/traces`,
      onWarning: () => {},
    });
  });
  const closing = performance.now();
  await exporter?.close();
  const extra = performance.now() - closing;
  if (collector !== 'refused') await closeServer();
  return { ...measured, extra };
}

// One measured fan-out of n bencher agents on a warm runtime. With `otherCpuMs` (CPU used so far
// by other processes of the run, such as NATS worker nodes), `extra` is their CPU during it.
async function fanoutOnce(
  runtime: Runtime,
  n: number,
  otherCpuMs?: () => number | undefined,
): Promise<Measurement> {
  collectGarbage();
  const cpu = process.cpuUsage();
  const otherBefore = otherCpuMs?.();
  const started = performance.now();
  const refs = Array.from({ length: n }, (_, index) => runtime.spawn('bencher', `task ${index}`));
  const results = await Promise.all(refs.map((ref) => ref.result));
  const wallMs = performance.now() - started;
  const cpuMs = cpuMsSince(cpu);
  const failed = results.filter((result) => result.status !== 'completed');
  if (failed.length > 0)
    throw new Error(`${failed.length} agents did not complete: ${failed[0]?.error?.message}`);
  const otherAfter = otherCpuMs?.();
  return {
    wallMs,
    cpuMs,
    peakRssMiB: peakRssMiB(),
    ...(otherBefore === undefined || otherAfter === undefined
      ? {}
      : { extra: otherAfter - otherBefore }),
  };
}

// The calling thread's CPU time in ms (Linux: /proc/thread-self/schedstat, in ns), else undefined.
function mainThreadCpuMs(): number | undefined {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

// Issue 14: the fan-out on two runtimes in one process, one without a journal and one with,
// alternated run by run (after their warm-ups), each pair in the other order than the last.
// On a shared machine the load moves between processes more than the journal costs; within
// one pair both runs see nearly the same machine. Each process's CPU counts only its
// running runtime (the other's threads are idle between its runs).
async function journalPaired(n: number, rounds: number): Promise<PairedMeasurement> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-journal-'));
  const journal = new FileJournal(join(dir, 'journal.jsonl'), { runId: 'bench', task: 'bench' });
  const spec: ModelSpec = { provider: 'scripted', script: FANOUT };
  try {
    return await withRuntime(spec, (without) =>
      withRuntime(
        spec,
        async (journaled) => {
          for (let index = 0; index < warmups(n) + 1; index += 1) {
            await fanoutOnce(without, n);
            await fanoutOnce(journaled, n);
          }
          const pairs: Array<{ without: Measurement; with: Measurement }> = [];
          // The main thread's CPU of one run rides on `extra`.
          const measured = async (runtime: Runtime): Promise<Measurement> => {
            const main = mainThreadCpuMs();
            const measurement = await fanoutOnce(runtime, n);
            const after = mainThreadCpuMs();
            return main === undefined || after === undefined
              ? measurement
              : { ...measurement, extra: after - main };
          };
          for (let index = 0; index < rounds; index += 1) {
            const withoutFirst = index % 2 === 0;
            const first = await measured(withoutFirst ? without : journaled);
            const second = await measured(withoutFirst ? journaled : without);
            pairs.push(
              withoutFirst ? { without: first, with: second } : { without: second, with: first },
            );
          }
          const of = (pick: (pair: (typeof pairs)[number]) => number): number =>
            median(pairs.map(pick));
          return {
            wallMs: of((pair) => pair.without.wallMs),
            cpuMs: of((pair) => pair.without.cpuMs),
            peakRssMiB: peakRssMiB(),
            withWallMs: of((pair) => pair.with.wallMs),
            withCpuMs: of((pair) => pair.with.cpuMs),
            wallRatio: of((pair) => pair.with.wallMs / pair.without.wallMs),
            cpuRatio: of((pair) => pair.with.cpuMs / pair.without.cpuMs),
            ...(pairs[0]?.without.extra === undefined
              ? {}
              : {
                  mainCpuMs: of((pair) => pair.without.extra ?? 0),
                  withMainCpuMs: of((pair) => pair.with.extra ?? 0),
                }),
          };
        },
        { journal },
      ),
    );
  } finally {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// Issue 11's fault mix at the fan-out's pace: N agents on 4 threads, 10% of
// them faulty (every kind, seeded); `extra` counts the healthy agents that failed.
async function faultMix(n: number): Promise<Measurement> {
  const plan = faultMixPlan(n, 0.1, 20_261_202);
  const spec = faultMixScript(LATENCY_MS);
  const roles = [...faultMixRoles(), quick];
  return withRuntime(
    spec,
    async (runtime) => {
      collectGarbage();
      const cpu = process.cpuUsage();
      const started = performance.now();
      const refs = plan.map((kind, index) => runtime.spawn(kind, `task ${index}`));
      const results = await Promise.all(refs.map((ref) => ref.result));
      const wallMs = performance.now() - started;
      const healthyFailed = results.filter(
        (result, index) => plan[index] === 'healthy' && result.status !== 'completed',
      ).length;
      return { wallMs, cpuMs: cpuMsSince(cpu), peakRssMiB: peakRssMiB(), extra: healthyFailed };
    },
    {
      roles,
      threads: ISOLATION_THREADS,
      toolModules: [faultModule],
      toolTimeoutMs: 4000,
      blockedThreadMs: 2000,
      toolThreadLimits: { maxOldGenerationSizeMb: 64 },
    },
  );
}

async function inProcessFanout(n: number, script: Script): Promise<Measurement> {
  const bus = new EventBus();
  const tools = new ToolRegistry([noopTool, burnTool]);
  const once = async (): Promise<Measurement> => {
    collectGarbage();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const agents = Array.from(
      { length: n },
      (_, index) =>
        new Agent({
          name: `bencher-${index + 1}`,
          model: new ScriptedModel(script),
          tools,
          system: 'You run the benchmark.',
          events: bus,
          runId: 'bench',
          role: 'bencher',
          toolContext: { workspace: tmpdir(), grants: ['read'] },
        }),
    );
    const results = await Promise.all(agents.map((agent, index) => agent.run(`task ${index}`)));
    const wallMs = performance.now() - started;
    const cpuMs = cpuMsSince(cpu);
    if (results.some((result) => result.stopReason !== 'final'))
      throw new Error('an in-process agent did not finish');
    return { wallMs, cpuMs, peakRssMiB: peakRssMiB() };
  };
  const cold = await once();
  let warm = cold;
  for (let index = 0; index < warmups(n); index += 1) warm = await once();
  return { ...warm, peakRssMiB: cold.peakRssMiB, coldWallMs: cold.wallMs, coldCpuMs: cold.cpuMs };
}

// Runs until the measured one: enough agents through every thread for the JIT to settle.
function warmups(n: number): number {
  return Math.min(3, Math.max(1, Math.ceil(2000 / n)));
}

async function spawnLatency(samples: number): Promise<Measurement> {
  return withRuntime({ provider: 'scripted', script: QUICK }, async (runtime) => {
    const latencies: number[] = [];
    for (let index = 0; index < samples; index += 1) {
      const started = performance.now();
      const ref = runtime.spawn('quick', `ping ${index}`);
      // Running in its worker: its first model call is on the bus.
      await waitForEvent(runtime.bus, 'model.request', (event) => event.agentId === ref.id);
      latencies.push(performance.now() - started);
      await ref.result;
    }
    return { wallMs: 0, cpuMs: 0, peakRssMiB: peakRssMiB(), extra: median(latencies) };
  });
}

async function eventThroughput(actors: number, perActor: number): Promise<Measurement> {
  const flood: Script = {
    steps: [
      { toolCalls: [{ name: 'flood_progress', arguments: { count: perActor } }] },
      { content: 'done' },
    ],
  };
  return withRuntime({ provider: 'scripted', script: QUICK }, async (runtime) => {
    const flooder = defineRole({
      ...quick,
      name: 'flooder',
      model: { provider: 'scripted', script: flood },
    });
    let progress = 0;
    let total = 0;
    const stopCounting = runtime.bus.onAny((event) => {
      total += 1;
      if (event.type === 'agent.progress') progress += 1;
    });
    collectGarbage();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const refs = Array.from({ length: actors }, (_, index) =>
      runtime.spawn(flooder, `flood ${index}`),
    );
    await Promise.all(refs.map((ref) => ref.result));
    const wallMs = performance.now() - started;
    stopCounting();
    if (progress !== actors * perActor)
      throw new Error(`lost events: ${progress} of ${actors * perActor} arrived`);
    return {
      wallMs,
      cpuMs: cpuMsSince(cpu),
      peakRssMiB: peakRssMiB(),
      extra: total / (wallMs / 1000),
    };
  });
}

// The same fan-out with the actors on two local worker nodes through a nats-server -js: what the
// transport costs. Both sides get the same thread budget: the local run's actor threads (one per
// core, at most 4) split between the nodes, and its tool pool's (at most 2) too, one per node;
// the coordinator starts no threads of its own (its tool pool waits for a call that needs it).
// `extra` is the CPU the server and the nodes used during the measured run.
async function natsFanout(n: number): Promise<Measurement> {
  const binary = natsServerPath();
  if (binary === undefined) throw new Error('nats-server is not installed');
  const threads = Math.min(4, Math.max(1, availableParallelism()));
  const cluster = await startNatsCluster(binary, 2, Math.max(1, Math.floor(threads / 2)), 1);
  const workspace = mkdtempSync(join(tmpdir(), 'troupe-bench-nats-run-'));
  try {
    const runId = `bench-${process.pid}`;
    const options: RuntimeOptions = {
      model: { provider: 'scripted', script: FANOUT },
      workspace,
      grants: ['read'],
      toolModules: [toolModule],
      runId,
    };
    const transport = await createNatsTransport(runId, options, { url: cluster.url });
    return await troupeFanout(n, FANOUT, { transport, runId, workspace }, undefined, () =>
      cluster.cpuMs(),
    );
  } finally {
    await cluster.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

async function runCase(spec: Case): Promise<Measurement> {
  switch (spec.kind) {
    case 'fanout':
      return spec.impl === 'troupe'
        ? troupeFanout(spec.n, FANOUT, spec.options)
        : inProcessFanout(spec.n, FANOUT);
    case 'cpu': {
      const script = spec.latencyMs === undefined ? CPU : cpuWithLatency(spec.latencyMs);
      return spec.impl === 'troupe'
        ? troupeFanout(spec.n, script)
        : inProcessFanout(spec.n, script);
    }
    case 'spawn':
      return spawnLatency(spec.samples);
    case 'events':
      return eventThroughput(spec.actors, spec.perActor);
    case 'nats':
      return natsFanout(spec.n);
    case 'otel':
      return otelFanout(spec.collector, spec.n);
    case 'live-frame':
      return liveFrame(spec.n) as never;
    case 'scale':
      return scaleFanout(spec.n, FANOUT, { bench: bencher, warm: quick }, toolModule) as never;
    case 'journal':
      return spec.journal ? journaledFanout(spec.n) : troupeFanout(spec.n, FANOUT);
    case 'journal-paired':
      return journalPaired(spec.n, spec.rounds);
    case 'isolation':
      return spec.mode === 'mix'
        ? faultMix(spec.n)
        : troupeFanout(spec.n, FANOUT, {
            threads: ISOLATION_THREADS,
            toolIsolation: spec.mode,
          });
  }
}

// The fan-out with a FileJournal as `troupe run` keeps one: every model
// response and tool result of every agent journaled in the main thread.
async function journaledFanout(n: number): Promise<Measurement> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-journal-'));
  const journal = new FileJournal(join(dir, 'journal.jsonl'), { runId: 'bench', task: 'bench' });
  try {
    return await troupeFanout(n, FANOUT, { journal });
  } finally {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// Each measurement in a fresh process: its peak RSS and its JIT state are its own.
function measure(spec: Case): Measurement & { runs: Measurement[] } {
  const runs: Measurement[] = [];
  for (let index = 0; index < REPEATS; index += 1) runs.push(measureOnce(spec));
  return { ...summarize(runs), runs };
}

function measureOnce(spec: Case): Measurement {
  const output = execFileSync(
    process.execPath,
    ['--expose-gc', here, '--case', JSON.stringify(spec)],
    {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    },
  );
  return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Measurement;
}

function summarize(runs: readonly Measurement[]): Measurement {
  const pick = (key: keyof Measurement): number => median(runs.map((run) => run[key] ?? 0));
  return {
    wallMs: pick('wallMs'),
    cpuMs: pick('cpuMs'),
    peakRssMiB: pick('peakRssMiB'),
    extra: pick('extra'),
    coldWallMs: pick('coldWallMs'),
    coldCpuMs: pick('coldCpuMs'),
    extraMax: Math.max(...runs.map((run) => run.extra ?? 0)),
  };
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

// Issue 11: the same fault-free fan-out with user tools in the actor threads
// (as before the tool pool) and on the tool pool, then the fault mix.
// Issue 15: the fan-out at N=1,000 on two local worker nodes over NATS against the local pool.
// Local and NATS runs alternate, a fresh process each, so a load change on
// this shared machine moves both sides of the ratio alike.
function natsSection():
  | {
      n: number;
      localWallOverIdeal: number;
      natsWallOverIdeal: number;
      ratio: number;
      rounds: number;
      roundRatios: number[];
      localCpuMs: number;
      natsCpuMs: number;
      cpuRatio: number;
    }
  | undefined {
  const n = 1000;
  if (natsServerPath() === undefined) {
    console.log('\nNATS fan-out: skipped (no nats-server installed)');
    return undefined;
  }
  const locals: Measurement[] = [];
  const remotes: Measurement[] = [];
  for (let index = 0; index < NATS_ROUNDS; index += 1) {
    locals.push(measureOnce({ kind: 'fanout', impl: 'troupe', n }));
    remotes.push(measureOnce({ kind: 'nats', n }));
  }
  const localWallOverIdeal = round(median(locals.map((run) => run.wallMs)) / IDEAL_MS, 3);
  const natsWallOverIdeal = round(median(remotes.map((run) => run.wallMs)) / IDEAL_MS, 3);
  const ratio = round(natsWallOverIdeal / localWallOverIdeal, 3);
  const roundRatios = remotes.map((run, index) =>
    round(run.wallMs / (locals[index]?.wallMs ?? Number.NaN), 3),
  );
  // CPU of the whole cluster (coordinator, nodes and server) against the local process's, per
  // measured run: steadier than the wall time on a shared machine, where the load moves it.
  const clusterCpu = remotes.map((run) => run.cpuMs + (run.extra ?? Number.NaN));
  const localCpuMs = round(median(locals.map((run) => run.cpuMs)), 0);
  const natsCpuMs = round(median(clusterCpu), 0);
  const cpuRatio = round(natsCpuMs / localCpuMs, 3);
  console.log(
    `\nNATS fan-out, N=${n} on two local worker nodes, ${NATS_ROUNDS} rounds alternating with the local pool: wall/ideal ${natsWallOverIdeal.toFixed(3)} against ${localWallOverIdeal.toFixed(3)}: ${ratio.toFixed(3)} x (rounds ${roundRatios.map((value) => value.toFixed(2)).join(', ')}; target <= 1.15 x); CPU of the cluster ${natsCpuMs} ms against ${localCpuMs} ms: ${cpuRatio.toFixed(3)} x`,
  );
  return {
    n,
    localWallOverIdeal,
    natsWallOverIdeal,
    ratio,
    rounds: NATS_ROUNDS,
    roundRatios,
    localCpuMs,
    natsCpuMs,
    cpuRatio,
  };
}

function isolationSection() {
  // Before and after in turns, so a machine that gets busier mid-bench weighs on both alike.
  const beforeRuns: Measurement[] = [];
  const afterRuns: Measurement[] = [];
  for (let index = 0; index < ISOLATION_REPEATS; index += 1) {
    beforeRuns.push(measureOnce({ kind: 'isolation', mode: 'thread', n: ISOLATION_N }));
    afterRuns.push(measureOnce({ kind: 'isolation', mode: 'pool', n: ISOLATION_N }));
  }
  const before = summarize(beforeRuns);
  const after = summarize(afterRuns);
  const mix = measure({ kind: 'isolation', mode: 'mix', n: ISOLATION_N });
  const isolation = {
    n: ISOLATION_N,
    threads: ISOLATION_THREADS,
    toolsInActorThreads: {
      wallOverIdeal: round(before.wallMs / IDEAL_MS, 3),
      cpuMsPerAgent: round(before.cpuMs / ISOLATION_N, 3),
    },
    toolPool: {
      wallOverIdeal: round(after.wallMs / IDEAL_MS, 3),
      cpuMsPerAgent: round(after.cpuMs / ISOLATION_N, 3),
    },
    slowdown: round(after.wallMs / before.wallMs - 1, 3),
    faultMix: {
      faultKinds: FAULT_KINDS.length,
      faulty: faultMixPlan(ISOLATION_N, 0.1, 20_261_202).filter((kind) => kind !== 'healthy')
        .length,
      wallOverIdeal: round(mix.wallMs / IDEAL_MS, 3),
      healthyFailed: mix.extraMax ?? 0,
    },
  };
  console.log(
    `\nisolation, N=${ISOLATION_N} on ${ISOLATION_THREADS} threads, fault-free (wall/ideal, cpu ms/agent): user tools in the actor threads ${isolation.toolsInActorThreads.wallOverIdeal.toFixed(3)}, ${isolation.toolsInActorThreads.cpuMsPerAgent.toFixed(3)}; on the tool pool ${isolation.toolPool.wallOverIdeal.toFixed(3)}, ${isolation.toolPool.cpuMsPerAgent.toFixed(3)} (wall ${(isolation.slowdown * 100).toFixed(1)}%)`,
  );
  console.log(
    `isolation, fault mix (${isolation.faultMix.faulty} of ${ISOLATION_N} faulty, ${isolation.faultMix.faultKinds} kinds): wall/ideal ${isolation.faultMix.wallOverIdeal.toFixed(3)}, healthy agents failed by a neighbour's fault: ${isolation.faultMix.healthyFailed}`,
  );

  return isolation;
}

// Issue 14: the N=1,000 fan-out without and with the journal, in turns; and the same pair on
// the real SDK path, where a model call costs what a provider's client costs.
async function journalSection() {
  const withoutRuns: Measurement[] = [];
  const withRuns: Measurement[] = [];
  for (let index = 0; index < JOURNAL_REPEATS; index += 1) {
    withoutRuns.push(measureOnce({ kind: 'journal', journal: false, n: JOURNAL_N }));
    withRuns.push(measureOnce({ kind: 'journal', journal: true, n: JOURNAL_N }));
  }
  const without = summarize(withoutRuns);
  const journaled = summarize(withRuns);
  const journal = {
    n: JOURNAL_N,
    without: {
      wallOverIdeal: round(without.wallMs / IDEAL_MS, 3),
      cpuMsPerAgent: round(without.cpuMs / JOURNAL_N, 3),
    },
    with: {
      wallOverIdeal: round(journaled.wallMs / IDEAL_MS, 3),
      cpuMsPerAgent: round(journaled.cpuMs / JOURNAL_N, 3),
    },
    wallRatio: round(journaled.wallMs / without.wallMs, 3),
    cpuRatio: round(journaled.cpuMs / without.cpuMs, 3),
    paired: pairedJournal(),
    sdkPath: await journalSdkPathSection({
      n: SDK_PATH_N,
      latencyMs: LATENCY_MS,
      turns: TURNS,
      pairs: JOURNAL_SDK_PAIRS,
    }),
  };
  console.log(
    `\njournal, N=${JOURNAL_N} fan-out (wall/ideal, cpu ms/agent): without ${journal.without.wallOverIdeal.toFixed(3)}, ${journal.without.cpuMsPerAgent.toFixed(3)}; with ${journal.with.wallOverIdeal.toFixed(3)}, ${journal.with.cpuMsPerAgent.toFixed(3)} (wall x${journal.wallRatio.toFixed(3)}, cpu x${journal.cpuRatio.toFixed(3)})`,
  );
  const { paired } = journal;
  console.log(
    `journal, N=${JOURNAL_N}, ${paired.pairs} pairs in one process (medians of the pairs' ratios): wall x${paired.wallRatio.toFixed(3)}, cpu x${paired.cpuRatio.toFixed(3)}; cpu ms/agent without ${paired.withoutCpuMsPerAgent.toFixed(3)}, with ${paired.withCpuMsPerAgent.toFixed(3)}${paired.mainThreadAddedUsPerAgent === undefined ? '' : `; main thread +${paired.mainThreadAddedUsPerAgent} us/agent`}`,
  );
  return journal;
}

// Issue 16's "a run with the collector down completes as fast as without
// export": the three collectors alternating, OTEL_ROUNDS rounds, medians.
function otelSection() {
  const collectors: OtelCollector[] = ['off', 'accepting', 'refused', 'silent'];
  const runs = new Map<OtelCollector, Measurement[]>(collectors.map((name) => [name, []]));
  for (let round = 0; round < OTEL_ROUNDS; round += 1) {
    for (const collector of collectors)
      runs.get(collector)?.push(measureOnce({ kind: 'otel', collector, n: OTEL_N }));
  }
  const of = (collector: OtelCollector) => {
    const list = runs.get(collector) ?? [];
    const wallMs = median(list.map((run) => run.wallMs));
    const coldWallMs = median(list.map((run) => run.coldWallMs ?? run.wallMs));
    return {
      wallOverIdeal: round(wallMs / IDEAL_MS, 3),
      coldWallOverIdeal: round(coldWallMs / IDEAL_MS, 3),
      cpuMsPerAgent: round(median(list.map((run) => run.cpuMs)) / OTEL_N, 3),
      closeMs: round(median(list.map((run) => run.extra ?? 0)), 1),
    };
  };
  const off = of('off');
  const accepting = of('accepting');
  const refused = of('refused');
  const silent = of('silent');
  const otel = {
    n: OTEL_N,
    rounds: OTEL_ROUNDS,
    off,
    accepting,
    refused,
    silent,
    acceptingWallRatio: round(accepting.wallOverIdeal / off.wallOverIdeal, 3),
    refusedWallRatio: round(refused.wallOverIdeal / off.wallOverIdeal, 3),
    silentWallRatio: round(silent.wallOverIdeal / off.wallOverIdeal, 3),
  };
  const line = (name: string, figures: ReturnType<typeof of>) =>
    `${name} ${figures.wallOverIdeal.toFixed(3)} (cold ${figures.coldWallOverIdeal.toFixed(3)}), ${figures.cpuMsPerAgent.toFixed(3)} ms CPU/agent, close ${figures.closeMs.toFixed(0)} ms`;
  console.log(
    `\nOpenTelemetry export, N=${OTEL_N} fan-out, medians of ${OTEL_ROUNDS} alternating rounds (wall/ideal): ${line('off', off)}; ${line('collector up', accepting)} (x${otel.acceptingWallRatio.toFixed(3)}); ${line('collector refusing', refused)} (x${otel.refusedWallRatio.toFixed(3)}); ${line('collector never answering', silent)} (x${otel.silentWallRatio.toFixed(3)})`,
  );
  return otel;
}

// The paired comparison (journalPaired) in a fresh process.
function pairedJournal() {
  const result = measureOnce({
    kind: 'journal-paired',
    n: JOURNAL_N,
    rounds: JOURNAL_PAIRS,
  }) as PairedMeasurement;
  return {
    pairs: JOURNAL_PAIRS,
    withoutWallOverIdeal: round(result.wallMs / IDEAL_MS, 3),
    withWallOverIdeal: round(result.withWallMs / IDEAL_MS, 3),
    withoutCpuMsPerAgent: round(result.cpuMs / JOURNAL_N, 3),
    withCpuMsPerAgent: round(result.withCpuMs / JOURNAL_N, 3),
    wallRatio: round(result.wallRatio, 3),
    cpuRatio: round(result.cpuRatio, 3),
    // What the journal adds to the main thread's own CPU, µs per agent (Linux only).
    ...(result.mainCpuMs === undefined || result.withMainCpuMs === undefined
      ? {}
      : {
          mainThreadAddedUsPerAgent: round(
            ((result.withMainCpuMs - result.mainCpuMs) * 1000) / JOURNAL_N,
            1,
          ),
        }),
  };
}

async function orchestrate(full: boolean): Promise<void> {
  const sizes = full ? [1, 100, 1000, 10_000] : [1, 100, 1000];
  const fanout: Array<{
    impl: Impl;
    n: number;
    wallOverIdeal: number;
    cpuMsPerAgent: number;
    peakRssMiB: number;
    spread: Record<string, Spread>;
  }> = [];
  const fanoutCold: Array<{ impl: Impl; n: number; wallOverIdeal: number; cpuMsPerAgent: number }> =
    [];
  console.log(
    `troupe bench: ${cpus()[0]?.model ?? 'cpu'} x${availableParallelism()}, Node ${process.version}; medians of ${REPEATS} runs`,
  );
  console.log(`fan-out: ${TURNS} turns x ${LATENCY_MS} ms per agent (ideal ${IDEAL_MS} ms)\n`);
  console.log(
    'impl        n        wall/ideal  cpu ms/agent  peak RSS MiB   (cold first run: wall/ideal, cpu ms/agent)',
  );
  for (const n of sizes) {
    for (const impl of ['troupe', 'in-process'] as const) {
      const result = measure({ kind: 'fanout', impl, n });
      const row = {
        impl,
        n,
        wallOverIdeal: round(result.wallMs / IDEAL_MS, 3),
        cpuMsPerAgent: round(result.cpuMs / n, 3),
        peakRssMiB: round(result.peakRssMiB, 1),
        // The three runs' spread (issue 18): min, max and each run.
        spread: {
          wallOverIdeal: spreadOf(
            result.runs.map((run) => run.wallMs / IDEAL_MS),
            3,
          ),
          cpuMsPerAgent: spreadOf(
            result.runs.map((run) => run.cpuMs / n),
            3,
          ),
          coldWallOverIdeal: spreadOf(
            result.runs.map((run) => (run.coldWallMs ?? 0) / IDEAL_MS),
            3,
          ),
        },
      };
      fanout.push(row);
      const cold = {
        impl,
        n,
        wallOverIdeal: round((result.coldWallMs ?? 0) / IDEAL_MS, 3),
        cpuMsPerAgent: round((result.coldCpuMs ?? 0) / n, 3),
      };
      fanoutCold.push(cold);
      console.log(
        `${impl.padEnd(11)} ${String(n).padEnd(8)} ${row.wallOverIdeal.toFixed(3).padStart(10)}  ${row.cpuMsPerAgent.toFixed(3).padStart(12)}  ${row.peakRssMiB.toFixed(1).padStart(12)}   (${cold.wallOverIdeal.toFixed(3)}, ${cold.cpuMsPerAgent.toFixed(3)})`,
      );
    }
  }
  const cpuN = 16;
  const cpuTroupe = measure({ kind: 'cpu', impl: 'troupe', n: cpuN });
  const cpuInProcess = measure({ kind: 'cpu', impl: 'in-process', n: cpuN });
  const cpuSpeedup = round(cpuInProcess.wallMs / cpuTroupe.wallMs, 2);
  const threads = Math.min(4, availableParallelism());
  console.log(
    `\nCPU-bound tool (${CPU_TOOL_MS} ms, 2 calls per agent, N=${cpuN}): in-process ${Math.round(cpuInProcess.wallMs)} ms, troupe ${Math.round(cpuTroupe.wallMs)} ms, speedup ${cpuSpeedup} x (ideal ${threads} x on ${threads} threads)`,
  );
  // The same with the model's latency, in turns: the CPU phase (wall less 3 x 200 ms) side by side.
  const cpuPhase = { troupe: [] as number[], inProcess: [] as number[] };
  for (let index = 0; index < REPEATS; index += 1) {
    const latencyMs = LATENCY_MS;
    const phase = (run: Measurement): number => run.wallMs - TURNS * latencyMs;
    cpuPhase.troupe.push(phase(measureOnce({ kind: 'cpu', impl: 'troupe', n: cpuN, latencyMs })));
    cpuPhase.inProcess.push(
      phase(measureOnce({ kind: 'cpu', impl: 'in-process', n: cpuN, latencyMs })),
    );
  }
  const cpuPhaseSpeedup = round(median(cpuPhase.inProcess) / median(cpuPhase.troupe), 2);
  console.log(
    `CPU-bound tool with the model's latency (${CPU_LATENCY_TOOL_MS} ms, 2 calls per agent, N=${cpuN}, ${LATENCY_MS} ms per model call): CPU phase (wall less ${TURNS} x ${LATENCY_MS} ms) in-process ${Math.round(median(cpuPhase.inProcess))} ms, troupe ${Math.round(median(cpuPhase.troupe))} ms, speedup ${cpuPhaseSpeedup} x`,
  );
  const spawn = measure({ kind: 'spawn', samples: 200 });
  const spawnP50Ms = round(spawn.extra ?? 0, 3);
  console.log(`spawn on a running pool, until the actor's first model call: p50 ${spawnP50Ms} ms`);
  const events = measure({ kind: 'events', actors: threads, perActor: 100_000 });
  const eventsPerSecond = Math.round(events.extra ?? 0);
  console.log(
    `event roll-up: ${eventsPerSecond.toLocaleString('en-US')} validated events/s into the bus, none lost`,
  );

  const nats = natsSection();
  const isolation = isolationSection();
  // With --full, the journal's and the OpenTelemetry export's costs too (issues 14 and 16).
  const journal = full ? await journalSection() : undefined;
  const otel = full ? otelSection() : undefined;
  const peers = process.argv.includes('--peers')
    ? peersSection(full, { latencyMs: LATENCY_MS, turns: TURNS, repeats: REPEATS })
    : undefined;
  const sdkPath = process.argv.includes('--peers')
    ? await sdkPathSection({ n: SDK_PATH_N, latencyMs: LATENCY_MS, turns: TURNS, repeats: REPEATS })
    : undefined;
  // Every figure of issue 18: with --full --peers, the 100,000-agent fan-out too (minutes).
  const scale = full && process.argv.includes('--peers') ? scaleSection(100_000) : undefined;
  const [coldStart] = await measureColdStart([root], COLD_STARTS);
  if (coldStart !== undefined) printColdStart([coldStart]);

  const results = {
    fanout,
    fanoutCold,
    cpuSpeedup,
    cpuPhaseSpeedup,
    spawnP50Ms,
    eventsPerSecond,
    isolation,
    ...(journal === undefined ? {} : { journal }),
    ...(otel === undefined ? {} : { otel }),
    ...(nats === undefined ? {} : { nats }),
    ...(peers === undefined ? {} : { peers }),
    ...(sdkPath === undefined ? {} : { sdkPath }),
    ...(scale === undefined
      ? {}
      : {
          scale: {
            ...scale,
            wallOverIdeal: round(scale.wallMs / IDEAL_MS, 3),
            date: new Date().toISOString(),
          },
        }),
    ...(coldStart === undefined ? {} : { coldStart: coldStartField(coldStart) }),
    meta: {
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: availableParallelism(),
      threads,
      command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
      repeats: REPEATS,
      idealMs: IDEAL_MS,
      cpuIdealSpeedup: threads,
    },
  };
  const dir = join(here, '..', '..', '..', 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  // Merged: sections this run did not measure (the journal, OpenTelemetry, peers,
  // scale, compare… of an earlier --full or single-section run) keep their figures.
  const file = join(dir, 'latest.json');
  let earlier: Record<string, unknown> = {};
  try {
    earlier = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    // No earlier results (or unreadable ones): this run's alone.
  }
  writeFileSync(file, `${JSON.stringify({ ...earlier, ...results }, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
}

function printColdStart(results: readonly ColdStartResult[]): void {
  console.log(
    `\ncold start, medians of ${results[0]?.starts ?? 0} process starts each (interleaved):`,
  );
  console.log(
    'build                                      --help ms   run: coordinator request ms   run: first sub-agent request ms',
  );
  for (const result of results) {
    console.log(
      `${result.root.padEnd(42)} ${result.helpMs.toFixed(0).padStart(9)}   ${result.coordinatorRequestMs.toFixed(0).padStart(27)}   ${result.firstSubAgentRequestMs.toFixed(0).padStart(31)}`,
    );
  }
}

function argValue(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index === -1 ? undefined : process.argv[index + 1];
}

// `npm run bench -- --n 100000`: one cold fan-out of that many agents in a
// fresh process, merged into bench/results/latest.json as `scale`.
function scaleSection(n: number): ScaleMeasurement {
  const output = execFileSync(
    process.execPath,
    ['--expose-gc', here, '--case', JSON.stringify({ kind: 'scale', n })],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  const result = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as ScaleMeasurement;
  console.log(
    `\nfan-out N=${n.toLocaleString('en-US')}, cold: wall/ideal ${(result.wallMs / IDEAL_MS).toFixed(2)}, CPU ${(result.cpuMs / n).toFixed(3)} ms/agent, peak RSS ${result.peakRssMiB.toFixed(0)} MiB (${result.rssKiBPerAgent.toFixed(1)} KiB per agent), spawn loop ${result.spawnLoopMs.toFixed(0)} ms; ${result.events.toLocaleString('en-US')} events, trace ${(result.traceBytes / 2 ** 20).toFixed(0)} MiB at ${result.traceUsPerEvent.toFixed(2)} µs per event on the main thread; agents not finished exactly once: ${result.finishedWrong}; live view ${result.liveUsPerEvent.toFixed(2)} µs per event, ${result.liveFrames} frames (median ${result.liveFrameMsMedian.toFixed(1)} ms, longest ${result.liveFrameMsMax.toFixed(0)} ms, longest gap ${result.liveFrameGapMsMax.toFixed(0)} ms)`,
  );
  return result;
}

const caseIndex = process.argv.indexOf('--case');
if (caseIndex !== -1) {
  const measured = await runCase(JSON.parse(process.argv[caseIndex + 1] ?? '{}') as Case);
  console.log(JSON.stringify(measured));
} else if (process.argv.includes('--n') && argValue('--compare') === undefined) {
  const n = Number(argValue('--n'));
  if (!Number.isInteger(n) || n < 1)
    throw new Error('--n needs a whole number of agents, e.g. --n 100000');
  const scale = scaleSection(n);
  const file = join(root, 'bench', 'results', 'latest.json');
  const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(
    file,
    `${JSON.stringify({ ...latest, scale: { ...scale, wallOverIdeal: round(scale.wallMs / IDEAL_MS, 3), date: new Date().toISOString() } }, null, 2)}\n`,
  );
} else if (argValue('--compare') !== undefined) {
  // This build's N=1,000 fan-out side by side with another build's (bench/compare.ts).
  const other = argValue('--compare') as string;
  const n = Number(argValue('--n') ?? 1000);
  const rounds = Number(argValue('--rounds') ?? 5);
  if (!Number.isInteger(n) || n < 1 || !Number.isInteger(rounds) || rounds < 1)
    throw new Error('--compare takes --n <agents> and --rounds <count>, whole numbers above 0');
  const result = compareBuilds({
    root,
    other,
    n,
    rounds,
    idealMs: IDEAL_MS,
    log: (line) => console.log(line),
  });
  printComparison(result);
  const file = join(root, 'bench', 'results', 'latest.json');
  const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const compare = { ...result, date: new Date().toISOString() };
  writeFileSync(file, `${JSON.stringify({ ...latest, compare }, null, 2)}\n`);
  console.log(`\nwrote compare to ${file}`);
} else if (process.argv.includes('--cold-start')) {
  // Only the cold start, optionally against other builds (package roots with a built dist/).
  const compare = argValue('--cold-start-compare');
  const starts = Number(argValue('--starts') ?? COLD_STARTS);
  const measured = await measureColdStart(compare === undefined ? [root] : [root, compare], starts);
  printColdStart(measured);
  // Merged into bench/results/latest.json: this build's medians (and the compared build's).
  const [own, baseline] = measured;
  if (own !== undefined) {
    const file = join(root, 'bench', 'results', 'latest.json');
    const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    const coldStart = coldStartField(own, baseline);
    writeFileSync(file, `${JSON.stringify({ ...latest, coldStart }, null, 2)}\n`);
    console.log(`\nwrote coldStart to ${file}`);
  }
} else {
  if (process.argv.includes('--journal')) {
    // Only the journal figures, merged into bench/results/latest.json.
    const file = join(here, '..', '..', '..', 'bench', 'results', 'latest.json');
    const journal = await journalSection();
    const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, `${JSON.stringify({ ...latest, journal }, null, 2)}\n`);
  } else if (process.argv.includes('--otel')) {
    // Only the OpenTelemetry figures, merged into bench/results/latest.json.
    const file = join(root, 'bench', 'results', 'latest.json');
    const otel = otelSection();
    const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, `${JSON.stringify({ ...latest, otel }, null, 2)}\n`);
  } else if (process.argv.includes('--isolation')) {
    // Only the isolation figures, merged into bench/results/latest.json.
    const file = join(here, '..', '..', '..', 'bench', 'results', 'latest.json');
    const isolation = isolationSection();
    const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, `${JSON.stringify({ ...latest, isolation }, null, 2)}\n`);
  } else if (process.argv.includes('--nats')) {
    // Only the NATS fan-out against the local pool at N=1,000, merged into latest.json.
    const file = join(root, 'bench', 'results', 'latest.json');
    const nats = natsSection();
    const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    if (nats !== undefined)
      writeFileSync(file, `${JSON.stringify({ ...latest, nats }, null, 2)}\n`);
  } else if (process.argv.includes('--peers') && !process.argv.includes('--full')) {
    // Only the side-by-side table of troupe, the floor and the peers (issue 18), merged.
    const file = join(root, 'bench', 'results', 'latest.json');
    const peers = peersSection(false, { latencyMs: LATENCY_MS, turns: TURNS, repeats: REPEATS });
    // Written at once too: the SDK path runs for minutes after it.
    const before = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, `${JSON.stringify({ ...before, peers }, null, 2)}\n`);
    const sdkPath = await sdkPathSection({
      n: SDK_PATH_N,
      latencyMs: LATENCY_MS,
      turns: TURNS,
      repeats: REPEATS,
    });
    const latest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, `${JSON.stringify({ ...latest, peers, sdkPath }, null, 2)}\n`);
  } else await orchestrate(process.argv.includes('--full'));
}
