import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWriteFileTool } from '../../src/tools/builtin/write-file.js';
import {
  guardProtectedPaths,
  PROTECTED_PATHS,
  protectedEntryOf,
} from '../../src/tools/protected-paths.js';
import { callTool, contextFor, createWorld, outcome, snapshot, type World } from './harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
});
afterEach(() => world.cleanup());

describe('protectedEntryOf', () => {
  it('matches protected entries at any depth and in any case, and nothing else', () => {
    expect(protectedEntryOf('.git/hooks/pre-commit')?.path).toBe('.git');
    expect(protectedEntryOf('vendor/lib/.GIT/config')?.path).toBe('.git');
    expect(protectedEntryOf('.github/workflows/ci.yml')?.path).toBe('.github/workflows');
    expect(protectedEntryOf('.envrc')?.path).toBe('.envrc');
    expect(protectedEntryOf('.github/ISSUE_TEMPLATE.md')).toBeUndefined();
    expect(protectedEntryOf('notes/git/config')).toBeUndefined();
    expect(protectedEntryOf('a.gitignore')).toBeUndefined();
  });

  it('gives every entry a reason', () => {
    for (const entry of PROTECTED_PATHS) expect(entry.reason.length).toBeGreaterThan(20);
  });
});

describe('write_file and protected paths', () => {
  it('writes a protected path when the run allows protected writes', async () => {
    const result = await callTool(
      createWriteFileTool(),
      { path: '.envrc', content: 'export A=1\n' },
      contextFor(world.workspace, { sandbox: { allowProtectedWrites: true } }),
    );
    expect(outcome(result)).toBe('ok');
    expect(await readFile(path.join(world.workspace, '.envrc'), 'utf8')).toBe('export A=1\n');
  });
});

describe('guardProtectedPaths', () => {
  it('holds placeholders for missing entries and removes them again, keeping existing ones', async () => {
    await mkdir(path.join(world.workspace, '.git'));
    await writeFile(path.join(world.workspace, '.git', 'config'), '[core]\n');
    const before = await snapshot(world.workspace);
    const guard = await guardProtectedPaths([world.workspace]);
    expect(guard.paths).toContain(path.join(world.workspace, '.git'));
    expect(guard.paths).toContain(path.join(world.workspace, '.github', 'workflows'));
    expect(existsSync(path.join(world.workspace, '.envrc'))).toBe(true);
    const second = await guardProtectedPaths([world.workspace]);
    await guard.release();
    // Still held by the second guard.
    expect(existsSync(path.join(world.workspace, '.envrc'))).toBe(true);
    await second.release();
    expect(await snapshot(world.workspace)).toEqual(before);
  });

  it('refuses a protected entry that is a symbolic link', async () => {
    await symlink(world.outside, path.join(world.workspace, '.vscode'));
    const before = await snapshot(world.workspace);
    await expect(guardProtectedPaths([world.workspace])).rejects.toThrow(/symbolic link/);
    expect(await snapshot(world.workspace)).toEqual(before);
  });
});
