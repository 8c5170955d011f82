import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatBytes, readFileTool } from '../../../src/tools/builtin/read-file.js';
import { callTool, contextFor, createWorld, outcome, type World } from '../harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
});
afterEach(() => world.cleanup());

describe('read_file', () => {
  it('returns a short file whole when it fits', async () => {
    await writeFile(path.join(world.workspace, 'a.md'), '# Title\nbody\n');
    const result = await callTool(readFileTool, { path: 'a.md' }, contextFor(world.workspace));
    expect(result).toEqual({ ok: true, content: '# Title\nbody\n' });
  });

  it('cuts at 8,000 characters by default and says how to read further', async () => {
    await writeFile(path.join(world.workspace, 'long.txt'), 'x'.repeat(20_000));
    const result = await callTool(readFileTool, { path: 'long.txt' }, contextFor(world.workspace));
    expect(result.ok).toBe(true);
    expect(result.content.startsWith('x'.repeat(8_000))).toBe(true);
    expect(result.content).toContain('Showing characters 0–8,000 of 20,000');
    expect(result.content).toContain('Call read_file with offset 8000');
  });

  it('reads a window with offset and length, and marks the end of the file', async () => {
    await writeFile(path.join(world.workspace, 'abc.txt'), 'abcdefghij');
    const middle = await callTool(
      readFileTool,
      { path: 'abc.txt', offset: 2, length: 3 },
      contextFor(world.workspace),
    );
    expect(middle.content.split('\n')[0]).toBe('cde');
    const tail = await callTool(
      readFileTool,
      { path: 'abc.txt', offset: 8 },
      contextFor(world.workspace),
    );
    expect(tail.content).toMatch(
      /^ij\n\n\[Showing characters 8–10 of 10 in abc.txt: the end of the file.\]$/,
    );
  });

  it('accepts offset and length sent as strings', async () => {
    await writeFile(path.join(world.workspace, 'abc.txt'), 'abcdefghij');
    const result = await callTool(
      readFileTool,
      { path: 'abc.txt', offset: '1', length: '2' },
      contextFor(world.workspace),
    );
    expect(result.content.startsWith('bc\n')).toBe(true);
  });

  it('fails with a hint when the offset is past the end', async () => {
    await writeFile(path.join(world.workspace, 'abc.txt'), 'abc');
    const result = await callTool(
      readFileTool,
      { path: 'abc.txt', offset: 10 },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.failed');
    expect(result.content).toContain('has 3 characters');
  });

  it('says how to find files when the file does not exist', async () => {
    const result = await callTool(
      readFileTool,
      { path: 'missing.md' },
      contextFor(world.workspace),
    );
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.failed' } });
    expect(result.content).toContain(
      'File not found: "missing.md". Use list_dir to see what exists.',
    );
  });

  it('points a folder at list_dir', async () => {
    await mkdir(path.join(world.workspace, 'docs'));
    const result = await callTool(readFileTool, { path: 'docs' }, contextFor(world.workspace));
    expect(outcome(result)).toBe('tool.refused');
    expect(result.content).toContain('list_dir');
  });

  it('says when a file is empty', async () => {
    await writeFile(path.join(world.workspace, 'empty.txt'), '');
    const result = await callTool(readFileTool, { path: 'empty.txt' }, contextFor(world.workspace));
    expect(result.content).toBe('(empty.txt is empty)');
  });

  it('strips a UTF-8 byte order mark and reads non-ASCII text', async () => {
    await writeFile(path.join(world.workspace, 'bom.txt'), Buffer.from('\uFEFFgrüße 日本', 'utf8'));
    const result = await callTool(readFileTool, { path: 'bom.txt' }, contextFor(world.workspace));
    expect(result.content).toBe('grüße 日本');
  });

  it('does not split a surrogate pair at the cut', async () => {
    await writeFile(path.join(world.workspace, 'emoji.txt'), `a${'😀'.repeat(10)}`);
    const result = await callTool(
      readFileTool,
      { path: 'emoji.txt', length: 2 },
      contextFor(world.workspace),
    );
    expect(result.content.split('\n')[0]).toBe('a');
  });

  it('is refused without the read tier', async () => {
    await writeFile(path.join(world.workspace, 'a.md'), 'x');
    const result = await callTool(
      readFileTool,
      { path: 'a.md' },
      contextFor(world.workspace, { grants: [] }),
    );
    expect(outcome(result)).toBe('permission.denied');
  });
});

describe('formatBytes', () => {
  it('uses bytes below 1 KiB and binary units above', () => {
    expect(formatBytes(812)).toBe('812 bytes');
    expect(formatBytes(1_536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB');
  });
});
