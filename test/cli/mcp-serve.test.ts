import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../bin/troupe.js', import.meta.url));

let out: string;
let client: Client | undefined;

beforeEach(() => {
  out = mkdtempSync(join(tmpdir(), 'troupe-mcp-serve-'));
});

afterEach(async () => {
  await client?.close();
  client = undefined;
  rmSync(out, { recursive: true, force: true });
});

async function connect(env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      BIN,
      'mcp',
      '--provider',
      'offline',
      '--out',
      out,
      '--threads',
      '2',
      '--workspace',
      fileURLToPath(new URL('../../examples/corpus', import.meta.url)),
    ],
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stderr: 'pipe',
  });
  const made = new Client({ name: 'troupe-test', version: '1.0.0' });
  await made.connect(transport);
  client = made;
  return made;
}

interface Snapshot {
  run_id: string;
  status: string;
  answer?: string;
  report_path?: string;
  trace_path: string;
}

describe('troupe mcp, driven by the SDK client over stdio', () => {
  it('lists its tools, and run_job on the offline demo returns the answer with progress notifications', async () => {
    const mcp = await connect();
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'run_job',
      'run_status',
      'cancel_run',
      'list_roles',
    ]);

    const progress: string[] = [];
    const result = await mcp.callTool(
      {
        name: 'run_job',
        arguments: {
          task: 'Research the documents in the workspace, compare what they say and write a report.',
        },
      },
      undefined,
      { onprogress: (note) => progress.push(note.message ?? ''), timeout: 120_000 },
    );
    const snapshot = result.structuredContent as unknown as Snapshot;
    expect(result.isError).not.toBe(true);
    expect(snapshot.status).toBe('completed');
    expect(snapshot.answer).toBeTruthy();
    expect(snapshot.report_path).toMatch(/report\.md$/);
    expect(progress[0]).toBe(`run ${snapshot.run_id} started`);
    expect(progress).toContain('researcher-1 started');
    expect(progress.at(-1)).toMatch(/^run completed/);

    const status = await mcp.callTool({
      name: 'run_status',
      arguments: { run_id: snapshot.run_id },
    });
    expect((status.structuredContent as unknown as Snapshot).status).toBe('completed');
  });

  it('cancel_run stops a running job', async () => {
    // A slow offline model, so the run is surely still going when the cancel arrives.
    const mcp = await connect({ TROUPE_OFFLINE_DELAY_MS: '5000' });
    const started = await mcp.callTool({
      name: 'run_job',
      arguments: { task: 'Compare the documents.', wait: false },
    });
    const { run_id } = started.structuredContent as unknown as Snapshot;
    expect((started.structuredContent as unknown as Snapshot).status).toBe('running');

    const cancelled = await mcp.callTool({ name: 'cancel_run', arguments: { run_id } });
    expect((cancelled.structuredContent as unknown as Snapshot).status).toBe('cancelled');
    const unknown = await mcp.callTool({
      name: 'run_status',
      arguments: { run_id: 'no-such-run' },
    });
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(unknown.content)).toContain(run_id);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        resolvePort(typeof address === 'object' && address !== null ? address.port : 0),
      );
    });
  });
}

describe('troupe mcp --port, driven by the SDK client over Streamable HTTP', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGTERM');
    child = undefined;
  });

  it('serves the same tools at /mcp and runs a job', async () => {
    const port = await freePort();
    const server = spawn(
      process.execPath,
      [
        BIN,
        'mcp',
        '--provider',
        'offline',
        '--out',
        out,
        '--threads',
        '2',
        '--port',
        String(port),
        '--workspace',
        fileURLToPath(new URL('../../examples/corpus', import.meta.url)),
      ],
      { env: { PATH: process.env['PATH'] ?? '' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child = server;
    await new Promise<void>((resolveReady, reject) => {
      let seen = '';
      server.stderr?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('serving Streamable HTTP')) resolveReady();
      });
      server.once('exit', (code) => reject(new Error(`troupe mcp exited (${code}): ${seen}`)));
    });
    const mcp = new Client({ name: 'troupe-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    client = mcp;
    const roles = await mcp.callTool({ name: 'list_roles', arguments: {} });
    expect(JSON.stringify(roles.content)).toContain('researcher');
    const progress: string[] = [];
    const result = await mcp.callTool(
      { name: 'run_job', arguments: { task: 'Compare the documents and write a report.' } },
      undefined,
      { onprogress: (note) => progress.push(note.message ?? ''), timeout: 120_000 },
    );
    const snapshot = result.structuredContent as unknown as Snapshot;
    expect(snapshot.status).toBe('completed');
    expect(progress.at(-1)).toMatch(/^run completed/);
    const status = await mcp.callTool({
      name: 'run_status',
      arguments: { run_id: snapshot.run_id },
    });
    expect((status.structuredContent as unknown as Snapshot).status).toBe('completed');
  });
});
