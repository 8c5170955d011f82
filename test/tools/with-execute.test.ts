import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AnyTool, defineTool, withExecute } from '../../src/tools/tool.js';

describe('withExecute', () => {
  it('replaces execute and leaves the JSON Schema to be made on first read', async () => {
    const tool = defineTool({
      name: 'add',
      description: 'adds',
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => a + b,
    });
    // A tool whose schema getter counts its reads, as defineTool's does its conversions.
    let reads = 0;
    const counted = Object.defineProperty({ ...tool }, 'jsonSchema', {
      get: () => {
        reads += 1;
        return tool.jsonSchema;
      },
      enumerable: true,
      configurable: true,
    }) as AnyTool;
    const wrapped = withExecute(counted, async () => 'wrapped');
    expect(reads).toBe(0);
    expect(await wrapped.execute({ a: 1, b: 2 }, {} as never)).toBe('wrapped');
    expect(wrapped.name).toBe('add');
    expect(wrapped.jsonSchema).toEqual(tool.jsonSchema);
    expect(reads).toBe(1);
    // Wrapping twice still reads nothing until asked.
    withExecute(wrapped, async () => 'again');
    expect(reads).toBe(1);
  });
});
