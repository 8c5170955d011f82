import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PeerWorkload, PhaseMeasurement } from './fanout-phases.js';
import { median } from './stats.js';

/**
 * `npm run bench -- --peers` (issue 18): the same fan-out on troupe, on the
 * Promise.all floor and on the frameworks a user would pick instead, each
 * case a fresh process, the implementations in turns (round-robin) so a
 * machine that gets busier weighs on all alike; medians of the repeats with
 * their spread. The peers live in bench/peers with their own lockfile and are
 * installed on demand (`npm ci --prefix bench/peers`); without them the table
 * has the floor and troupe only, and says so.
 */

export type PeerImpl = 'floor' | 'troupe' | 'ai' | 'openai-agents' | 'langgraph';

const PEER_PACKAGES: Record<Exclude<PeerImpl, 'floor' | 'troupe'>, string> = {
  ai: 'ai',
  'openai-agents': '@openai/agents',
  langgraph: '@langchain/langgraph',
};

/** How each implementation is named in the table. */
export const PEER_LABELS: Record<PeerImpl, string> = {
  floor: 'Promise.all floor, no framework',
  troupe: 'troupe',
  ai: '`ai` (Vercel AI SDK 6, ToolLoopAgent)',
  'openai-agents': '@openai/agents',
  langgraph: 'LangGraph.js (createReactAgent)',
};

/** A figure over the repeats: the median and the smallest and largest run. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export interface PeerRow {
  impl: PeerImpl;
  /** The package and version measured (`troupe` for troupe, `none` for the floor). */
  version: string;
  n: number;
  /** Warm (the last of the same-size repeats in one process); medians. */
  wallOverIdeal: number;
  cpuMsPerAgent: number;
  peakRssMiB: number;
  coldWallOverIdeal: number;
  coldCpuMsPerAgent: number;
  spread: {
    wallOverIdeal: Spread;
    cpuMsPerAgent: Spread;
    peakRssMiB: Spread;
    coldWallOverIdeal: Spread;
    coldCpuMsPerAgent: Spread;
  };
}

const here = fileURLToPath(import.meta.url);
const root = join(here, '..', '..', '..');
const peersDir = join(root, 'bench', 'peers');
const caseScript = join(here, '..', 'peer-case.js');
const peerScript = join(peersDir, 'fanout.mjs');

/** The installed version of a peer, or undefined when bench/peers is not installed. */
export function peerVersion(impl: PeerImpl): string | undefined {
  if (impl === 'floor') return 'none';
  if (impl === 'troupe') return 'troupe';
  const file = join(peersDir, 'node_modules', PEER_PACKAGES[impl], 'package.json');
  if (!existsSync(file)) return undefined;
  const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version: string };
  return `${PEER_PACKAGES[impl]} ${version}`;
}

function runProcess(impl: PeerImpl, workload: PeerWorkload): PhaseMeasurement {
  const script = impl === 'floor' || impl === 'troupe' ? caseScript : peerScript;
  const output = execFileSync(
    process.execPath,
    ['--expose-gc', script, '--case', JSON.stringify({ impl, ...workload })],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  const measured = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as PhaseMeasurement;
  if (measured.wrong !== 0)
    throw new Error(`${impl} at N=${workload.n}: ${measured.wrong} agents did not run as asked`);
  return measured;
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

export function spreadOf(values: readonly number[], digits: number): Spread {
  return {
    median: round(median(values), digits),
    min: round(Math.min(...values), digits),
    max: round(Math.max(...values), digits),
    runs: values.map((value) => round(value, digits)),
  };
}

/**
 * Every implementation at every size, `repeats` processes each, in turns.
 * `sizes` maps N to the implementations run at that N.
 */
export function peersTable(
  sizes: ReadonlyArray<{ n: number; impls: readonly PeerImpl[] }>,
  options: { latencyMs: number; turns: number; repeats: number },
): { rows: PeerRow[]; missing: PeerImpl[] } {
  const rows: PeerRow[] = [];
  const missing = new Set<PeerImpl>();
  const idealMs = options.latencyMs * options.turns;
  for (const { n, impls } of sizes) {
    const present = impls.filter((impl) => {
      if (peerVersion(impl) !== undefined) return true;
      missing.add(impl);
      return false;
    });
    const workload = { n, latencyMs: options.latencyMs, turns: options.turns };
    const runs = new Map<PeerImpl, PhaseMeasurement[]>(present.map((impl) => [impl, []]));
    for (let repeat = 0; repeat < options.repeats; repeat += 1)
      for (const impl of present) runs.get(impl)?.push(runProcess(impl, workload));
    for (const impl of present) {
      const measured = runs.get(impl) ?? [];
      const spread = {
        wallOverIdeal: spreadOf(
          measured.map((run) => run.wallMs / idealMs),
          3,
        ),
        cpuMsPerAgent: spreadOf(
          measured.map((run) => run.cpuMs / n),
          3,
        ),
        peakRssMiB: spreadOf(
          measured.map((run) => run.peakRssMiB),
          1,
        ),
        coldWallOverIdeal: spreadOf(
          measured.map((run) => run.coldWallMs / idealMs),
          3,
        ),
        coldCpuMsPerAgent: spreadOf(
          measured.map((run) => run.coldCpuMs / n),
          3,
        ),
      };
      const row: PeerRow = {
        impl,
        version: peerVersion(impl) ?? 'missing',
        n,
        wallOverIdeal: spread.wallOverIdeal.median,
        cpuMsPerAgent: spread.cpuMsPerAgent.median,
        peakRssMiB: spread.peakRssMiB.median,
        coldWallOverIdeal: spread.coldWallOverIdeal.median,
        coldCpuMsPerAgent: spread.coldCpuMsPerAgent.median,
        spread,
      };
      rows.push(row);
      printRow(row);
    }
  }
  return { rows, missing: [...missing] };
}

function printRow(row: PeerRow): void {
  const range = (spread: Spread, digits: number): string =>
    `${spread.median.toFixed(digits)} [${spread.min.toFixed(digits)}-${spread.max.toFixed(digits)}]`;
  console.log(
    `${PEER_LABELS[row.impl].padEnd(40)} ${String(row.n).padStart(6)}  cold ${range(row.spread.coldWallOverIdeal, 2).padEnd(19)} ${range(row.spread.coldCpuMsPerAgent, 2).padEnd(19)} warm ${range(row.spread.wallOverIdeal, 2).padEnd(19)} ${range(row.spread.cpuMsPerAgent, 2).padEnd(19)} ${range(row.spread.peakRssMiB, 0)}`,
  );
}

/** The header of the table printed by peersTable. */
export function printPeersHeader(options: { latencyMs: number; turns: number; repeats: number }) {
  console.log(
    `\npeers: N agents x ${options.turns} model turns of ${options.latencyMs} ms (a tool call on each but the last), each case a fresh process with a 2-agent warm-up; medians of ${options.repeats} runs in turns [min-max]`,
  );
  console.log(
    `${'implementation'.padEnd(40)} ${'N'.padStart(6)}  cold wall/ideal      cpu ms/agent        warm wall/ideal      cpu ms/agent        peak RSS MiB (cold)`,
  );
}

/** What to say when the peers are not installed. */
export function missingPeersNote(missing: readonly PeerImpl[]): string {
  return `peers not installed (${missing.join(', ')}): run \`npm ci --prefix bench/peers\` (their own lockfile, not troupe's dependencies), then the bench again`;
}

/**
 * The peers' section of latest.json: N = 1,000 with every implementation and,
 * with `full`, N = 10,000 with the floor, troupe and `ai` (the others take
 * minutes per run there).
 */
export function peersSection(
  full: boolean,
  options: { latencyMs: number; turns: number; repeats: number },
) {
  const everyone: PeerImpl[] = ['floor', 'troupe', 'ai', 'openai-agents', 'langgraph'];
  const sizes = [
    { n: 1000, impls: everyone },
    ...(full ? [{ n: 10_000, impls: ['floor', 'troupe', 'ai'] as PeerImpl[] }] : []),
  ];
  printPeersHeader(options);
  const { rows, missing } = peersTable(sizes, options);
  if (missing.length > 0) console.log(missingPeersNote(missing));
  return {
    workload: {
      turns: options.turns,
      latencyMs: options.latencyMs,
      idealMs: options.turns * options.latencyMs,
      warmUpAgents: 2,
      tool: 'noop (zod schema, returns ok) on every turn but the last',
      repeats: options.repeats,
    },
    rows,
    missing,
    date: new Date().toISOString(),
  };
}
