import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../src/events/trace.js';
import { CAN_MOUNT, mountTmpfs, type Tmpfs } from '../helpers/tmpfs.js';

// The CLI as a person runs it (node bin/troupe.js on the built dist/), on disks that fail for real.
const root = new URL('../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'troupe.js');
const corpus = join(root, 'examples', 'corpus');

const mounts: Tmpfs[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const mount of mounts.splice(0)) mount.unmount();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

beforeAll(() => {
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before these tests (npm test does).');
  }
});

function troupe(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: tmpdir() };
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env, cwd: root }, (error, stdout, stderr) => {
      resolve({
        code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
        stdout,
        stderr,
      });
    });
  });
}

const RUN = [
  'run',
  'Compare the documents.',
  '--provider',
  'offline',
  '--workspace',
  corpus,
  '--quiet',
];

describe('troupe run when the disk fails', () => {
  it.skipIf(!CAN_MOUNT)(
    'stops with exit 4 naming the file and the cause when the disk fills mid-run, and --resume finishes it once there is room',
    async () => {
      // Room for the start of the run, not for all of it (a whole demo writes about 500 KiB).
      const disk = mountTmpfs(64) as Tmpfs;
      mounts.push(disk);
      const first = await troupe([...RUN, '--out', disk.path]);
      expect(first.code, first.stderr).toBe(4);
      const [runId] = readdirSync(disk.path);
      expect(first.stderr).toMatch(
        new RegExp(
          `error: cannot write the (trace|journal) to ${disk.path}/${runId}/(trace|journal)\\.jsonl: disk full; the run stopped\\.`,
        ),
      );
      expect(first.stderr).toContain(
        `Free some space, then resume with: troupe run --resume ${runId} --out ~/${relative(tmpdir(), disk.path)}`,
      );
      expect(first.stderr).not.toMatch(/ENOSPC|at .*\.js:\d+/);

      disk.resize(16 * 1024);
      const second = await troupe([
        ...RUN.slice(0, 1),
        '--resume',
        runId as string,
        ...RUN.slice(2),
        '--out',
        disk.path,
      ]);
      expect(second.code, second.stderr).toBe(0);
      const runDir = join(disk.path, runId as string);
      expect(existsSync(join(runDir, 'answer.md'))).toBe(true);
      const { events, invalidLines } = readTrace(join(runDir, 'trace.jsonl'));
      expect(invalidLines).toEqual([]);
      expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'completed' });
    },
  );

  it.skipIf(!CAN_MOUNT)('refuses a read-only --out with exit 2 and the real cause', async () => {
    const disk = mountTmpfs(64, { readOnly: true }) as Tmpfs;
    mounts.push(disk);
    const result = await troupe([...RUN, '--out', join(disk.path, 'runs')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `error: Cannot use the output folder ${join(disk.path, 'runs')}: read-only file system (EROFS at ${join(disk.path, 'runs')}). Pick another --out.`,
    );
    expect(result.stderr).not.toContain('ENOENT');
  });

  it('refuses an --out with a file in the way with exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-disk-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'runs'), 'not a folder');
    const result = await troupe([...RUN, '--out', join(dir, 'runs')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${join(dir, 'runs')} is a file, not a folder`);
  });
});
