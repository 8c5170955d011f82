import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type JobSettings, jobRuntimeParts } from '../../src/cli/commands/run.js';
import { createPriceFunction, priceKey } from '../../src/cli/prices.js';
import { runCli } from '../../src/cli/program.js';
import { argv, fakeIo } from './io.js';

const corpus = new URL('../../examples/corpus/', import.meta.url).pathname;
const TASK = 'Compare the storage documents and write a report.';

const dirs: string[] = [];
function outDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-run-options-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function offlineRun(...extra: string[]): string[] {
  return argv(
    'run',
    TASK,
    '--provider',
    'offline',
    '--workspace',
    corpus,
    '--out',
    outDir(),
    '--threads',
    '1',
    ...extra,
  );
}

const settings: JobSettings = {
  task: TASK,
  spec: { provider: 'offline' },
  workspace: corpus,
  out: '/tmp/out',
  grants: ['read', 'exec'],
  roles: [],
  mode: 'lines',
  approve: false,
  env: {},
};

describe('troupe run --json', () => {
  it('prints every event as the same line the trace holds (one serialization for both)', async () => {
    const io = fakeIo();
    const out = outDir();
    const args = argv(
      'run',
      TASK,
      '--provider',
      'offline',
      '--workspace',
      corpus,
      '--out',
      out,
      '--threads',
      '1',
      '--json',
    );
    expect(await runCli(args, io)).toBe(0);
    const [runId] = readdirSync(out).filter((name) => !name.includes('.'));
    const trace = readFileSync(join(out, runId as string, 'trace.jsonl'), 'utf8');
    const printed = io.stdout.text.trimEnd().split('\n');
    expect(printed.length).toBeGreaterThan(20);
    expect(printed).toEqual(trace.trimEnd().split('\n'));
    for (const line of printed) expect(JSON.parse(line)).toHaveProperty('seq');
  });
});

describe('troupe run --unsafe-no-sandbox', () => {
  it('warns loudly on stderr and runs the job when given the flag', async () => {
    const io = fakeIo();
    expect(await runCli(offlineRun('--json', '--unsafe-no-sandbox'), io)).toBe(0);
    expect(io.stderr.text).toMatch(
      /^WARNING: --unsafe-no-sandbox: the sub-agents' shell and python run WITHOUT the OS sandbox/m,
    );
    expect(io.stderr.text).toContain('exec is not granted');
  });

  it('passes unsafeNoSandbox to the runtime only when the flag is given', () => {
    expect(jobRuntimeParts({ ...settings, unsafeNoSandbox: true }).unsafeNoSandbox).toBe(true);
    expect(jobRuntimeParts(settings).unsafeNoSandbox).toBeUndefined();
  });
});

describe('troupe run --prices', () => {
  function pricesFile(content: string): string {
    const path = join(outDir(), 'prices.json');
    writeFileSync(path, content);
    return path;
  }

  it('exits 2 with a message that names the file and the problem when the file is bad', async () => {
    const cases: Array<[string, RegExp]> = [
      [join(outDir(), 'missing.json'), /--prices \S+missing\.json: no such file/],
      [pricesFile('{ "offline": '), /not valid JSON/],
      [pricesFile('{ "offline": { "inputPerMTok": 3 } }'), /outputPerMTok/],
      [pricesFile('{ "offline": { "inputPerMTok": -1, "outputPerMTok": 2 } }'), /inputPerMTok/],
      [pricesFile('[1, 2]'), /expected \{ "<model>"/],
    ];
    for (const [file, message] of cases) {
      const io = fakeIo();
      expect(await runCli(offlineRun('--prices', file), io), file).toBe(2);
      expect(io.stderr.text, file).toMatch(message);
      expect(io.stdout.text, file).toBe('');
    }
  });

  it('shows the cost in the summary when the file prices the model', async () => {
    const io = fakeIo();
    const file = pricesFile('{ "offline": { "inputPerMTok": 3, "outputPerMTok": 15 } }');
    expect(await runCli(offlineRun('--quiet', '--prices', file), io)).toBe(0);
    const summary = io.stdout.text.slice(io.stdout.text.lastIndexOf('Run '));
    expect(summary).toMatch(
      /^Run \S+ completed in \S+ · 7 agents \(7 completed\) · \S+ tokens · \$\d+\.\d{4}\n/,
    );
    expect(summary).toMatch(/ cost /);
    expect(summary).toMatch(/total .*\$\d+\.\d{4}/);
    expect(io.stderr.text).not.toContain('WARNING');
  });

  it('shows the same cost when a saved trace is replayed with --prices', async () => {
    const out = outDir();
    const file = pricesFile('{ "offline": { "inputPerMTok": 3, "outputPerMTok": 15 } }');
    const live = fakeIo();
    const run = argv('run', TASK, '--provider', 'offline', '--workspace', corpus, '--out', out);
    expect(await runCli([...run, '--threads', '1', '--quiet', '--prices', file], live)).toBe(0);
    const runId = /Run (\S+) completed/.exec(live.stdout.text)?.[1] ?? '';
    const cost = /· (\$\d+\.\d{4})\n/.exec(live.stdout.text)?.[1];
    expect(cost).toBeDefined();

    const replay = fakeIo();
    expect(await runCli(argv('trace', runId, '--out', out, '--prices', file), replay)).toBe(0);
    expect(replay.stdout.text).toContain(`· ${cost}`);

    const bad = fakeIo();
    expect(await runCli(argv('trace', runId, '--out', out, '--prices', 'nope.json'), bad)).toBe(2);
    expect(bad.stderr.text).toMatch(/--prices nope\.json: no such file/);
  });

  it('prices by the model name the runtime uses, from the spawned model label', () => {
    expect(priceKey('anthropic/claude-sonnet-4-6')).toBe('claude-sonnet-4-6');
    expect(priceKey('openai/anthropic/claude-sonnet-4.6')).toBe('anthropic/claude-sonnet-4.6');
    expect(priceKey('offline (heuristic)')).toBe('offline');
    expect(priceKey('scripted')).toBe('scripted');
    const price = createPriceFunction({
      'claude-sonnet-4-6': { inputPerMTok: 3, outputPerMTok: 15 },
    });
    expect(
      price('anthropic/claude-sonnet-4-6', { inputTokens: 1_000_000, outputTokens: 100_000 }),
    ).toBeCloseTo(4.5);
    expect(price('openai/gpt-5.4-mini', { inputTokens: 1, outputTokens: 1 })).toBeUndefined();
  });

  it('passes the price table to the runtime', () => {
    const prices = { offline: { inputPerMTok: 1, outputPerMTok: 2 } };
    expect(jobRuntimeParts({ ...settings, prices }).prices).toEqual(prices);
  });
});
