import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PhaseMeasurement } from './fanout-phases.js';
import { peerVersion, type Spread, spreadOf } from './peers.js';

/**
 * The real SDK path (issue 18): N agents on troupe's real `openai` provider
 * (streaming, in the worker threads) against a local OpenAI-compatible server
 * in another process that waits `latencyMs` per call, beside @openai/agents
 * on the same `openai` SDK and server (Chat Completions model, streamed run);
 * in turns, a fresh client process per case, medians with their spread.
 * Client CPU is every thread of the client process over the run, divided by
 * its model calls; the server's CPU is its own. The server counts TCP
 * connections, so the figures show whether calls share pooled connections.
 */

export interface SdkPathRow {
  impl: 'troupe' | 'openai-agents';
  version: string;
  n: number;
  wallOverIdeal: number;
  clientCpuMsPerCall: number;
  coldWallOverIdeal: number;
  coldClientCpuMsPerCall: number;
  peakRssMiB: number;
  /** Model calls one client process made (warm-up, cold and warm runs) per TCP connection it opened. */
  callsPerConnection: number;
  spread: {
    wallOverIdeal: Spread;
    clientCpuMsPerCall: Spread;
    coldWallOverIdeal: Spread;
    coldClientCpuMsPerCall: Spread;
  };
}

const here = fileURLToPath(import.meta.url);
const caseScript = join(here, '..', 'peer-case.js');
const peerScript = join(here, '..', '..', '..', 'bench', 'peers', 'fanout.mjs');
const serverScript = join(here, '..', 'openai-server.js');

function startServer(
  latencyMs: number,
  turns: number,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [serverScript, '--latency', String(latencyMs), '--turns', String(turns)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.stdout?.setEncoding('utf8');
    child.stdout?.once('data', (line: string) => {
      const { port } = JSON.parse(line) as { port: number };
      resolve({ url: `http://127.0.0.1:${port}`, child });
    });
  });
}

async function stats(url: string): Promise<{ requests: number; connections: number }> {
  const response = await fetch(`${url}/stats`, { headers: { connection: 'close' } });
  return (await response.json()) as { requests: number; connections: number };
}

/** Both clients at `n`, `repeats` rounds in turns; undefined when bench/peers is not installed. */
export async function sdkPathSection(options: {
  n: number;
  latencyMs: number;
  turns: number;
  repeats: number;
}): Promise<{ n: number; latencyMs: number; rows: SdkPathRow[] } | undefined> {
  const impls = (['troupe', 'openai-agents'] as const).filter(
    (impl) => peerVersion(impl) !== undefined,
  );
  const server = await startServer(options.latencyMs, options.turns);
  const idealMs = options.latencyMs * options.turns;
  const calls = options.n * options.turns;
  const runs = new Map<string, Array<PhaseMeasurement & { calls: number; connections: number }>>(
    impls.map((impl) => [impl, []]),
  );
  try {
    for (let repeat = 0; repeat < options.repeats; repeat += 1) {
      for (const impl of impls) {
        const before = await stats(server.url);
        const script = impl === 'troupe' ? caseScript : peerScript;
        const workload = {
          impl,
          n: options.n,
          latencyMs: options.latencyMs,
          turns: options.turns,
          baseURL: `${server.url}/v1`,
        };
        const output = execFileSync(
          process.execPath,
          ['--expose-gc', script, '--case', JSON.stringify(workload)],
          { encoding: 'utf8', maxBuffer: 1 << 20 },
        );
        const measured = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as PhaseMeasurement;
        if (measured.wrong !== 0)
          throw new Error(`${impl} on the SDK path: ${measured.wrong} agents did not run as asked`);
        const after = await stats(server.url);
        runs.get(impl)?.push({
          ...measured,
          calls: after.requests - before.requests,
          connections: after.connections - before.connections,
        });
      }
    }
  } finally {
    server.child.kill();
  }
  console.log(
    `\nreal SDK path: N=${options.n} agents x ${options.turns} streamed calls through the openai SDK to a local server (another process, ${options.latencyMs} ms per call); medians of ${options.repeats} [min-max]`,
  );
  const rows = impls.map((impl): SdkPathRow => {
    const measured = runs.get(impl) ?? [];
    const spread = {
      wallOverIdeal: spreadOf(
        measured.map((run) => run.wallMs / idealMs),
        3,
      ),
      clientCpuMsPerCall: spreadOf(
        measured.map((run) => run.cpuMs / calls),
        3,
      ),
      coldWallOverIdeal: spreadOf(
        measured.map((run) => run.coldWallMs / idealMs),
        3,
      ),
      coldClientCpuMsPerCall: spreadOf(
        measured.map((run) => run.coldCpuMs / calls),
        3,
      ),
    };
    const totalCalls = measured.reduce((sum, run) => sum + run.calls, 0);
    const totalConnections = measured.reduce((sum, run) => sum + run.connections, 0);
    const row: SdkPathRow = {
      impl,
      version: impl === 'troupe' ? 'troupe (openai 6.49 SDK)' : (peerVersion(impl) ?? 'missing'),
      n: options.n,
      wallOverIdeal: spread.wallOverIdeal.median,
      clientCpuMsPerCall: spread.clientCpuMsPerCall.median,
      coldWallOverIdeal: spread.coldWallOverIdeal.median,
      coldClientCpuMsPerCall: spread.coldClientCpuMsPerCall.median,
      peakRssMiB: spreadOf(
        measured.map((run) => run.peakRssMiB),
        1,
      ).median,
      callsPerConnection: Number((totalCalls / Math.max(1, totalConnections)).toFixed(1)),
      spread,
    };
    const range = (value: Spread): string =>
      `${value.median.toFixed(3)} [${value.min.toFixed(3)}-${value.max.toFixed(3)}]`;
    console.log(
      `${impl.padEnd(14)} cold wall/ideal ${range(spread.coldWallOverIdeal)}, client CPU ${range(spread.coldClientCpuMsPerCall)} ms/call; warm ${range(spread.wallOverIdeal)}, ${range(spread.clientCpuMsPerCall)} ms/call; peak RSS ${row.peakRssMiB.toFixed(0)} MiB; ${row.callsPerConnection} calls per TCP connection`,
    );
    return row;
  });
  return { n: options.n, latencyMs: options.latencyMs, rows };
}

/** The journal's cost on the real SDK path (issue 14): the same troupe client without and with a run journal. */
export interface JournalSdkPath {
  n: number;
  latencyMs: number;
  pairs: number;
  without: { wallOverIdeal: number; clientCpuMsPerCall: number };
  with: { wallOverIdeal: number; clientCpuMsPerCall: number };
  /** Medians of the pairs' ratios (journaled / not), warm runs. */
  wallRatio: number;
  cpuRatio: number;
  /** What the journal adds to the client's CPU per model call, median of the pairs. */
  cpuAddedUsPerCall: number;
}

/**
 * troupe's client on the real SDK path without and with a `FileJournal`
 * (every response, tool result and intent recorded, as `troupe run` keeps
 * them), a fresh process per case, `pairs` pairs in turns (each pair in the
 * other order than the last), against one local server. Here the model
 * calls cost what a real provider's client costs (HTTP, streaming, the
 * SDK's parsing), which the scripted fan-out has none of.
 */
export async function journalSdkPathSection(options: {
  n: number;
  latencyMs: number;
  turns: number;
  pairs: number;
}): Promise<JournalSdkPath> {
  const server = await startServer(options.latencyMs, options.turns);
  const idealMs = options.latencyMs * options.turns;
  const calls = options.n * options.turns;
  const measureOne = (journal: boolean): PhaseMeasurement => {
    const workload = {
      impl: 'troupe',
      n: options.n,
      latencyMs: options.latencyMs,
      turns: options.turns,
      baseURL: `${server.url}/v1`,
      journal,
    };
    const output = execFileSync(
      process.execPath,
      ['--expose-gc', caseScript, '--case', JSON.stringify(workload)],
      { encoding: 'utf8', maxBuffer: 1 << 20 },
    );
    const measured = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as PhaseMeasurement;
    if (measured.wrong !== 0)
      throw new Error(`troupe on the SDK path: ${measured.wrong} agents did not run as asked`);
    return measured;
  };
  const pairs: Array<{ without: PhaseMeasurement; with: PhaseMeasurement }> = [];
  try {
    for (let index = 0; index < options.pairs; index += 1) {
      const withoutFirst = index % 2 === 0;
      const first = measureOne(!withoutFirst);
      const second = measureOne(withoutFirst);
      pairs.push(
        withoutFirst ? { without: first, with: second } : { without: second, with: first },
      );
    }
  } finally {
    server.child.kill();
  }
  const of = (pick: (pair: (typeof pairs)[number]) => number, digits: number): number =>
    spreadOf(pairs.map(pick), digits).median;
  const result: JournalSdkPath = {
    n: options.n,
    latencyMs: options.latencyMs,
    pairs: pairs.length,
    without: {
      wallOverIdeal: of((pair) => pair.without.wallMs / idealMs, 3),
      clientCpuMsPerCall: of((pair) => pair.without.cpuMs / calls, 3),
    },
    with: {
      wallOverIdeal: of((pair) => pair.with.wallMs / idealMs, 3),
      clientCpuMsPerCall: of((pair) => pair.with.cpuMs / calls, 3),
    },
    wallRatio: of((pair) => pair.with.wallMs / pair.without.wallMs, 3),
    cpuRatio: of((pair) => pair.with.cpuMs / pair.without.cpuMs, 3),
    cpuAddedUsPerCall: of((pair) => ((pair.with.cpuMs - pair.without.cpuMs) / calls) * 1000, 1),
  };
  console.log(
    `journal on the real SDK path, N=${options.n} x ${options.turns} streamed calls, ${result.pairs} pairs of fresh processes (medians of the pairs): client CPU per call ${result.without.clientCpuMsPerCall.toFixed(3)} ms without, ${result.with.clientCpuMsPerCall.toFixed(3)} ms with (cpu x${result.cpuRatio.toFixed(3)}, ${result.cpuAddedUsPerCall} us added per call); wall x${result.wallRatio.toFixed(3)}`,
  );
  return result;
}
