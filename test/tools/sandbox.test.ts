import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.js';
import { isInside, resolveInScope, showPath } from '../../src/tools/sandbox.js';
import { createWorld, type World } from './harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
  await mkdir(path.join(world.workspace, 'notes'));
  await writeFile(path.join(world.workspace, 'notes', 'a.md'), 'hello');
  await writeFile(path.join(world.outside, 'secret.txt'), 'secret');
});
afterEach(() => world.cleanup());

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return isTroupeError(error) ? error.code : `untyped: ${String(error)}`;
  }
}

describe('resolveInScope', () => {
  it('resolves a relative path inside the workspace', async () => {
    const resolved = await resolveInScope({ root: world.workspace }, 'notes/a.md');
    expect(resolved).toMatchObject({
      absolute: path.join(world.workspace, 'notes', 'a.md'),
      relative: 'notes/a.md',
      exists: true,
    });
  });

  it('accepts an absolute path that lies inside the workspace', async () => {
    const resolved = await resolveInScope(
      { root: world.workspace },
      path.join(world.workspace, 'notes'),
    );
    expect(resolved.relative).toBe('notes');
  });

  it('resolves a missing file below an existing folder without creating it', async () => {
    const resolved = await resolveInScope({ root: world.workspace }, 'notes/new/b.md');
    expect(resolved).toMatchObject({ relative: 'notes/new/b.md', exists: false });
  });

  it('returns "." for the root itself', async () => {
    expect((await resolveInScope({ root: world.workspace }, '')).relative).toBe('.');
    expect((await resolveInScope({ root: world.workspace }, '.')).relative).toBe('.');
  });

  it('treats backslashes as separators when the path stays inside', async () => {
    expect((await resolveInScope({ root: world.workspace }, 'notes\\a.md')).relative).toBe(
      'notes/a.md',
    );
  });

  it('keeps a traversal that comes back inside the workspace', async () => {
    expect((await resolveInScope({ root: world.workspace }, 'notes/../notes/a.md')).relative).toBe(
      'notes/a.md',
    );
  });

  it.each([
    ['a parent traversal', '../outside/secret.txt'],
    ['a nested traversal', 'notes/../../outside/secret.txt'],
    ['an absolute path outside', '/etc/passwd'],
    ['backslash traversal', '..\\outside\\secret.txt'],
    ['URL-encoded traversal', '%2e%2e/outside/secret.txt'],
    ['URL-encoded slashes', '..%2f..%2fetc%2fpasswd'],
    ['a NUL byte', 'notes/a.md\0.png'],
  ])('refuses %s with sandbox.escape', async (_name, requested) => {
    expect(await codeOf(resolveInScope({ root: world.workspace }, requested))).toBe(
      'sandbox.escape',
    );
  });

  it('refuses a symlinked file that leads out', async () => {
    await symlink(path.join(world.outside, 'secret.txt'), path.join(world.workspace, 'leak.txt'));
    expect(await codeOf(resolveInScope({ root: world.workspace }, 'leak.txt'))).toBe(
      'sandbox.escape',
    );
  });

  it('refuses a path under a symlinked folder that leads out, even to a missing file', async () => {
    await symlink(world.outside, path.join(world.workspace, 'out'));
    expect(await codeOf(resolveInScope({ root: world.workspace }, 'out/new.txt'))).toBe(
      'sandbox.escape',
    );
  });

  it('refuses a dangling symlink, whose target a write would create', async () => {
    await symlink(path.join(world.outside, 'new.txt'), path.join(world.workspace, 'dangling'));
    expect(await codeOf(resolveInScope({ root: world.workspace }, 'dangling'))).toBe(
      'sandbox.escape',
    );
  });

  it('refuses a symlink loop', async () => {
    await symlink('loop-b', path.join(world.workspace, 'loop-a'));
    await symlink('loop-a', path.join(world.workspace, 'loop-b'));
    expect(await codeOf(resolveInScope({ root: world.workspace }, 'loop-a'))).toBe(
      'sandbox.escape',
    );
  });

  it('follows a symlink that stays inside', async () => {
    await symlink('notes', path.join(world.workspace, 'docs'));
    expect((await resolveInScope({ root: world.workspace }, 'docs/a.md')).relative).toBe(
      'notes/a.md',
    );
  });

  it('names the area in refusals', async () => {
    await expect(
      resolveInScope({ root: world.workspace, label: 'the output folder' }, '../x'),
    ).rejects.toThrow(/outside the output folder/);
  });
});

describe('isInside', () => {
  it('does not mistake a sibling with a common prefix for a child', () => {
    expect(isInside('/a/work', '/a/workspace/x')).toBe(false);
    expect(isInside('/a/work', '/a/work/x')).toBe(true);
  });
});

describe('showPath', () => {
  it('cuts a huge path so it cannot flood a message', () => {
    expect(showPath('x'.repeat(100_000)).length).toBeLessThan(210);
  });
});
