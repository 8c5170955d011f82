import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadGlobToRegExp } from '../../../src/tools/builtin/glob.js';
import { createSearchFilesTool, searchFilesTool } from '../../../src/tools/builtin/search-files.js';
import { callTool, contextFor, createWorld, outcome, type World } from '../harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
  await mkdir(path.join(world.workspace, 'src'));
  await mkdir(path.join(world.workspace, 'node_modules', 'dep'), { recursive: true });
  await writeFile(path.join(world.workspace, 'README.md'), 'intro\nTODO: write docs\n');
  await writeFile(path.join(world.workspace, 'src', 'a.ts'), 'const a = 1;\n// TODO: test a\n');
  await writeFile(path.join(world.workspace, 'src', 'b.js'), '// TODO: b\n');
  await writeFile(path.join(world.workspace, 'node_modules', 'dep', 'x.js'), 'TODO dep');
  await writeFile(path.join(world.workspace, 'image.bin'), Buffer.from([0, 1, 2, 84, 79, 68, 79]));
});
afterEach(() => world.cleanup());

describe('search_files', () => {
  it('finds matching lines as path:line: text, skipping node_modules and binaries', async () => {
    const result = await callTool(
      searchFilesTool,
      { pattern: 'TODO' },
      contextFor(world.workspace),
    );
    expect(result.ok).toBe(true);
    expect(result.content.split('\n')).toEqual([
      'README.md:2: TODO: write docs',
      'src/a.ts:2: // TODO: test a',
      'src/b.js:1: // TODO: b',
      '[3 matches in 4 files searched.]',
    ]);
  });

  it('filters by a file-name glob and by a path glob', async () => {
    const byName = await callTool(
      searchFilesTool,
      { pattern: 'TODO', glob: '*.ts' },
      contextFor(world.workspace),
    );
    expect(byName.content.split('\n')[0]).toBe('src/a.ts:2: // TODO: test a');
    expect(byName.content).not.toContain('README');
    const byPath = await callTool(
      searchFilesTool,
      { pattern: 'TODO', glob: 'src/**/*.{js,ts}' },
      contextFor(world.workspace),
    );
    expect(byPath.content).toContain('src/b.js:1');
    expect(byPath.content).not.toContain('README');
  });

  it('searches one folder or one file', async () => {
    const folder = await callTool(
      searchFilesTool,
      { pattern: 'TODO', path: 'src' },
      contextFor(world.workspace),
    );
    expect(folder.content).not.toContain('README');
    const file = await callTool(
      searchFilesTool,
      { pattern: 'intro', path: 'README.md' },
      contextFor(world.workspace),
    );
    expect(file.content.split('\n')[0]).toBe('README.md:1: intro');
  });

  it('stops at maxResults and says there may be more', async () => {
    const result = await callTool(
      searchFilesTool,
      { pattern: 'TODO', maxResults: 1 },
      contextFor(world.workspace),
    );
    expect(result.content.split('\n')).toHaveLength(2);
    expect(result.content).toContain('stopped at the limit');
  });

  it('says so when nothing matches', async () => {
    const result = await callTool(searchFilesTool, { pattern: 'zzz' }, contextFor(world.workspace));
    expect(result.content.split('\n')[0]).toBe('No matches.');
  });

  it('does not follow symlinks out of the workspace', async () => {
    await writeFile(path.join(world.outside, 'secret.txt'), 'TODO secret');
    await symlink(world.outside, path.join(world.workspace, 'out'));
    const result = await callTool(
      searchFilesTool,
      { pattern: 'secret' },
      contextFor(world.workspace),
    );
    expect(result.content.split('\n')[0]).toBe('No matches.');
  });

  it('reports an invalid pattern as invalid input', async () => {
    const result = await callTool(
      searchFilesTool,
      { pattern: '(unclosed' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.invalid_input');
  });

  it('stops a catastrophic pattern at the per-file time limit instead of hanging', async () => {
    await writeFile(path.join(world.workspace, 'evil.txt'), `${'a'.repeat(5_000)}!`);
    const tool = createSearchFilesTool({ perFileTimeoutMs: 100 });
    const result = await callTool(
      tool,
      { pattern: '(a+)+$', path: 'evil.txt' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.timeout');
    expect(result.content).toContain('backtracks catastrophically');
  });

  it('skips files over the size limit and says how many', async () => {
    await writeFile(path.join(world.workspace, 'big.txt'), `TODO ${'x'.repeat(5_000)}`);
    const tool = createSearchFilesTool({ maxFileBytes: 1_000 });
    const result = await callTool(
      tool,
      { pattern: 'TODO', glob: 'big.txt' },
      contextFor(world.workspace),
    );
    expect(result.content).toContain('1 file(s) over 1000 bytes skipped');
  });
});

describe('loadGlobToRegExp', () => {
  it.each([
    ['*.md', 'a.md', true],
    ['*.md', 'a.ts', false],
    ['src/**/*.ts', 'src/a.ts', true],
    ['src/**/*.ts', 'src/x/y/a.ts', true],
    ['src/*.ts', 'src/x/a.ts', false],
    ['file?.txt', 'file1.txt', true],
    ['*.{ts,js}', 'a.js', true],
    ['[ab].txt', 'b.txt', true],
    ['[!ab].txt', 'a.txt', false],
    ['a+b\\(1\\).txt', 'a+b(1).txt', true],
    ['.env*', '.env.local', true],
    ['(a|b).md', 'b.md', true],
  ])('%s matches %s: %s', async (glob, subject, expected) => {
    const globToRegExp = await loadGlobToRegExp();
    expect(globToRegExp(glob).test(subject)).toBe(expected);
  });
});
