import { describe, expect, it } from 'vitest';
import {
  BUILTIN_TOOL_TIERS,
  builtinTool,
  builtinToolNames,
  builtinTools,
  createBuiltinRegistry,
  requiredTiers,
} from '../../src/tools/catalogue.js';
import { contextFor } from './harness.js';

describe('catalogue', () => {
  it('builds every built-in tool with the tiers the catalogue declares', () => {
    const tools = builtinTools();
    expect(tools.map((tool) => tool.name)).toEqual([...builtinToolNames]);
    for (const tool of tools) {
      expect(tool.tiers).toEqual(BUILTIN_TOOL_TIERS[tool.name as keyof typeof BUILTIN_TOOL_TIERS]);
      expect(tool.jsonSchema).toMatchObject({ type: 'object' });
    }
  });

  it('finds one tool by name and names the known ones for an unknown name', () => {
    expect(builtinTool('fetch_url').name).toBe('fetch_url');
    expect(() => builtinTool('web_serch')).toThrow(/Built-in tools: read_file, list_dir/);
  });

  it('computes the tiers a tool list needs in canonical order', () => {
    expect(
      requiredTiers(
        builtinTools().filter((tool) => ['fetch_url', 'read_file', 'python'].includes(tool.name)),
      ),
    ).toEqual(['read', 'exec', 'network']);
    expect(requiredTiers([])).toEqual([]);
  });

  it('narrows the registry to a role and answers a call outside it as not allowed', async () => {
    const registry = createBuiltinRegistry({ names: ['read_file', 'list_dir'] });
    expect(registry.names).toEqual(['read_file', 'list_dir']);
    const result = await registry.call(
      { id: '1', name: 'shell', arguments: {}, raw: '{"program":"ls"}' },
      contextFor('/nonexistent'),
    );
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.not_allowed' } });
  });
});
