import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { median } from './stats.js';

/**
 * `npm run bench -- --compare <package root of another build> [--rounds R] [--n N]`:
 * the N = 1,000 fan-out of this build and of another (a checkout with its
 * own `npm ci && npm run build`, e.g. the commit a results table was taken
 * on) side by side in one sitting, so a figure from another day or machine
 * is never compared with today's. Each round runs every variant once, in a
 * fresh process each and in turn, so a change of the machine's load falls
 * on all of them alike; the report is the medians and each variant's ratio
 * to the other build's, round by round.
 *
 * Variants: troupe as the CLI ships it (its bus with the trace writer
 * attached, user tools on the tool pool); troupe as the other build's bench
 * measured it when it predates both (no trace writer, user tools in the
 * actor threads: `TROUPE_BENCH_NO_TRACE=1`, `toolIsolation: 'thread'`); the
 * in-process baseline (the same Agent with Promise.all, no runtime).
 * An older build ignores the variant's settings it does not know.
 */

export interface CompareVariant {
  name: string;
  /** Which build: this one or the other. */
  build: 'this' | 'other';
  impl: 'troupe' | 'in-process';
  /** Trace writer attached (the CLI's configuration). */
  trace: boolean;
  toolIsolation?: 'thread' | 'pool';
}

export interface CompareFigures {
  wallOverIdeal: number;
  cpuMsPerAgent: number;
  peakRssMiB: number;
  coldWallOverIdeal: number;
  coldCpuMsPerAgent: number;
}

export interface CompareResult {
  other: string;
  n: number;
  rounds: number;
  /** Medians per variant. */
  variants: Record<string, CompareFigures>;
  /** Per variant of this build: median of its per-round ratio to the other build's same impl (CLI-shipped or not). */
  ratios: Record<
    string,
    { wall: number; cpu: number; rss: number; coldWall: number; coldCpu: number }
  >;
}

interface Measurement {
  wallMs: number;
  cpuMs: number;
  peakRssMiB: number;
  coldWallMs?: number;
  coldCpuMs?: number;
}

export const COMPARE_VARIANTS: readonly CompareVariant[] = [
  { name: 'troupe (as shipped)', build: 'this', impl: 'troupe', trace: true },
  {
    name: 'troupe (no trace, tools in actor threads)',
    build: 'this',
    impl: 'troupe',
    trace: false,
    toolIsolation: 'thread',
  },
  { name: 'troupe (other build)', build: 'other', impl: 'troupe', trace: true },
  { name: 'in-process', build: 'this', impl: 'in-process', trace: false },
  { name: 'in-process (other build)', build: 'other', impl: 'in-process', trace: false },
];

function measure(root: string, variant: CompareVariant, n: number): Measurement {
  const spec = {
    kind: 'fanout',
    impl: variant.impl,
    n,
    ...(variant.toolIsolation === undefined
      ? {}
      : { options: { toolIsolation: variant.toolIsolation } }),
  };
  const output = execFileSync(
    process.execPath,
    ['--expose-gc', join(root, 'dist', 'bench', 'run.js'), '--case', JSON.stringify(spec)],
    {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
      env: { ...process.env, TROUPE_BENCH_NO_TRACE: variant.trace ? '0' : '1' },
    },
  );
  return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Measurement;
}

/** Runs the comparison; `log` gets one line per measured run. */
export function compareBuilds(options: {
  root: string;
  other: string;
  n: number;
  rounds: number;
  idealMs: number;
  log: (line: string) => void;
}): CompareResult {
  const { root, other, n, rounds, idealMs, log } = options;
  const runs = new Map<string, Measurement[]>();
  for (let round = 1; round <= rounds; round += 1) {
    for (const variant of COMPARE_VARIANTS) {
      const measured = measure(variant.build === 'this' ? root : other, variant, n);
      runs.set(variant.name, [...(runs.get(variant.name) ?? []), measured]);
      log(
        `round ${round} ${variant.name}: wall/ideal ${(measured.wallMs / idealMs).toFixed(3)}, CPU ${(measured.cpuMs / n).toFixed(3)} ms/agent, peak RSS ${measured.peakRssMiB.toFixed(1)} MiB, cold ${((measured.coldWallMs ?? 0) / idealMs).toFixed(3)} / ${((measured.coldCpuMs ?? 0) / n).toFixed(3)} ms`,
      );
    }
  }
  const variants: Record<string, CompareFigures> = {};
  for (const [name, list] of runs) {
    variants[name] = {
      wallOverIdeal: round3(median(list.map((run) => run.wallMs)) / idealMs),
      cpuMsPerAgent: round3(median(list.map((run) => run.cpuMs)) / n),
      peakRssMiB: round1(median(list.map((run) => run.peakRssMiB))),
      coldWallOverIdeal: round3(median(list.map((run) => run.coldWallMs ?? 0)) / idealMs),
      coldCpuMsPerAgent: round3(median(list.map((run) => run.coldCpuMs ?? 0)) / n),
    };
  }
  const ratios: CompareResult['ratios'] = {};
  for (const variant of COMPARE_VARIANTS) {
    if (variant.build !== 'this') continue;
    const baseline = COMPARE_VARIANTS.find(
      (candidate) => candidate.build === 'other' && candidate.impl === variant.impl,
    );
    const mine = runs.get(variant.name) ?? [];
    const theirs = runs.get(baseline?.name ?? '') ?? [];
    const ratio = (key: keyof Measurement): number =>
      round3(
        median(mine.map((run, index) => (run[key] ?? 0) / (theirs[index]?.[key] ?? Number.NaN))),
      );
    ratios[variant.name] = {
      wall: ratio('wallMs'),
      cpu: ratio('cpuMs'),
      rss: ratio('peakRssMiB'),
      coldWall: ratio('coldWallMs'),
      coldCpu: ratio('coldCpuMs'),
    };
  }
  return { other, n, rounds, variants, ratios };
}

export function printComparison(result: CompareResult): void {
  const lines = [
    `\nN=${result.n}, ${result.rounds} rounds, medians (wall/ideal, CPU ms per agent, peak RSS MiB, cold wall/ideal, cold CPU ms per agent):`,
  ];
  for (const [name, figures] of Object.entries(result.variants)) {
    lines.push(
      `  ${name.padEnd(44)} ${figures.wallOverIdeal.toFixed(3)}  ${figures.cpuMsPerAgent.toFixed(3)}  ${figures.peakRssMiB.toFixed(1).padStart(6)}  ${figures.coldWallOverIdeal.toFixed(3)}  ${figures.coldCpuMsPerAgent.toFixed(3)}`,
    );
  }
  lines.push(`ratios to the other build (median of the rounds' ratios; below 1 is better):`);
  for (const [name, ratio] of Object.entries(result.ratios)) {
    lines.push(
      `  ${name.padEnd(44)} wall x${ratio.wall.toFixed(3)}, CPU x${ratio.cpu.toFixed(3)}, RSS x${ratio.rss.toFixed(3)}, cold wall x${ratio.coldWall.toFixed(3)}, cold CPU x${ratio.coldCpu.toFixed(3)}`,
    );
  }
  console.log(lines.join('\n'));
}

const round3 = (value: number): number => Number(value.toFixed(3));
const round1 = (value: number): number => Number(value.toFixed(1));
