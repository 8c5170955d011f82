import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.js';
import { prepareRunFolder, WRITER_LOCK } from '../../src/job/run-folder.js';
import { CAN_MOUNT, mountTmpfs, type Tmpfs } from '../helpers/tmpfs.js';

const dirs: string[] = [];
const mounts: Tmpfs[] = [];
afterEach(() => {
  for (const mount of mounts.splice(0)) mount.unmount();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-folder-'));
  dirs.push(dir);
  return dir;
}

function failure(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (isTroupeError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a failure');
}

describe('prepareRunFolder', () => {
  it('makes the output and run folders and takes the writer lock', () => {
    const out = join(tempDir(), 'a', 'b');
    const release = prepareRunFolder(join(out, 'run-1'), out);
    expect(existsSync(join(out, 'run-1', WRITER_LOCK))).toBe(true);
    release();
    expect(existsSync(join(out, 'run-1', WRITER_LOCK))).toBe(false);
  });

  it('names the file in the way of the folder', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'runs'), 'a file');
    expect(
      failure(() => prepareRunFolder(join(dir, 'runs', 'sub', 'run-1'), join(dir, 'runs', 'sub'))),
    ).toEqual({
      code: 'usage.invalid_option',
      message: `Cannot use the output folder ${join(dir, 'runs', 'sub')}: ${join(dir, 'runs')} is a file, not a folder. Pick another --out, or move the file.`,
    });
  });

  it.skipIf(!CAN_MOUNT)('says read-only file system, not ENOENT, for a read-only --out', () => {
    const disk = mountTmpfs(64, { readOnly: true }) as Tmpfs;
    mounts.push(disk);
    const out = join(disk.path, 'runs');
    const { code, message } = failure(() => prepareRunFolder(join(out, 'run-1'), out));
    expect(code).toBe('usage.invalid_option');
    expect(message).toBe(
      `Cannot use the output folder ${out}: read-only file system (EROFS at ${out}). Pick another --out.`,
    );
  });

  it.skipIf(!CAN_MOUNT)(
    'says disk full (a storage failure, not a usage error) on a full disk',
    () => {
      const disk = mountTmpfs(16) as Tmpfs;
      mounts.push(disk);
      try {
        writeFileSync(join(disk.path, 'filler'), Buffer.alloc(32 * 1024));
      } catch {
        // Full now.
      }
      const { code, message } = failure(() =>
        prepareRunFolder(join(disk.path, 'run-1'), disk.path),
      );
      expect(code).toBe('io.write_failed');
      expect(message).toContain('disk full');
    },
  );

  // Root may write anywhere, so a folder without permission only fails for other users.
  it.skipIf(process.getuid?.() === 0 || process.platform === 'win32')(
    'says permission denied for a folder the user may not write',
    () => {
      const out = tempDir();
      chmodSync(out, 0o555);
      const { code, message } = failure(() => prepareRunFolder(join(out, 'run-1'), out));
      chmodSync(out, 0o755);
      expect(code).toBe('usage.invalid_option');
      expect(message).toContain('permission denied (EACCES');
    },
  );
});
