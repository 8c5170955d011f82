import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './stats.js';

/**
 * Cold start of the `troupe` binary, measured with repeated process starts:
 *
 * - `troupe --help`: from spawning the process until it exits;
 * - `troupe run` on the offline model over examples/corpus (`--json`): from
 *   spawning the process until the first `model.request` of the first
 *   sub-agent (not the coordinator) arrives on its stdout; the process is
 *   then killed.
 *
 * With several builds (`--cold-start-compare <dir>`), starts alternate
 * between them (round-robin), so a busy machine slows each the same.
 */

export interface ColdStartSample {
  /** Process start to exit, `troupe --help`. */
  helpMs: number;
  /** Process start to the coordinator's first model request. */
  coordinatorRequestMs: number;
  /** Process start to the first model request of the first sub-agent. */
  firstSubAgentRequestMs: number;
}

export interface ColdStartResult {
  root: string;
  starts: number;
  helpMs: number;
  coordinatorRequestMs: number;
  firstSubAgentRequestMs: number;
  /** Every start's figures, in order. */
  samples: ColdStartSample[];
}

const TASK = 'Compare what the documents in the workspace say and write a report.';

function timeHelp(root: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [join(root, 'bin', 'troupe.js'), '--help'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(performance.now() - started);
      else reject(new Error(`troupe --help exited ${code}`));
    });
  });
}

function timeRun(root: string): Promise<{ coordinator: number; subAgent: number }> {
  const out = mkdtempSync(join(tmpdir(), 'troupe-cold-'));
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [
        join(root, 'bin', 'troupe.js'),
        'run',
        TASK,
        '--provider',
        'offline',
        '--json',
        '--workspace',
        join(root, 'examples', 'corpus'),
        '--out',
        out,
      ],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, TROUPE_OFFLINE_DELAY_MS: '0' },
      },
    );
    let coordinator = Number.NaN;
    let buffered = '';
    let done = false;
    const finish = (error?: Error, subAgent?: number): void => {
      if (done) return;
      done = true;
      child.kill('SIGKILL');
      rmSync(out, { recursive: true, force: true });
      if (error !== undefined || subAgent === undefined) reject(error);
      else resolve({ coordinator, subAgent });
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const now = performance.now() - started;
      buffered += chunk;
      let newline = buffered.indexOf('\n');
      while (newline !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        if (!line.includes('"model.request"')) continue;
        const event = JSON.parse(line) as { type: string; agentId: string };
        if (event.type !== 'model.request') continue;
        if (event.agentId === 'coordinator') {
          if (Number.isNaN(coordinator)) coordinator = now;
        } else {
          finish(undefined, now);
          return;
        }
      }
    });
    child.on('error', (error) => finish(error));
    child.on('exit', (code) =>
      finish(new Error(`troupe run exited ${code} before any sub-agent called its model`)),
    );
  });
}

/** `starts` process starts of each kind for each build root, interleaved; medians. */
export async function measureColdStart(
  roots: readonly string[],
  starts: number,
): Promise<ColdStartResult[]> {
  const samples = roots.map((): ColdStartSample[] => []);
  // One unmeasured start of each: the OS file cache holds the modules, as it does for a user.
  for (const root of roots) {
    await timeHelp(root);
    await timeRun(root);
  }
  for (let index = 0; index < starts; index += 1) {
    for (const [position, root] of roots.entries()) {
      const helpMs = await timeHelp(root);
      const run = await timeRun(root);
      samples[position]?.push({
        helpMs,
        coordinatorRequestMs: run.coordinator,
        firstSubAgentRequestMs: run.subAgent,
      });
    }
  }
  return roots.map((root, position) => {
    const own = samples[position] ?? [];
    return {
      root,
      starts,
      helpMs: median(own.map((sample) => sample.helpMs)),
      coordinatorRequestMs: median(own.map((sample) => sample.coordinatorRequestMs)),
      firstSubAgentRequestMs: median(own.map((sample) => sample.firstSubAgentRequestMs)),
      samples: own,
    };
  });
}

/** The `coldStart` field of bench/results/latest.json: this build's medians, and the build it was compared with. */
export interface ColdStartField {
  starts: number;
  helpMs: number;
  coordinatorRequestMs: number;
  firstSubAgentRequestMs: number;
  date: string;
  /** The machine's 1-minute load average when the measurement ended (the machine is shared). */
  loadAverage: number;
  /** The other build's medians from the same interleaved starts (`--cold-start-compare`). */
  baseline?:
    | {
        root: string;
        /** The compared root's git commit, when it is a checkout. */
        commit?: string | undefined;
        helpMs: number;
        coordinatorRequestMs: number;
        firstSubAgentRequestMs: number;
      }
    | undefined;
}

/** The latest.json field of `own`, with `baseline` measured beside it when given. */
export function coldStartField(own: ColdStartResult, baseline?: ColdStartResult): ColdStartField {
  const tenth = (value: number): number => Math.round(value * 10) / 10;
  return {
    starts: own.starts,
    helpMs: tenth(own.helpMs),
    coordinatorRequestMs: tenth(own.coordinatorRequestMs),
    firstSubAgentRequestMs: tenth(own.firstSubAgentRequestMs),
    date: new Date().toISOString(),
    loadAverage: tenth(loadavg()[0] ?? 0),
    ...(baseline === undefined
      ? {}
      : {
          baseline: {
            root: baseline.root,
            ...commitOf(baseline.root),
            helpMs: tenth(baseline.helpMs),
            coordinatorRequestMs: tenth(baseline.coordinatorRequestMs),
            firstSubAgentRequestMs: tenth(baseline.firstSubAgentRequestMs),
          },
        }),
  };
}

function commitOf(root: string): { commit?: string } {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return commit === '' ? {} : { commit };
  } catch {
    return {};
  }
}
