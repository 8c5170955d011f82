import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { EventOf } from '../../src/events/schema.js';
import { defineRole, type RoleToolName, userTool } from '../../src/roles/role.js';
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

describe('defineRole tools', () => {
  const searchTickets = defineTool({
    name: 'search_tickets',
    description: 'searches',
    parameters: z.object({ query: z.string() }),
    execute: ({ query }) => query,
  });

  it('takes built-in names, tool objects and userTool names', () => {
    const role = defineRole({
      name: 'triager',
      description: 't',
      system: 't',
      tools: ['read_file', searchTickets, userTool('close_ticket')],
      requiredTools: ['read_file'],
    });
    expectTypeOf(role.tools).toEqualTypeOf<readonly RoleToolName[]>();
    // A defined role can be the base of another.
    defineRole({ ...role, name: 'triager2' });
  });

  it('does not compile a typo of a built-in tool name', () => {
    defineRole({
      name: 'researcher2',
      description: 'r',
      system: 'r',
      // @ts-expect-error: 'read_fiel' is no built-in tool; a user tool goes through userTool().
      tools: ['read_fiel'],
    });
    defineRole({
      name: 'researcher3',
      description: 'r',
      system: 'r',
      tools: ['read_file'],
      // @ts-expect-error: the same check for requiredTools.
      requiredTools: ['fetch_ur'],
    });
  });
});
