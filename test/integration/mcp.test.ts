import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { McpServers } from '../../src/mcp/config.js';
import type { ModelSpec } from '../../src/model/model.js';
import type { ScriptStep } from '../../src/model/script.js';
import { defineRole } from '../../src/roles/role.js';
import { probeSandbox } from '../../src/tools/os-sandbox.js';
import { answer, call } from '../helpers/scripts.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from './helpers.js';

const modules = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/', import.meta.url),
);
const EVERYTHING = join(modules, 'server-everything/dist/index.js');
const FILESYSTEM = join(modules, 'server-filesystem/dist/index.js');
const FIXTURE = fileURLToPath(new URL('../fixtures/mcp/fixture-server.mjs', import.meta.url));
const unsafeNoSandbox = !(await probeSandbox()).available;

function scripted(...steps: ScriptStep[]): ModelSpec {
  return { provider: 'scripted', script: { steps } };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        resolve(typeof address === 'object' && address !== null ? address.port : 0),
      );
    });
  });
}

let workspace: string;
let http: ChildProcess | undefined;
let servers: McpServers;

beforeAll(async () => {
  workspace = realpathSync(mkdtempSync(join(tmpdir(), 'troupe-mcp-')));
  writeFileSync(join(workspace, 'notes.txt'), 'the notes say: blue whales\n');
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  http = child;
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${seen}`)));
  });
  servers = {
    fs: { command: process.execPath, args: [FILESYSTEM, workspace] },
    everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
    web: { url: `http://127.0.0.1:${port}/mcp` },
    fx: { command: process.execPath, args: [FIXTURE] },
  };
});

afterAll(() => {
  http?.kill();
  rmSync(workspace, { recursive: true, force: true });
});

afterEach(closeRuntimes);

function runtimeWith(
  roles: Parameters<typeof makeRuntime>[0]['roles'],
  grants = ['read', 'exec', 'network'] as const,
) {
  return makeRuntime({
    model: scripted(answer('unused')),
    roles,
    workspace,
    grants: [...grants],
    mcp: servers,
    threads: 1,
    unsafeNoSandbox,
  });
}

function resultsOf(events: ReturnType<typeof makeRuntime>['events'], agentId: string) {
  return ofType(events, 'tool.result').filter((event) => event.agentId === agentId);
}

describe('MCP servers as tool sources for roles', () => {
  it('gives each role the tools it names from real servers over stdio and Streamable HTTP', async () => {
    const filer = defineRole({
      name: 'filer',
      description: 'reads files through MCP',
      system: 'Read.',
      mcp: [{ server: 'fs', tools: ['read_text_file', 'list_directory'] }],
      model: scripted(
        call('fs__read_text_file', { path: join(workspace, 'notes.txt') }),
        call('fs__write_file', { path: join(workspace, 'x.txt'), content: 'no' }),
        answer('read it'),
      ),
    });
    const adder = defineRole({
      name: 'adder',
      description: 'adds through MCP',
      system: 'Add.',
      mcp: [{ server: 'everything', tools: ['get-sum'] }],
      model: scripted(call('everything__get-sum', { a: 2, b: '3' }), answer('added')),
    });
    const webber = defineRole({
      name: 'webber',
      description: 'echoes over HTTP',
      system: 'Echo.',
      mcp: [{ server: 'web', tools: ['echo'] }],
      model: scripted(call('web__echo', { message: 'over http' }), answer('echoed')),
    });
    const outsider = defineRole({
      name: 'outsider',
      description: 'has no MCP server',
      system: 'Try.',
      model: scripted(call('everything__echo', { message: 'sneaky' }), answer('refused')),
    });
    const { runtime, events } = runtimeWith([filer, adder, webber, outsider]);
    runtime.registerRoot('coordinator', { model: runtime.defaultModel, task: 'mcp' });
    const refs = ['filer', 'adder', 'webber', 'outsider'].map((role) =>
      runtime.spawn(role, 'go', { parent: 'coordinator' }),
    );
    const results = await Promise.all(refs.map((ref) => ref.result));
    expect(results.map((result) => result.status)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
    ]);

    const [read, write] = resultsOf(events, 'filer-1');
    expect(read).toMatchObject({ name: 'fs__read_text_file', ok: true });
    expect(read?.content).toContain('blue whales');
    // Narrowed: write_file is the server's, but not this role's.
    expect(write).toMatchObject({ name: 'fs__write_file', ok: false });
    expect(resultsOf(events, 'adder-1')[0]).toMatchObject({
      ok: true,
      content: 'The sum of 2 and 3 is 5.',
    });
    expect(resultsOf(events, 'webber-1')[0]).toMatchObject({
      ok: true,
      content: 'Echo: over http',
    });
    expect(resultsOf(events, 'outsider-1')[0]).toMatchObject({ ok: false });
    expect(resultsOf(events, 'outsider-1')[0]?.content).toContain(
      'no tool named "everything__echo"',
    );

    // The model saw only the narrowed tools, with the servers' JSON Schemas.
    const requests = ofType(events, 'model.request');
    expect(requests.find((event) => event.agentId === 'adder-1')).toMatchObject({ tools: 1 });
    expectWellFormed(events, ['coordinator']);
  });

  it('restarts a server killed mid-run: the call in flight fails, the next one reaches a new process', async () => {
    const crasher = defineRole({
      name: 'crasher',
      description: 'crashes its server',
      system: 'Crash.',
      mcp: [{ server: 'fx' }],
      model: scripted(call('fx__pid'), call('fx__crash'), call('fx__pid'), answer('survived')),
    });
    const { runtime, events } = runtimeWith([crasher]);
    runtime.registerRoot('coordinator', { model: runtime.defaultModel, task: 'crash' });
    const result = await runtime.spawn('crasher', 'go', { parent: 'coordinator' }).result;
    expect(result.status).toBe('completed');
    const [before, crashed, after] = resultsOf(events, 'crasher-1');
    expect(before?.ok).toBe(true);
    expect(crashed).toMatchObject({ ok: false });
    expect(crashed?.content).toContain('being restarted');
    expect(after?.ok).toBe(true);
    expect(after?.content).not.toBe(before?.content);
  });

  it('starts a stdio server once per worker host, not per actor', async () => {
    const pidder = defineRole({
      name: 'pidder',
      description: 'asks which process answers',
      system: 'Ask.',
      mcp: [{ server: 'fx', tools: ['pid'] }],
      model: scripted(call('fx__pid'), answer('asked')),
    });
    const { runtime, events } = runtimeWith([pidder]);
    runtime.registerRoot('coordinator', { model: runtime.defaultModel, task: 'pids' });
    const refs = [1, 2, 3].map(() => runtime.spawn('pidder', 'go', { parent: 'coordinator' }));
    const results = await Promise.all(refs.map((ref) => ref.result));
    expect(results.every((result) => result.status === 'completed')).toBe(true);
    const answers = ofType(events, 'tool.result').map((event) => event.content);
    expect(answers).toHaveLength(3);
    expect(new Set(answers).size).toBe(1);
  });

  it('refuses a role whose server needs an ungranted tier when the Runtime is built, before any model call, with the --allow fix', () => {
    const adder = defineRole({
      name: 'adder',
      description: 'adds through MCP',
      system: 'Add.',
      mcp: [{ server: 'everything' }],
      model: scripted(answer('never')),
    });
    expect(() =>
      runtimeWith([adder], ['read'] as unknown as readonly ['read', 'exec', 'network']),
    ).toThrow(
      expect.objectContaining({
        code: 'usage.invalid_role',
        message: expect.stringContaining('--allow read,exec,network'),
      }),
    );
  });
});
