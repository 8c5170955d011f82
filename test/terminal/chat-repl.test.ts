import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type MockOpenAIServer,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { hasPython, KEYS, ptyEnv, runInPty } from '../helpers/pty.js';

/** Polls `condition` every 20 ms, failing after 60 s. */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`still waiting for ${String(condition)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function lastUser(body: Record<string, unknown>): string {
  const messages = (body['messages'] as Array<{ role: string; content: unknown }>) ?? [];
  const user = messages.filter((message) => message.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : '';
}

// Issue 13, problem 6: troupe chat is a real REPL on a terminal: line editing
// and persistent history, Ctrl-C cancels the turn and a second one leaves,
// Ctrl-D leaves, a spinner while the model works, slash commands that never
// reach the model.
describe.runIf(hasPython())('troupe chat on a terminal (pty)', () => {
  let server: MockOpenAIServer;
  const state = mkdtempSync(join(tmpdir(), 'troupe-pty-chat-'));
  beforeAll(async () => {
    server = await startMockOpenAIServer({
      respond: (body) =>
        lastUser(body).includes('slow')
          ? openaiReply({ content: 'too late', delayMs: 60_000 })
          : openaiReply({
              content: `You said: ${lastUser(body)}`,
              usage: { prompt: 900, completion: 100 },
            }),
    });
  });
  afterAll(async () => {
    await server.close();
  });

  function chat() {
    return runInPty(
      [
        'chat',
        '--provider',
        'openai',
        '--model',
        'gpt-test',
        '--base-url',
        server.baseURL,
        '--workspace',
        state,
      ],
      {
        cols: 100,
        rows: 30,
        env: ptyEnv({ OPENAI_API_KEY: server.apiKey, XDG_STATE_HOME: state }),
      },
    );
  }

  it('edits lines, answers, cancels a turn with Ctrl-C, keeps history, and leaves on a second Ctrl-C', async () => {
    const session = chat();
    await session.waitFor('/help for commands');
    await session.waitFor((screen) => screen.lines().some((line) => /^›( |$)/.test(line)));

    session.type('/help\r');
    await session.waitFor('/clear');
    await session.waitFor('Ctrl-R search');
    expect(session.screen.transcript()).toContain('/save <file>');
    expect(server.requests).toHaveLength(0);

    session.type('/nope\r');
    await session.waitFor('Unknown command /nope. /help lists the commands.');

    // Line editing: the arrow keys move the cursor; they never reach the model as ^[[D.
    await session.press('hllo', KEYS.left, KEYS.left, KEYS.left, 'e', '\r');
    await session.waitFor('You said: hello');
    expect(JSON.stringify(server.requests.map((request) => request.body))).not.toContain('\\u001b');
    // Keys typed faster than the program reads them arrive in one read; they edit at the cursor too.
    session.type(`wrld${KEYS.left}${KEYS.left}${KEYS.left}o\r`);
    await session.waitFor('You said: world');

    session.type('please be slow\r');
    await session.waitFor(/⠋|⠙|⠹|⠸|⠼|⠴|⠦|⠧|⠇|⠏/);
    await session.waitFor('working');
    // The Ctrl-C must reach a turn whose request the server holds.
    await until(() => server.inFlight === 1);
    session.type(KEYS.ctrlC);
    await session.waitFor('turn cancelled');
    await session.waitFor(
      (screen) => screen.lines().filter((line) => /^›( |$)/.test(line)).length >= 4,
    );

    // History: up recalls the previous line.
    session.type(KEYS.up);
    await session.waitFor((screen) => screen.lines().some((line) => line === '› please be slow'));
    session.type('\u0015'); // Ctrl-U clears the line

    session.type('/tokens\r');
    await session.waitFor(/\d+(\.\d)?k? tokens this session/);

    session.type(KEYS.ctrlC);
    await session.waitFor('(Ctrl-C again or Ctrl-D to leave)');
    session.type(KEYS.ctrlC);
    expect(await session.exited).toBe(0);

    const history = readFileSync(join(state, 'troupe', 'chat_history'), 'utf8');
    expect(history.split('\n')).toEqual(
      expect.arrayContaining(['hello', 'please be slow', '/tokens']),
    );
  }, 120_000);

  it('searches (Ctrl-R) and recalls (↑) the history of the last session, and leaves on Ctrl-D', async () => {
    expect(existsSync(join(state, 'troupe', 'chat_history'))).toBe(true);
    const session = chat();
    await session.waitFor((screen) => screen.lines().some((line) => /^›( |$)/.test(line)));
    // Ctrl-R searches the history; Ctrl-G gives the empty line back.
    await session.press('\u0012', 's', 'l', 'o');
    await session.waitFor((screen) =>
      screen.lines().some((line) => line === "(reverse-i-search)`slo': please be slow"),
    );
    await session.press('\u0007');
    await session.waitFor(
      (screen) =>
        !screen.lines().some((line) => line.startsWith('(reverse-i-search)')) &&
        screen.lines().some((line) => line === '›'),
    );
    session.type(KEYS.up);
    await session.waitFor((screen) => screen.lines().some((line) => line === '› /tokens'));
    session.type('\u0015');
    session.type(KEYS.ctrlD);
    expect(await session.exited).toBe(0);
  }, 120_000);
});
