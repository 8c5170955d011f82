import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type MockOpenAIServer,
  type OpenAIReply,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { SUMMARY_REQUEST } from '../helpers/scripts.js';

// `troupe chat --context-window 8k` as a person runs it (node bin/troupe.js on
// the built dist/), fed 40 questions on stdin, against the strict local
// OpenAI-compatible mock server: the session compresses its history and says so.
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'bin', 'troupe.js');
const WINDOW = 8000;
const QUESTIONS = 40;

beforeAll(() => {
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before these tests (npm test does).');
  }
});

let server: MockOpenAIServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = Record<string, unknown>;
interface WireMessage {
  role: string;
  content?: unknown;
}

const messagesOf = (body: Body): WireMessage[] => body['messages'] as WireMessage[];
const isSummary = (body: Body): boolean =>
  String(messagesOf(body)[0]?.content ?? '').startsWith(SUMMARY_REQUEST);

describe('troupe chat compresses a long session (child process, strict mock server)', () => {
  it('answers 40 questions under an 8k window with the first question verbatim in every request', async () => {
    server = await startMockOpenAIServer({
      respond: (body): OpenAIReply => {
        if (isSummary(body))
          return openaiReply({ content: 'Earlier: questions about pumps, answered.' });
        const question = String(messagesOf(body).at(-1)?.content ?? '');
        return openaiReply({
          content: `Answer to ${question.split(':')[0]}: ${'Prime the pump before the valve opens. '.repeat(40)}`,
        });
      },
    });
    const mock = server;
    const questions = Array.from(
      { length: QUESTIONS },
      (_, index) => `Question ${index + 1}: how does the pump in section ${index + 1} start?`,
    );
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
        mkdtempSync(join(tmpdir(), 'troupe-chat-compress-ws-')),
        '--context-window',
        '8k',
      ],
      {
        cwd: root,
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: mkdtempSync(join(tmpdir(), 'troupe-chat-compress-home-')),
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
    child.stdin?.end(`${questions.join('\n')}\n`);

    expect(await exited, output).toBe(0);
    expect(mock.violations).toEqual([]);
    const bodies = mock.requests.map((request) => request.body as Body);
    const turns = bodies.filter((body) => !isSummary(body));
    expect(turns).toHaveLength(QUESTIONS);
    const summaries = bodies.length - turns.length;
    expect(summaries).toBeGreaterThanOrEqual(3);
    for (const body of bodies) {
      const prompt = Math.ceil(
        JSON.stringify({ m: body['messages'], t: body['tools'] ?? [] }).length / 4,
      );
      expect(prompt).toBeLessThanOrEqual(WINDOW);
    }
    for (const [index, body] of turns.entries()) {
      const messages = messagesOf(body);
      expect(messages[0]?.role).toBe('system');
      expect(messages[1]).toMatchObject({ role: 'user', content: questions[0] });
      // The question of this turn is the last message, whatever was folded before it.
      expect(messages.at(-1)).toMatchObject({ role: 'user', content: questions[index] });
    }
    expect(output.split('🗜 history compressed').length - 1).toBe(summaries);
    expect(output).toContain(`Answer to Question ${QUESTIONS}:`);
  });
});
