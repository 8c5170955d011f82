import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listDirTool } from '../../../src/tools/builtin/list-dir.js';
import { callTool, contextFor, createWorld, outcome, type World } from '../harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
  await mkdir(path.join(world.workspace, 'src', 'deep', 'deeper'), { recursive: true });
  await mkdir(path.join(world.workspace, '.git'));
  await writeFile(path.join(world.workspace, '.git', 'HEAD'), 'ref');
  await writeFile(path.join(world.workspace, 'README.md'), 'x'.repeat(2048));
  await writeFile(path.join(world.workspace, 'src', 'a.ts'), 'a');
  await writeFile(path.join(world.workspace, 'src', 'deep', 'deeper', 'z.ts'), 'z');
});
afterEach(() => world.cleanup());

describe('list_dir', () => {
  it('lists the root with types and sizes, folders first', async () => {
    const result = await callTool(listDirTool, {}, contextFor(world.workspace));
    expect(result.ok).toBe(true);
    expect(result.content.split('\n')).toEqual([
      'Workspace root:',
      'dir      .git/',
      'dir      src/',
      'file     README.md  (2.0 KiB)',
    ]);
  });

  it('lists recursively with paths relative to the workspace, skipping .git', async () => {
    const result = await callTool(
      listDirTool,
      { recursive: true, depth: 4 },
      contextFor(world.workspace),
    );
    expect(result.content).toContain('file     src/a.ts  (1 byte)');
    expect(result.content).toContain('file     src/deep/deeper/z.ts');
    expect(result.content).not.toContain('.git/HEAD');
  });

  it('stops at the depth limit', async () => {
    const result = await callTool(
      listDirTool,
      { recursive: true, depth: 2 },
      contextFor(world.workspace),
    );
    expect(result.content).toContain('dir      src/deep/');
    expect(result.content).not.toContain('deeper/');
    expect(result.content).toContain('deeper than 2 levels');
  });

  it('stops at the entry limit and says so', async () => {
    const result = await callTool(
      listDirTool,
      { recursive: true, limit: 2 },
      contextFor(world.workspace),
    );
    expect(result.content.split('\n').filter((line) => /^(dir|file) /.test(line))).toHaveLength(2);
    expect(result.content).toContain('Stopped at 2 entries');
  });

  it('lists a subfolder', async () => {
    const result = await callTool(listDirTool, { path: 'src' }, contextFor(world.workspace));
    expect(result.content.split('\n')[0]).toBe('src:');
    expect(result.content).toContain('file     src/a.ts');
  });

  it('shows a symlink without following it', async () => {
    await symlink(world.outside, path.join(world.workspace, 'src', 'out'));
    const result = await callTool(
      listDirTool,
      { path: 'src', recursive: true },
      contextFor(world.workspace),
    );
    expect(result.content).toContain(`symlink  src/out -> ${world.outside}`);
  });

  it('says a folder is empty', async () => {
    await mkdir(path.join(world.workspace, 'empty'));
    const result = await callTool(listDirTool, { path: 'empty' }, contextFor(world.workspace));
    expect(result.content).toBe('empty:\n(empty folder)');
  });

  it('fails with a hint for a missing folder and for a file', async () => {
    expect(
      outcome(await callTool(listDirTool, { path: 'nope' }, contextFor(world.workspace))),
    ).toBe('tool.failed');
    const file = await callTool(listDirTool, { path: 'README.md' }, contextFor(world.workspace));
    expect(file.content).toContain('Use read_file');
  });
});
