import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TroupeError } from '../../src/errors.js';
import type { ToolCall } from '../../src/model/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool, type ToolContext } from '../../src/tools/tool.js';

const context: ToolContext = {
  signal: new AbortController().signal,
  runId: 'run',
  agentId: 'agent',
  workspace: '/tmp',
  grants: ['read'],
};

function toolCall(name: string, raw: string): ToolCall {
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {}
  return { id: 'c1', name, arguments: parsed, raw };
}

const received: unknown[] = [];
const typed = defineTool({
  name: 'typed',
  description: 'Takes one of each kind.',
  parameters: z.object({
    count: z.number().optional(),
    label: z.string().optional(),
    flag: z.boolean().optional(),
    options: z.object({ depth: z.number() }).optional(),
    tags: z.array(z.string()).optional(),
  }),
  execute: (input) => {
    received.push(input);
    return input;
  },
});
const writer = defineTool({
  name: 'write',
  description: 'Needs write.',
  parameters: z.object({}),
  tiers: ['write'],
  execute: () => 'wrote',
});
const thrower = defineTool({
  name: 'boom',
  description: 'Throws.',
  parameters: z.object({}),
  execute: () => {
    throw new TroupeError(
      'sandbox.escape',
      'Path leaves the workspace: ../x. Use a path inside it.',
    );
  },
});
const big = defineTool({
  name: 'big',
  description: 'Returns a lot.',
  parameters: z.object({}),
  execute: () => `${'a'.repeat(5_000)}${'z'.repeat(5_000)}`,
});

describe('ToolRegistry', () => {
  const registry = new ToolRegistry([typed, writer, thrower, big], { maxResultChars: 1_000 });

  it('returns an unknown-tool result naming the available tools when the tool does not exist', async () => {
    const result = await registry.call(toolCall('nope', '{}'), context);
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.unknown' } });
    expect(result.content).toContain('Available tools: typed, write, boom, big');
  });

  it('returns not_allowed, without running it, when the tool is outside a narrowed set', async () => {
    const narrowed = registry.narrow(['typed']);
    const result = await narrowed.call(toolCall('write', '{}'), context);
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.not_allowed' } });
    expect(result.content).toContain('not in your tool set');
    expect(narrowed.names).toEqual(['typed']);
  });

  it('throws usage.unknown_tool when narrowing to a name it does not have', () => {
    expect(() => registry.narrow(['typed', 'ghost'])).toThrow(/Unknown tool "ghost"/);
  });

  it('returns invalid_json with the expected schema when arguments are not JSON', async () => {
    const result = await registry.call(toolCall('typed', '{"count": 5,'), context);
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.invalid_json' } });
    expect(result.content).toContain('not valid JSON');
    expect(result.content).toContain('"count"');
  });

  it('returns invalid_input with the path and a fix-it hint when the schema rejects the arguments', async () => {
    const result = await registry.call(toolCall('typed', '{"count": "many"}'), context);
    expect(result).toMatchObject({ ok: false, error: { code: 'tool.invalid_input' } });
    expect(result.content).toContain('count');
    expect(result.content).toContain('call typed again');
  });

  it('returns permission.denied naming the tier and the flag when the run did not grant it', async () => {
    const result = await registry.call(toolCall('write', '{}'), context);
    expect(result).toMatchObject({ ok: false, error: { code: 'permission.denied' } });
    expect(result.content).toContain('--allow write');
  });

  it('keeps the TroupeError code and message when the tool throws one', async () => {
    const result = await registry.call(toolCall('boom', '{}'), context);
    expect(result).toEqual({
      ok: false,
      content: 'Error: Path leaves the workspace: ../x. Use a path inside it.',
      error: {
        code: 'sandbox.escape',
        message: 'Path leaves the workspace: ../x. Use a path inside it.',
      },
    });
  });

  it('returns cancelled without running the tool when the signal already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await registry.call(toolCall('typed', '{}'), {
      ...context,
      signal: controller.signal,
    });
    expect(result).toMatchObject({ ok: false, error: { code: 'cancelled' } });
  });

  it('treats empty arguments as an empty object', async () => {
    const result = await registry.call(toolCall('typed', ''), context);
    expect(result).toEqual({ ok: true, content: '{}' });
  });

  it.each([
    ['a numeric string for a number', '{"count": "5"}', { count: 5 }],
    ['a number for a string', '{"label": 5}', { label: '5' }],
    ['a boolean for a string', '{"label": true}', { label: 'true' }],
    ['"true" for a boolean', '{"flag": "true"}', { flag: true }],
    [
      'a JSON string holding the expected object',
      '{"options": "{\\"depth\\": \\"2\\"}"}',
      { options: { depth: 2 } },
    ],
    ['a JSON string holding the expected array', '{"tags": "[\\"a\\", 3]"}', { tags: ['a', '3'] }],
    ['a JSON string holding the whole arguments object', '"{\\"count\\": 7}"', { count: 7 }],
  ])('coerces %s before validating', async (_name, raw, expected) => {
    const result = await registry.call(toolCall('typed', raw), context);
    expect(result.ok).toBe(true);
    expect(JSON.parse(result.content)).toEqual(expected);
  });

  it('does not coerce what is not an obvious mistake', async () => {
    const result = await registry.call(toolCall('typed', '{"count": "five"}'), context);
    expect(result.ok).toBe(false);
  });

  it('truncates long results keeping head and tail with a marker', async () => {
    const result = await registry.call(toolCall('big', '{}'), context);
    expect(result.ok).toBe(true);
    expect(result.content.length).toBeLessThanOrEqual(1_000);
    expect(result.content.startsWith('aaaa')).toBe(true);
    expect(result.content.endsWith('zzzz')).toBe(true);
    expect(result.content).toContain('truncated 9,000 of 10,000 characters');
  });

  it('gives the model JSON Schemas of type object', () => {
    const [schema] = registry.narrow(['typed']).schemas();
    expect(schema).toMatchObject({ name: 'typed', parameters: { type: 'object' } });
    expect(schema?.parameters).not.toHaveProperty('$schema');
  });

  it('refuses duplicate tool names at construction', () => {
    expect(() => new ToolRegistry([typed, typed])).toThrow(/unique/);
  });
});

describe('defineTool', () => {
  it.each(['has space', 'dot.name', '', 'x'.repeat(65), 'ünïcode'])(
    'rejects the invalid name %j at definition',
    (name) => {
      expect(() =>
        defineTool({ name, description: 'd', parameters: z.object({}), execute: () => '' }),
      ).toThrow(/Invalid tool name/);
    },
  );

  it('rejects parameters that are not a zod object', () => {
    expect(() =>
      defineTool({
        name: 'x',
        description: 'd',
        parameters: z.string() as unknown as z.ZodObject,
        execute: () => '',
      }),
    ).toThrow(/must be a zod object/);
  });
});
