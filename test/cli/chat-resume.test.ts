import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal } from '../../src/runtime/resume/journal.js';
import {
  type MockHttpServer,
  type SseEvent,
  sendJson,
  sendSse,
  startMockHttpServer,
} from '../helpers/mock-provider-server.js';

// troupe chat as a person runs it (node bin/troupe.js on the built dist/), against a local
// OpenAI-compatible server that counts the requests it gets.
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'bin', 'troupe.js');
const API_KEY = 'sk-chat-resume-test-0000';
const NOTES = 'The ledger holds 42 entries.';

interface WireMessage {
  role: string;
  content?: string | null;
}

interface Reply {
  content: string;
  toolCall?: { id: string; name: string; arguments: string };
}

let server: MockHttpServer;
let received = 0;
/** Answers to the call after a tool result wait until this is true (the first process is killed there). */
let answerAfterTool = false;
const held: ServerResponse[] = [];
let onRequest: ((messages: WireMessage[]) => void) | undefined;
const dirs: string[] = [];

function decide(messages: WireMessage[]): Reply | 'hold' {
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    if (!answerAfterTool) return 'hold';
    return { content: `notes.md says: ${String(last.content).includes(NOTES) ? NOTES : '?'}` };
  }
  const input = String(last?.content ?? '');
  if (input.includes('notes.md')) {
    return {
      content: '',
      toolCall: { id: 'call_notes_1', name: 'read_file', arguments: '{"path":"notes.md"}' },
    };
  }
  return { content: `You said: ${input}` };
}

function sse(reply: Reply): SseEvent[] {
  const base = { id: 'chatcmpl-chat', object: 'chat.completion.chunk', created: 1, model: 'mock' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
    data: JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] }),
  });
  const events = [chunk({ role: 'assistant', content: reply.content })];
  if (reply.toolCall !== undefined) {
    events.push(
      chunk({
        tool_calls: [
          {
            index: 0,
            id: reply.toolCall.id,
            type: 'function',
            function: { name: reply.toolCall.name, arguments: reply.toolCall.arguments },
          },
        ],
      }),
    );
  }
  events.push(chunk({}, reply.toolCall === undefined ? 'stop' : 'tool_calls'));
  events.push({
    data: JSON.stringify({
      ...base,
      choices: [],
      usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 },
    }),
  });
  events.push({ data: '[DONE]' });
  return events;
}

beforeAll(async () => {
  server = await startMockHttpServer(async (request, response) => {
    const body = (request.body ?? {}) as { messages?: WireMessage[]; stream?: boolean };
    const messages = body.messages ?? [];
    received += 1;
    const reply = decide(messages);
    onRequest?.(messages);
    if (reply === 'hold') {
      held.push(response);
      return;
    }
    if (body.stream === true) {
      await sendSse(response, sse(reply));
      return;
    }
    sendJson(response, 200, {
      id: 'chatcmpl-chat',
      object: 'chat.completion',
      created: 1,
      model: 'mock',
      choices: [
        {
          index: 0,
          finish_reason: reply.toolCall === undefined ? 'stop' : 'tool_calls',
          message: {
            role: 'assistant',
            content: reply.content,
            ...(reply.toolCall === undefined
              ? {}
              : {
                  tool_calls: [
                    {
                      id: reply.toolCall.id,
                      type: 'function',
                      function: { name: reply.toolCall.name, arguments: reply.toolCall.arguments },
                    },
                  ],
                }),
          },
        },
      ],
      usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 },
    });
  });
});

afterAll(async () => {
  for (const response of held.splice(0)) response.destroy();
  await server.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function chat(home: string, workspace: string, extra: string[]): ChildProcess {
  return spawn(
    process.execPath,
    [
      bin,
      'chat',
      '--provider',
      'openai',
      '--base-url',
      `${server.origin}/v1`,
      '--model',
      'mock',
      '--workspace',
      workspace,
      ...extra,
    ],
    {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, OPENAI_API_KEY: API_KEY },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
}

/** Collects a child's stdout and resolves `until` once it contains `text`. */
function watchOutput(child: ChildProcess): {
  text: () => string;
  until: (text: string) => Promise<void>;
} {
  let output = '';
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  const check = (): void => {
    for (const waiter of [...waiters]) {
      if (output.includes(waiter.text)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    check();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return {
    text: () => output,
    until: (text) =>
      new Promise<void>((resolve) => {
        waiters.push({ text, resolve });
        check();
      }),
  };
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('troupe chat sessions (child process)', () => {
  it('saves a session as it goes and resumes one killed mid-turn with its history, without repeating finished calls', async () => {
    const home = mkdtempSync(join(tmpdir(), 'troupe-chat-home-'));
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-chat-ws-'));
    dirs.push(home, workspace);
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, 'notes.md'), `${NOTES}\n`);
    answerAfterTool = false;

    // First process: one whole turn, then a turn killed while its second model call is in flight.
    const first = chat(home, workspace, []);
    const firstOutput = watchOutput(first);
    const firstExit = exited(first);
    first.stdin?.write('Hello troupe\n');
    await firstOutput.until('You said: Hello troupe');
    const heldCall = new Promise<void>((resolve) => {
      onRequest = (messages) => {
        if (messages.at(-1)?.role === 'tool') resolve();
      };
    });
    first.stdin?.write('What is in notes.md?\n');
    await heldCall;
    onRequest = undefined;
    first.kill('SIGKILL');
    expect(await firstExit).toBe(null);
    expect(received).toBe(3);

    // The session's journal holds the finished calls; the resume pays only the one in flight.
    const sessions = join(home, '.local', 'state', 'troupe', 'chats');
    const [id] = readdirSync(sessions);
    expect(id).toBeDefined();
    received = 0;
    answerAfterTool = true;
    const second = chat(home, workspace, ['--resume']);
    const secondOutput = watchOutput(second);
    second.stdin?.end();
    expect(await exited(second), secondOutput.text()).toBe(0);
    expect(received).toBe(1);
    const text = secondOutput.text();
    expect(text).toContain('> Hello troupe');
    expect(text).toContain('You said: Hello troupe');
    expect(text).toContain('(interrupted; going on)');
    expect(text).toContain(`notes.md says: ${NOTES}`);
    expect(text).toContain(`session ${id} (resumed)`);
    // The read_file call that finished before the kill was answered from the journal, not run again.
    const journal = readJournal(join(sessions, id ?? '', 'journal.jsonl'));
    const toolRecords = (journal.entries.get('chat') ?? []).filter(
      (entry) => entry.kind === 'tool',
    );
    expect(toolRecords.map((entry) => entry.kind === 'tool' && entry.callId)).toEqual([
      'call_notes_1',
    ]);
    expect(JSON.stringify([...journal.entries.values()])).not.toContain(API_KEY);

    // A third process, by id: the whole conversation is there and a new turn goes on from it.
    received = 0;
    const third = chat(home, workspace, ['--resume', id ?? '']);
    const thirdOutput = watchOutput(third);
    third.stdin?.end('One more\n');
    expect(await exited(third), thirdOutput.text()).toBe(0);
    expect(received).toBe(1);
    expect(thirdOutput.text()).toContain(`notes.md says: ${NOTES}`);
    expect(thirdOutput.text()).toContain('You said: One more');
    expect(thirdOutput.text()).not.toContain('(interrupted; going on)');
  });

  it('exits 2 with what to do when the session to resume does not exist', async () => {
    const home = mkdtempSync(join(tmpdir(), 'troupe-chat-home-'));
    dirs.push(home);
    const child = chat(home, root, ['--resume', 'no-such-session']);
    const output = watchOutput(child);
    child.stdin?.end();
    expect(await exited(child)).toBe(2);
    expect(output.text()).toContain('no chat session no-such-session');
    expect(output.text()).toContain('troupe chat --resume');
  });
});
