import { describe, expect, it } from 'vitest';
import { reportProgressTool } from '../../../src/tools/builtin/report-progress.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import type { ToolContext } from '../../../src/tools/tool.js';

const base: ToolContext = {
  signal: new AbortController().signal,
  runId: 'r',
  agentId: 'a',
  workspace: '/tmp',
  grants: [],
};
const call = (note: unknown) => ({
  id: 'c',
  name: 'report_progress',
  arguments: { note },
  raw: JSON.stringify({ note }),
});

describe('report_progress', () => {
  it('hands the note to the context and needs no tier', async () => {
    const notes: string[] = [];
    const registry = new ToolRegistry([reportProgressTool]);
    const result = await registry.call(call('read 3 of 5'), {
      ...base,
      progress: (n) => notes.push(n),
    });
    expect(result).toEqual({ ok: true, content: 'Progress reported.' });
    expect(notes).toEqual(['read 3 of 5']);
  });

  it('says nobody is watching when the context has no progress sink', async () => {
    const result = await new ToolRegistry([reportProgressTool]).call(call('x'), base);
    expect(result.content).toContain('nobody is watching');
  });

  it('refuses an empty note', async () => {
    const result = await new ToolRegistry([reportProgressTool]).call(call(''), base);
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.invalid_input' } });
  });
});
