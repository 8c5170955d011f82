import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { probeSandbox } from '../../src/tools/os-sandbox.js';
import {
  type MockOpenAIServer,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { argv, fakeIo } from './io.js';

const EVERYTHING = fileURLToPath(
  new URL(
    '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js',
    import.meta.url,
  ),
);
const sandboxFlags = (await probeSandbox()).available ? [] : ['--unsafe-no-sandbox'];

let server: MockOpenAIServer;
let dir: string;

beforeEach(async () => {
  server = await startMockOpenAIServer();
  dir = mkdtempSync(join(tmpdir(), 'troupe-cli-mcp-'));
});

afterEach(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
  expect(server.violations).toEqual([]);
});

function writeConfig(troupe?: Record<string, unknown>): string {
  const path = join(dir, 'mcp.json');
  const everything = {
    command: process.execPath,
    args: [EVERYTHING, 'stdio'],
    ...(troupe === undefined ? {} : { troupe }),
  };
  writeFileSync(path, JSON.stringify({ mcpServers: { everything } }));
  return path;
}

function toolNames(body: unknown): string[] {
  const tools = (body as { tools?: Array<{ function: { name: string } }> }).tools ?? [];
  return tools.map((tool) => tool.function.name);
}

function toolMessages(body: unknown): string[] {
  const messages = (body as { messages: Array<{ role: string; content: unknown }> }).messages;
  return messages
    .filter((message) => message.role === 'tool')
    .map((message) => String(message.content));
}

describe('--mcp on the CLI, with a local HTTP model server', () => {
  it('troupe chat gets the server’s tools and a call round-trips', async () => {
    server.enqueue(
      openaiReply({ toolCalls: [{ name: 'everything__get-sum', arguments: { a: 2, b: 3 } }] }),
      openaiReply({ content: 'It is 5.' }),
    );
    const io = fakeIo({
      env: { OPENAI_API_KEY: server.apiKey, PATH: process.env['PATH'] },
      cwd: dir,
      stdinLines: ['add 2 and 3'],
    });
    const code = await runCli(
      argv(
        'chat',
        '--provider',
        'openai',
        '--base-url',
        server.baseURL,
        '--workspace',
        dir,
        '--allow',
        'read,exec,network',
        '--mcp',
        writeConfig(),
        ...sandboxFlags,
      ),
      io,
    );
    expect(code).toBe(0);
    expect(io.stdout.text).toContain('It is 5.');
    const [first, second] = server.requests;
    expect(toolNames(first?.body)).toContain('everything__get-sum');
    expect(toolNames(first?.body)).toContain('read_file');
    expect(toolMessages(second?.body)).toEqual(['The sum of 2 and 3 is 5.']);
  });

  it('troupe chat leaves out a server the grants do not cover, saying which --allow adds it', async () => {
    server.enqueue(openaiReply({ content: 'hello' }));
    const io = fakeIo({ env: { OPENAI_API_KEY: server.apiKey }, cwd: dir, stdinLines: ['hi'] });
    const code = await runCli(
      argv(
        'chat',
        '--provider',
        'openai',
        '--base-url',
        server.baseURL,
        '--workspace',
        dir,
        '--mcp',
        writeConfig(),
      ),
      io,
    );
    expect(code).toBe(0);
    expect(io.stderr.text).toContain('MCP server "everything" left out');
    expect(io.stderr.text).toContain('--allow read,exec,network');
    expect(toolNames(server.requests[0]?.body)).not.toContain('everything__get-sum');
  });

  it('troupe run gives the server to the roles its config names', async () => {
    server.enqueue(
      openaiReply({
        toolCalls: [
          { name: 'delegate', arguments: { tasks: [{ role: 'researcher', task: 'add 2 and 3' }] } },
        ],
      }),
      openaiReply({ toolCalls: [{ name: 'everything__get-sum', arguments: { a: 2, b: 3 } }] }),
      openaiReply({ content: 'The sum is 5.' }),
      openaiReply({ content: 'Final: 5' }),
    );
    const io = fakeIo({
      env: { OPENAI_API_KEY: server.apiKey, PATH: process.env['PATH'] },
      cwd: dir,
    });
    const code = await runCli(
      argv(
        'run',
        'add 2 and 3',
        '--provider',
        'openai',
        '--base-url',
        server.baseURL,
        '--workspace',
        dir,
        '--out',
        join(dir, 'runs'),
        '--threads',
        '1',
        '--quiet',
        '--allow',
        'read,exec,network',
        '--mcp',
        writeConfig({ roles: ['researcher'] }),
        ...sandboxFlags,
      ),
      io,
    );
    expect(io.stderr.text).toBe('');
    expect(code).toBe(0);
    const researcher = server.requests[1]?.body;
    expect(toolNames(researcher)).toContain('everything__get-sum');
    expect(toolMessages(server.requests[2]?.body)).toEqual(['The sum of 2 and 3 is 5.']);
    // The coordinator (main thread) is not given MCP tools.
    expect(toolNames(server.requests[0]?.body)).not.toContain('everything__get-sum');
    const runs = join(dir, 'runs');
    const [runId] = readdirSync(runs);
    const trace = readFileSync(join(runs, runId as string, 'trace.jsonl'), 'utf8');
    expect(trace).toContain('"name":"everything__get-sum"');
  });

  it('troupe run warns about a server no role names', async () => {
    server.enqueue(openaiReply({ content: 'nothing to do' }));
    const io = fakeIo({ env: { OPENAI_API_KEY: server.apiKey }, cwd: dir });
    const code = await runCli(
      argv(
        'run',
        'hi',
        '--provider',
        'openai',
        '--base-url',
        server.baseURL,
        '--workspace',
        dir,
        '--out',
        join(dir, 'runs'),
        '--threads',
        '1',
        '--quiet',
        '--mcp',
        writeConfig(),
      ),
      io,
    );
    expect(code).toBe(0);
    expect(io.stderr.text).toContain('MCP server "everything" is named by no role');
  });

  it('a bad config is a usage error that says what is wrong', async () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ mcpServers: { 'bad name!': { command: 'x' } } }));
    const io = fakeIo({ env: {}, cwd: dir });
    const code = await runCli(argv('run', 'hi', '--provider', 'offline', '--mcp', path), io);
    expect(code).toBe(2);
    expect(io.stderr.text).toContain('server name "bad name!" cannot prefix tool names');
  });
});
