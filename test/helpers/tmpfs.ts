import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A small tmpfs of its own, for tests of a full disk or a read-only file
 * system for real. Mounting needs root (or CAP_SYS_ADMIN) on Linux; where it
 * is not permitted `CAN_MOUNT` is false and those tests skip.
 */
export interface Tmpfs {
  path: string;
  /** Changes its size (in KiB), e.g. to make room again. */
  resize(sizeKb: number): void;
  unmount(): void;
}

/** Mounts a tmpfs of `sizeKb` KiB (read-only with `readOnly`), or returns undefined when not permitted. */
export function mountTmpfs(
  sizeKb: number,
  options: { readOnly?: boolean } = {},
): Tmpfs | undefined {
  const path = mkdtempSync(join(tmpdir(), 'troupe-tmpfs-'));
  const mountOptions = `${options.readOnly === true ? 'ro,' : ''}size=${sizeKb}k`;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', mountOptions, 'tmpfs', path], { stdio: 'ignore' });
  } catch {
    rmSync(path, { recursive: true, force: true });
    return undefined;
  }
  return {
    path,
    resize: (size) =>
      execFileSync('mount', ['-o', `remount,size=${size}k`, path], { stdio: 'ignore' }),
    unmount: () => {
      execFileSync('umount', [path], { stdio: 'ignore' });
      rmSync(path, { recursive: true, force: true });
    },
  };
}

function probe(): boolean {
  if (process.platform !== 'linux') return false;
  const mounted = mountTmpfs(16);
  mounted?.unmount();
  return mounted !== undefined;
}

/** True when this process may mount a tmpfs (Linux, root). */
export const CAN_MOUNT = probe();
