import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { EventOf } from '../../src/events/schema.js';
import { defineTool, type Tool } from '../../src/tools/tool.js';

describe('defineTool', () => {
  it('infers the input type from the zod parameters', () => {
    const tool = defineTool({
      name: 'add',
      description: 'adds',
      parameters: z.object({ a: z.number(), b: z.number().default(1) }),
      execute: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ a: number; b: number }>();
        return input.a + input.b;
      },
    });
    expectTypeOf(tool).toEqualTypeOf<Tool<{ a: number; b: number }, number>>();
  });
});

describe('EventOf', () => {
  it('narrows to the payload of one event type', () => {
    expectTypeOf<EventOf<'tool.call'>['name']>().toEqualTypeOf<string>();
    expectTypeOf<EventOf<'agent.finished'>['status']>().toEqualTypeOf<
      'completed' | 'failed' | 'cancelled' | 'timed_out'
    >();
  });
});
