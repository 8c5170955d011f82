import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import {
  type MockOpenAIServer,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { argv, fakeIo } from './io.js';

const root = new URL('../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'troupe.js');
const words = join(root, 'test', 'fixtures', 'tools', 'words.mjs');

let server: MockOpenAIServer | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-chat-tools-'));
  dirs.push(dir);
  return dir;
}

describe('troupe chat --tools', () => {
  it('gives the agent the module’s tools, run on a tool thread (child process, mock server)', async () => {
    server = await startMockOpenAIServer({
      respond: (body) => {
        const messages = body['messages'] as Array<{ role: string; content: unknown }>;
        const result = messages.find((message) => message.role === 'tool');
        return result === undefined
          ? openaiReply({
              toolCalls: [{ name: 'count_words', arguments: { text: 'one two three four' } }],
            })
          : openaiReply({ content: `Counted: ${String(result.content)}` });
      },
    });
    const mock = server;
    const child = spawn(
      process.execPath,
      [
        bin,
        'chat',
        '--provider',
        'openai',
        '--base-url',
        mock.baseURL,
        '--model',
        'mock-model',
        '--workspace',
        tempDir(),
        '--tools',
        words,
      ],
      {
        cwd: root,
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: tempDir(),
          OPENAI_API_KEY: mock.apiKey,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.stdin?.end('How many words in "one two three four"?\n');
    expect(await exited, output).toBe(0);
    expect(output).toMatch(/^tools: .*\bcount_words\b.*\bunused_tool\b/m);
    // Thread 0 is the chat's own: the tool ran on another.
    const thread = /Counted: 4 words, counted in thread (\d+)/.exec(output)?.[1];
    expect(Number(thread)).toBeGreaterThan(0);
    // The model saw the tool's schema.
    const first = mock.requests[0]?.body as
      | { tools?: Array<{ function: { name: string } }> }
      | undefined;
    const offered = first?.tools;
    expect(offered?.map((tool) => tool.function.name)).toContain('count_words');
    expect(mock.violations).toEqual([]);
  });

  it('refuses a module that is missing or exports no tool with exit 2', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'none.mjs'), 'export const answer = 42;\n');
    for (const [file, message] of [
      [join(dir, 'missing.mjs'), '--tools'],
      [join(dir, 'none.mjs'), '--tools'],
    ] as const) {
      const io = fakeIo({ env: { HOME: dir }, stdinLines: [] });
      const code = await runCli(
        argv('chat', '--provider', 'offline', '--workspace', dir, '--tools', file),
        io,
      );
      expect(code, io.stderr.text).toBe(2);
      expect(io.stderr.text).toContain(`${message} ${file}`);
    }
  });
});
