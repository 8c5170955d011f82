import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { McpHub } from '../../src/mcp/hub.js';
import { probeSandbox } from '../../src/tools/os-sandbox.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import type { PermissionTier, ToolContext } from '../../src/tools/tool.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/fixture-server.mjs', import.meta.url));
const grants: PermissionTier[] = ['read', 'exec', 'network'];
const sandboxed = (await probeSandbox()).available;

const hubs: McpHub[] = [];
function hub(): McpHub {
  const made = new McpHub({
    servers: { fx: { command: process.execPath, args: [FIXTURE] } },
    workspace: process.cwd(),
    grants,
    env: process.env,
    unsafeNoSandbox: !sandboxed,
    restart: { backoffMs: 10, maxRestarts: 2 },
  });
  hubs.push(made);
  return made;
}

function context(): ToolContext {
  return {
    signal: new AbortController().signal,
    runId: 'run-1',
    agentId: 'tester-1',
    workspace: process.cwd(),
    grants,
  };
}

function call(name: string, args: Record<string, unknown> = {}) {
  return { id: `call-${name}`, name, arguments: args, raw: JSON.stringify(args) };
}

afterEach(async () => {
  await Promise.all(hubs.splice(0).map((made) => made.close()));
});

describe('MCP tools through the registry', () => {
  it('lists a stdio server’s tools as <server>__<tool>, narrowed, and calls them', async () => {
    const mcp = hub();
    const access = [{ server: 'fx', tools: ['echo', 'fail'] }];
    await mcp.ensure(access);
    const tools = mcp.registry(new ToolRegistry(), access);
    expect(tools.names).toEqual(['fx__echo', 'fx__fail']);
    const echo = tools.schemas().find((schema) => schema.name === 'fx__echo');
    expect(echo?.parameters).toMatchObject({ type: 'object', required: ['text'] });

    // "2" is coerced to the number the server's schema asks for.
    expect(await tools.call(call('fx__echo', { text: 'ab', times: '2' }), context())).toEqual({
      ok: true,
      content: 'echo: abab',
    });
    const invalid = await tools.call(call('fx__echo', { times: 1 }), context());
    expect(invalid).toMatchObject({ ok: false, error: { code: 'tool.invalid_input' } });
    const failed = await tools.call(call('fx__fail'), context());
    expect(failed).toMatchObject({ ok: false, error: { code: 'tool.failed' } });
    expect(failed.content).toContain('the fixture failed on purpose');
    // Outside the narrowed set: not there at all.
    expect(await tools.call(call('fx__pid'), context())).toMatchObject({
      ok: false,
      error: { code: 'tool.unknown' },
    });
  });

  it('refuses a call when the run did not grant the server’s tiers', async () => {
    const mcp = hub();
    const access = [{ server: 'fx' }];
    await mcp.ensure(access);
    const tools = mcp.registry(new ToolRegistry(), access);
    const result = await tools.call(call('fx__pid'), { ...context(), grants: ['read'] });
    expect(result).toMatchObject({ ok: false, error: { code: 'permission.denied' } });
    expect(result.content).toContain('--allow exec,network');
  });

  it('restarts a crashed server; the call in flight gets an error result', async () => {
    const mcp = hub();
    const access = [{ server: 'fx' }];
    await mcp.ensure(access);
    const tools = mcp.registry(new ToolRegistry(), access);
    const first = await tools.call(call('fx__pid'), context());
    expect(first.ok).toBe(true);

    const crashed = await tools.call(call('fx__crash'), context());
    expect(crashed).toMatchObject({ ok: false, error: { code: 'mcp.unavailable' } });
    expect(crashed.content).toContain('being restarted');

    // The next call waits for the restart and reaches a new process.
    const second = await tools.call(call('fx__pid'), context());
    expect(second.ok).toBe(true);
    expect(second.content).not.toBe(first.content);
  });

  it('gives a server up after too many restarts', async () => {
    const mcp = hub();
    const access = [{ server: 'fx' }];
    await mcp.ensure(access);
    const tools = mcp.registry(new ToolRegistry(), access);
    for (let crash = 0; crash < 3; crash += 1) {
      expect((await tools.call(call('fx__crash'), context())).ok).toBe(false);
    }
    const after = await tools.call(call('fx__pid'), context());
    expect(after).toMatchObject({ ok: false, error: { code: 'mcp.unavailable' } });
    expect(after.content).toContain('given up');
  });

  it('picks up tools/list_changed', async () => {
    const mcp = hub();
    const access = [{ server: 'fx' }];
    await mcp.ensure(access);
    const tools = mcp.registry(new ToolRegistry(), access);
    expect(tools.has('fx__hello')).toBe(false);
    const changed = new Promise<void>((resolve) => {
      mcp.connection('fx').onToolsChanged(resolve);
    });
    expect((await tools.call(call('fx__add_tool', { name: 'hello' }), context())).ok).toBe(true);
    await changed;
    expect(tools.names).toContain('fx__hello');
    expect(await tools.call(call('fx__hello'), context())).toEqual({
      ok: true,
      content: 'hello here',
    });
  });

  it('fails clearly when a server cannot start', async () => {
    const mcp = new McpHub({
      servers: { gone: { command: 'no-such-mcp-server-here' } },
      workspace: process.cwd(),
      grants,
      env: process.env,
      unsafeNoSandbox: true,
    });
    hubs.push(mcp);
    await expect(mcp.ensure([{ server: 'gone' }])).rejects.toThrow(/not found on PATH/);
  });
});
