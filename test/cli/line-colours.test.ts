import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { stripAnsi } from '../../src/render/terminal.js';
import { sampleRun } from './events.js';
import { argv, fakeIo } from './io.js';

// The colour code a line starts with (ESC [ n m).
const ESCAPE_CODE = new RegExp(`^${String.fromCharCode(27)}\\[(\\d+)m`);

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Line mode (stdout not a terminal) through the CLI: `troupe trace` replays with the run's renderer.
async function replay(env: NodeJS.ProcessEnv): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-colours-'));
  dirs.push(dir);
  const file = join(dir, 'trace.jsonl');
  writeFileSync(
    file,
    `${sampleRun()
      .map((event) => JSON.stringify(event))
      .join('\n')}\n`,
  );
  const io = fakeIo({ env });
  expect(await runCli(argv('trace', file), io), io.stderr.text).toBe(0);
  return io.stdout.text;
}

describe('line mode colours', () => {
  it('has no colour when stdout is not a terminal', async () => {
    expect(await replay({})).not.toContain('\u001b[');
  });

  it('colours each agent prefix, one stable colour per agent, with FORCE_COLOR', async () => {
    const text = await replay({ FORCE_COLOR: '1' });
    const coordinator = text
      .split('\n')
      .filter((line) => stripAnsi(line).startsWith('coordinator '))
      .map((line) => ESCAPE_CODE.exec(line)?.[1]);
    expect(coordinator.length).toBeGreaterThan(1);
    expect(new Set(coordinator).size).toBe(1);
    expect(coordinator[0]).toBeDefined();
    expect(stripAnsi(text)).toBe(await replay({}));
  });

  it('has no colour with NO_COLOR, even with FORCE_COLOR', async () => {
    expect(await replay({ NO_COLOR: '1', FORCE_COLOR: '1' })).not.toContain('\u001b[');
  });
});
