import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openaiReply, startMockOpenAIServer } from '../helpers/mock-openai-server.js';
import { hasPython, KEYS } from '../helpers/pty.js';
import { runFanOut } from './fan-out.js';

const root = new URL('../../', import.meta.url).pathname;
const fixtures = join(root, 'test', 'fixtures', 'tools');

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (part as { text?: string }).text ?? '').join('');
  }
  return '';
}

/** 60 lines of Python; line 47 is the one a reviewer must not miss. */
const CODE = Array.from({ length: 60 }, (_, index) =>
  index === 46 ? "open('/etc/hosts').read()  # line 47" : `print(${index + 1})`,
).join('\n');

// Issue 13, problem 8: --approve shows the whole code it asks about, a page
// at a time, with the live view (and its keys) out of the way meanwhile.
describe.runIf(hasPython())('--approve on a terminal (pty)', () => {
  it('shows every line of the code, pages the rest, and refuses on n', async () => {
    const server = await startMockOpenAIServer({
      respond: (body) => {
        const messages = (body['messages'] as Array<{ role: string; content: unknown }>) ?? [];
        const system = text(messages[0]?.content);
        const toolResult = messages.find((message) => message.role === 'tool');
        if (system.includes('coordinator')) {
          return toolResult === undefined
            ? openaiReply({
                toolCalls: [
                  {
                    name: 'delegate',
                    arguments: { tasks: [{ role: 'coder', task: 'print the numbers' }] },
                  },
                ],
              })
            : openaiReply({ content: 'The coder was refused.' });
        }
        return toolResult === undefined
          ? openaiReply({ toolCalls: [{ name: 'python', arguments: { code: CODE } }] })
          : openaiReply({ content: `Python said: ${text(toolResult.content).slice(0, 200)}` });
      },
    });
    try {
      const { session } = runFanOut(server, {
        cols: 100,
        rows: 50,
        args: ['--approve', '--allow', 'read,exec', '--roles', join(fixtures, 'coder-role.mjs')],
      });
      await session.waitFor('wants to run python');
      await session.waitFor('more lines: Enter shows the next page, y allows, n refuses');
      let screen = session.screen.text();
      expect(screen).toMatch(/\? coder-1 \(role coder\) wants to run python: /);
      expect(screen).toMatch(/^ {2} 1 │ print\(1\)$/m);
      expect(screen).toMatch(/^ {2}40 │ print\(40\)$/m);
      expect(screen).toContain('-- 20 more lines');
      // The live view stepped aside: no frame over the question.
      expect(screen).not.toContain('── recent ──');
      await session.press(KEYS.enter);
      await session.waitFor('Allow? [y/N]');
      screen = session.screen.text();
      expect(screen).toMatch(/^ {2}47 │ open\('\/etc\/hosts'\)\.read\(\) {2}# line 47$/m);
      expect(screen).toMatch(/^ {2}60 │ print\(60\)$/m);
      session.type('n\r');
      expect(await session.exited).toBe(0);
      const transcript = session.screen.transcript();
      expect(transcript).toContain('The coder was refused.');
      expect(transcript).toMatch(/python failed: The user did not approve this action/);
    } finally {
      await server.close();
    }
  }, 120_000);
});
