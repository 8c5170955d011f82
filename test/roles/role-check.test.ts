import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isTroupeError } from '../../src/errors.js';
import { runJob } from '../../src/job/coordinator.js';
import { defineChannel } from '../../src/roles/channel.js';
import { type AnyRole, defineRole, userTool } from '../../src/roles/role.js';
import { roleProblems } from '../../src/roles/role-check.js';
import { RoleRegistry } from '../../src/roles/role-registry.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { PermissionTier } from '../../src/tools/tool.js';
import { type MockOpenAIServer, startMockOpenAIServer } from '../helpers/mock-openai-server.js';

// Role mistakes fail before spending: when the roles load (the CLI) and
// when a Runtime is built (the library), never at the first spawn, after
// the coordinator has paid for its turns.

const fixtures = new URL('../fixtures/tools/', import.meta.url).pathname;

function problems(roles: AnyRole[], grants: PermissionTier[] = ['read', 'network']): string[] {
  return roleProblems(new RoleRegistry(roles, grants).all(), {
    grants,
    userTools: new Map(),
    env: { OPENAI_API_KEY: 'sk' },
    complete: true,
  });
}

function role(extra: Partial<Parameters<typeof defineRole>[0]>): AnyRole {
  return defineRole({ name: 'researcher2', description: 'r', system: 'r', ...extra });
}

describe('roleProblems', () => {
  it('finds none in the built-in roles, even with grants that drop their optional tools', () => {
    expect(problems([])).toEqual([]);
    expect(problems([], ['read'])).toEqual([]);
  });

  it('names an unknown tool with the nearest known name', () => {
    const found = problems([role({ tools: [userTool('read_fiel')] })]);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('Role researcher2 names tool `read_fiel`');
    expect(found[0]).toContain('did you mean `read_file`?');
  });

  it('gives the --allow fix for a required tool whose tier is not granted', () => {
    const coder = role({ name: 'coder', tools: ['shell', 'read_file'], requiredTools: ['shell'] });
    const found = problems([coder], ['read']);
    expect(found).toEqual([expect.stringContaining('exec (for shell)')]);
    expect(found[0]).toContain('--allow read,exec');
    // Optional: the role adapts instead (its tool is dropped), which is no problem.
    expect(problems([role({ name: 'coder', tools: ['shell', 'read_file'] })], ['read'])).toEqual(
      [],
    );
  });

  it('names a channel no role publishes, a channel that is not one, and two schemas under one name', () => {
    const leads = defineChannel('leads', z.object({ title: z.string() }));
    const other = defineChannel('leads', z.object({ url: z.string() }));
    const typo = defineChannel('laeds', z.object({ title: z.string() }));
    const publisher = role({ name: 'finder', publishes: [leads] });
    const found = problems([
      publisher,
      role({ name: 'reader', subscribes: [typo] }),
      role({ name: 'mixer', subscribes: [other] }),
      role({ name: 'loose', subscribes: ['leads' as never] }),
    ]);
    expect(found).toEqual([
      expect.stringContaining('is defined twice with different schemas (roles finder and mixer)'),
      expect.stringContaining('Role loose: subscribes holds "leads", which is not a channel'),
      expect.stringContaining(
        'Role reader subscribes to channel "laeds", which no role publishes; did you mean "leads"?',
      ),
    ]);
  });

  it('names an invalid model spec and a model whose API key is not set', () => {
    const found = problems([
      role({ name: 'a', model: { provider: 'openai' } as never }),
      role({ name: 'b', model: { provider: 'anthropic', model: 'claude-x' } }),
      role({ name: 'c', model: { provider: 'openai', model: 'gpt-x' } }),
    ]);
    expect(found).toEqual([
      expect.stringMatching(/^Role a has an invalid model spec: .*model/),
      expect.stringContaining(
        'Role b uses the anthropic model claude-x, whose API key variable ANTHROPIC_API_KEY is not set',
      ),
    ]);
  });
});

describe('Runtime construction and runJob', () => {
  let server: MockOpenAIServer | undefined;
  let runtime: Runtime | undefined;
  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
    await server?.close();
    server = undefined;
  });

  function options(roles: AnyRole[], toolModules: string[] = []) {
    if (server === undefined) throw new Error('no server');
    return {
      model: { provider: 'openai' as const, model: 'mock', baseURL: server.baseURL },
      env: { OPENAI_API_KEY: server.apiKey },
      workspace: fixtures,
      grants: ['read'] as PermissionTier[],
      threads: 1,
      roles,
      ...(toolModules.length === 0 ? {} : { toolModules }),
    };
  }

  it('throws at construction for a typo in a built-in tool name, before any model call', async () => {
    server = await startMockOpenAIServer();
    let error: unknown;
    try {
      runtime = new Runtime(options([role({ tools: [userTool('read_fiel')] })]));
    } catch (caught) {
      error = caught;
    }
    expect(isTroupeError(error, 'usage.unknown_tool')).toBe(true);
    expect((error as Error).message).toContain('did you mean `read_file`?');
    expect(server.requests).toEqual([]);
  });

  it('throws at construction for an ungranted required tier, with the --allow fix', async () => {
    server = await startMockOpenAIServer();
    const coder = role({ name: 'coder', tools: ['python'], requiredTools: ['python'] });
    expect(() => new Runtime(options([coder]))).toThrow(/--allow read,exec/);
    expect(server.requests).toEqual([]);
  });

  it("with tool modules, runJob refuses a name no module has before the coordinator's first call", async () => {
    server = await startMockOpenAIServer();
    // The module's tool is count_words; the role names count_word.
    const counter = role({ name: 'counter', tools: [userTool('count_word')] });
    runtime = new Runtime(options([counter], [join(fixtures, 'words.mjs')]));
    const job = runJob({ task: 'Count the words.', runtime });
    await expect(job).rejects.toMatchObject({
      code: 'usage.unknown_tool',
      message: expect.stringContaining('did you mean `count_words`?'),
    });
    expect(server.requests).toEqual([]);
  });
});
