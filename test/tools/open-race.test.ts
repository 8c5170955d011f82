import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, symlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { listDirTool } from '../../src/tools/builtin/list-dir.js';
import { readFileTool } from '../../src/tools/builtin/read-file.js';
import { searchFilesTool } from '../../src/tools/builtin/search-files.js';
import { createWriteFileTool } from '../../src/tools/builtin/write-file.js';
import { HAS_DESCRIPTOR_PATHS } from '../../src/tools/folder-handle.js';
import { callTool, contextFor, createWorld, outcome, snapshot, type World } from './harness.js';

/**
 * The check-then-open window of the file tools: a folder inside the
 * workspace is swapped for a symbolic link to a sibling folder after the
 * path check and before the open. Deterministically (a hook runs the swap
 * right after the check's realpath returns) and with a concurrent swapper
 * process over many calls. Nothing outside may be read or written.
 */

// The hook: runs after every realpath in the code under test (resolveInScope's check).
const hook = vi.hoisted(() => ({
  afterRealpath: undefined as ((p: string) => Promise<void>) | undefined,
}));
vi.mock('node:fs/promises', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:fs/promises')>();
  const realpath = async (...args: Parameters<typeof original.realpath>) => {
    const result = await original.realpath(...args);
    await hook.afterRealpath?.(String(args[0]));
    return result;
  };
  return { ...original, realpath, default: { ...original, realpath } };
});

const TOKEN = `canary-${randomBytes(8).toString('hex')}`;
let world: World;
let real: string;

beforeEach(async () => {
  world = await createWorld();
  real = path.join(world.workspace, 'real');
  await mkdir(real);
  await writeFile(path.join(real, 'notes.txt'), 'inside\n');
  await writeFile(path.join(world.outside, 'notes.txt'), `${TOKEN}\n`);
});
afterEach(async () => {
  hook.afterRealpath = undefined;
  await world.cleanup();
});

/** Swaps `real` for a link to the sibling folder, once, when the check resolves `target`. */
function swapAfterCheckOf(target: string): void {
  let done = false;
  hook.afterRealpath = async (checked) => {
    if (done || checked !== target) return;
    done = true;
    await rename(real, `${real}.away`);
    await symlink(world.outside, real);
  };
}

describe('file tools against a symlink swap between check and open', () => {
  it('read_file does not read the sibling when the folder becomes a link after the check', async () => {
    swapAfterCheckOf(path.join(real, 'notes.txt'));
    const result = await callTool(
      readFileTool,
      { path: 'real/notes.txt' },
      contextFor(world.workspace),
    );
    expect(result.content).not.toContain(TOKEN);
    expect(outcome(result)).toBe('sandbox.escape');
    expect(result.content).toContain('changed while it was being opened');
  });

  it('write_file does not write into the sibling when the folder becomes a link after the check', async () => {
    const outsideBefore = await snapshot(world.outside);
    swapAfterCheckOf(real);
    const result = await callTool(
      createWriteFileTool(),
      { path: 'real/planted.txt', content: 'x' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('sandbox.escape');
    expect(await snapshot(world.outside)).toEqual(outsideBefore);
  });

  it('write_file does not copy the sibling into a .bak when the file becomes a link after the check', async () => {
    const target = path.join(real, 'notes.txt');
    let done = false;
    hook.afterRealpath = async (checked) => {
      if (done || checked !== target) return;
      done = true;
      await unlink(target);
      await symlink(path.join(world.outside, 'notes.txt'), target);
    };
    const outsideBefore = await snapshot(world.outside);
    const result = await callTool(
      createWriteFileTool(),
      { path: 'real/notes.txt', content: 'new\n' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.refused');
    expect(await snapshot(world.outside)).toEqual(outsideBefore);
    expect(existsSync(path.join(real, 'notes.txt.bak'))).toBe(false);
  });

  it('list_dir does not list the sibling when the folder becomes a link after the check', async () => {
    await writeFile(path.join(world.outside, `secret-${TOKEN}.txt`), 'x');
    swapAfterCheckOf(real);
    const result = await callTool(listDirTool, { path: 'real' }, contextFor(world.workspace));
    expect(result.content).not.toContain(TOKEN);
    expect(outcome(result)).toBe('sandbox.escape');
  });

  it('search_files does not search the sibling when the folder becomes a link after the check', async () => {
    swapAfterCheckOf(real);
    const result = await callTool(
      searchFilesTool,
      { pattern: 'canary', path: 'real' },
      contextFor(world.workspace),
    );
    expect(result.content).not.toContain(TOKEN);
  });

  it.skipIf(!HAS_DESCRIPTOR_PATHS)(
    'read_file and write_file race a swapper process flipping the folder 300 times: nothing outside is read or written',
    async () => {
      const outsideBefore = await snapshot(world.outside);
      // A separate process flips `real` between the folder and a link to the sibling, without end.
      const swapper = spawn(
        process.execPath,
        [
          '-e',
          `const fs = require('fs'); const [real, out] = process.argv.slice(1);
           for (;;) { try { fs.renameSync(real, real + '.away'); fs.symlinkSync(out, real); fs.unlinkSync(real); fs.renameSync(real + '.away', real); } catch {} }`,
          real,
          world.outside,
        ],
        { stdio: 'ignore' },
      );
      const outcomes = new Map<string, number>();
      try {
        for (let index = 0; index < 300; index += 1) {
          const read = await callTool(
            readFileTool,
            { path: 'real/notes.txt' },
            contextFor(world.workspace),
          );
          expect(read.content).not.toContain(TOKEN);
          const written = await callTool(
            createWriteFileTool(),
            { path: `real/w${index}.txt`, content: 'w' },
            contextFor(world.workspace),
          );
          for (const result of [read, written]) {
            outcomes.set(outcome(result), (outcomes.get(outcome(result)) ?? 0) + 1);
          }
        }
      } finally {
        swapper.kill('SIGKILL');
      }
      expect(await snapshot(world.outside)).toEqual(outsideBefore);
      // Some calls met the folder, some met the link: the race was really run.
      expect(outcomes.get('ok') ?? 0, JSON.stringify([...outcomes])).toBeGreaterThan(0);
    },
  );
});
