import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type JobSettings, jobRuntimeOptions } from '../../src/cli/commands/run.js';
import { runCli } from '../../src/cli/main.js';
import { EventBus } from '../../src/events/bus.js';
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
const run = { runId: 'run-1', runDir: '/tmp/out/run-1', bus: new EventBus() };

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
    expect(jobRuntimeOptions({ ...settings, unsafeNoSandbox: true }, run).unsafeNoSandbox).toBe(
      true,
    );
    expect(jobRuntimeOptions(settings, run).unsafeNoSandbox).toBeUndefined();
  });
});
