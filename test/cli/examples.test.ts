import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Each example as a reader runs it: built JS, offline model, its own working folder.
const root = new URL('../../', import.meta.url).pathname;

function runExample(name: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = join(root, 'dist', 'examples', `${name}.js`);
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first.`);
  const cwd = mkdtempSync(join(tmpdir(), 'troupe-example-'));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [script],
      { cwd, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: cwd } },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr });
      },
    );
  });
}

describe('examples', () => {
  it('runs research → analysis → report and names the report when run offline', async () => {
    const result = await runExample('research-report');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('completed: (offline heuristic model) Done.');
    expect(result.stdout).not.toContain('✗');
  });

  it('runs parallel researchers over many topics when run offline', async () => {
    const result = await runExample('parallel-topics');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('12/12 completed');
  });

  it('delivers typed summaries on a custom channel to a custom subscriber', async () => {
    const result = await runExample('custom-role-channel');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('| from | file | title | wordCount | figures |');
    expect(result.stdout.match(/received a summary from summarizer-\d/g)).toHaveLength(4);
  });

  it('prints its own timeline and a bar per agent from bus hooks', async () => {
    const result = await runExample('hooks-trace');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('the analyst finished first-hand (completed)');
    expect(result.stdout).toMatch(/^reporter-1 +\|.*█.*\| \d+ tokens$/m);
  });
});
