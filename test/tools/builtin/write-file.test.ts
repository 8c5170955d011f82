import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type AtomicWriteIo,
  nodeAtomicWriteIo,
  writeFileAtomic,
} from '../../../src/tools/builtin/atomic-write.js';
import { createWriteFileTool, writeFileTool } from '../../../src/tools/builtin/write-file.js';
import { callTool, contextFor, createWorld, outcome, snapshot, type World } from '../harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
});
afterEach(() => world.cleanup());

describe('write_file', () => {
  it('creates a file and its parent folders and reports the bytes written', async () => {
    const result = await callTool(
      writeFileTool,
      { path: 'notes/day/1.md', content: 'héllo' },
      contextFor(world.workspace),
    );
    expect(result).toEqual({ ok: true, content: 'Wrote 6 bytes to notes/day/1.md.' });
    expect(await readFile(path.join(world.workspace, 'notes/day/1.md'), 'utf8')).toBe('héllo');
  });

  it('replaces a file and keeps the previous version as .bak, mode included', async () => {
    const file = path.join(world.workspace, 'a.md');
    await writeFile(file, 'old', { mode: 0o600 });
    const result = await callTool(
      writeFileTool,
      { path: 'a.md', content: 'new' },
      contextFor(world.workspace),
    );
    expect(result.content).toBe('Wrote 3 bytes to a.md (previous version kept as a.md.bak).');
    expect(await readFile(file, 'utf8')).toBe('new');
    expect(await readFile(`${file}.bak`, 'utf8')).toBe('old');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(world.workspace)).toEqual(['a.md', 'a.md.bak']);
  });

  it('writes relative to the output folder when one is set, creating it', async () => {
    const outputDir = path.join(world.base, 'runs', 'run-1');
    const result = await callTool(
      writeFileTool,
      { path: 'report.md', content: '# Report' },
      contextFor(world.workspace, { outputDir }),
    );
    expect(result.content).toBe('Wrote 8 bytes to report.md in the output folder.');
    expect(await readFile(path.join(outputDir, 'report.md'), 'utf8')).toBe('# Report');
    expect(await readdir(world.workspace)).toEqual([]);
  });

  it('refuses to leave the output folder, even into the workspace', async () => {
    const outputDir = path.join(world.workspace, 'out');
    const context = contextFor(world.workspace, { outputDir });
    expect(outcome(await callTool(writeFileTool, { path: '../a.md', content: 'x' }, context))).toBe(
      'sandbox.escape',
    );
    expect(
      outcome(
        await callTool(
          writeFileTool,
          { path: path.join(world.workspace, 'a.md'), content: 'x' },
          context,
        ),
      ),
    ).toBe('sandbox.escape');
    expect(await readdir(world.workspace)).toEqual(['out']);
  });

  it('refuses to replace a folder', async () => {
    await mkdir(path.join(world.workspace, 'docs'));
    const result = await callTool(
      writeFileTool,
      { path: 'docs', content: 'x' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.refused');
  });

  it('refuses a path ending with a separator', async () => {
    const result = await callTool(
      writeFileTool,
      { path: 'docs/', content: 'x' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.refused');
  });

  it('replaces a planted .bak symlink instead of writing through it', async () => {
    await writeFile(path.join(world.workspace, 'a.md'), 'old');
    await writeFile(path.join(world.outside, 'target'), 'outside');
    await symlink(path.join(world.outside, 'target'), path.join(world.workspace, 'a.md.bak'));
    await callTool(writeFileTool, { path: 'a.md', content: 'new' }, contextFor(world.workspace));
    expect(await readFile(path.join(world.outside, 'target'), 'utf8')).toBe('outside');
    expect(await readFile(path.join(world.workspace, 'a.md.bak'), 'utf8')).toBe('old');
  });

  it('asks for approval when writes are not confined, and stops on a no', async () => {
    const approve = vi.fn(async () => false);
    const result = await callTool(
      writeFileTool,
      { path: 'a.md', content: 'abc' },
      contextFor(world.workspace, { approve }),
    );
    expect(approve).toHaveBeenCalledWith({
      tool: 'write_file',
      agentId: 'agent-test',
      summary: 'write a.md (3 bytes)',
      detail: 'abc',
    });
    expect(outcome(result)).toBe('tool.refused');
    expect(result.content).toContain('The user did not approve');
    expect(await readdir(world.workspace)).toEqual([]);
  });

  it('writes after a yes', async () => {
    const result = await callTool(
      writeFileTool,
      { path: 'a.md', content: 'abc' },
      contextFor(world.workspace, { approve: async () => true }),
    );
    expect(result.ok).toBe(true);
  });

  it('does not ask for approval inside the output folder', async () => {
    const approve = vi.fn(async () => false);
    const outputDir = path.join(world.base, 'out');
    const result = await callTool(
      writeFileTool,
      { path: 'report.md', content: 'x' },
      contextFor(world.workspace, { approve, outputDir }),
    );
    expect(result.ok).toBe(true);
    expect(approve).not.toHaveBeenCalled();
  });

  it('keeps the old file intact when the write fails half-way', async () => {
    const file = path.join(world.workspace, 'a.md');
    await writeFile(file, 'old content');
    const failing: AtomicWriteIo = {
      ...nodeAtomicWriteIo,
      async writeNew(target, data) {
        await writeFile(target, data.subarray(0, Math.floor(data.length / 2)), { flag: 'wx' });
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      },
    };
    const before = await snapshot(world.workspace);
    const tool = createWriteFileTool({ io: failing });
    const result = await callTool(
      tool,
      { path: 'a.md', content: 'new content that is long' },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.failed');
    expect(result.content).toContain('ENOSPC');
    expect(result.content).toContain('The previous version is unchanged.');
    expect(await snapshot(world.workspace)).toEqual(before);
  });

  it('keeps the old file intact when the final rename fails', async () => {
    const file = path.join(world.workspace, 'a.md');
    await writeFile(file, 'old content');
    const failing: AtomicWriteIo = {
      ...nodeAtomicWriteIo,
      rename: async (from, to) => {
        if (to === file) throw new Error('EIO: i/o error');
        await nodeAtomicWriteIo.rename(from, to);
      },
    };
    await expect(writeFileAtomic(file, 'new', failing)).rejects.toThrow('EIO');
    expect(await readFile(file, 'utf8')).toBe('old content');
    expect((await readdir(world.workspace)).sort()).toEqual(['a.md', 'a.md.bak']);
  });
});
