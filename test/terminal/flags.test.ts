import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropicReply, startMockAnthropicServer } from '../helpers/mock-anthropic-server.js';
import { openaiReply, startMockOpenAIServer } from '../helpers/mock-openai-server.js';
import { hasPython, ptyEnv, runInPty } from '../helpers/pty.js';
import { runFanOut, startFanOutServer } from './fan-out.js';

const root = new URL('../../', import.meta.url).pathname;
const fixtures = join(root, 'test', 'fixtures', 'tools');

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((part) => (part as { text?: string }).text ?? '').join('');
  return '';
}

const ESC = String.fromCharCode(27);

// Issue 13, problem 8 (the parts done): NO_COLOR takes only the colour away,
// and a --base-url without a scheme is a usage error before anything runs.
describe.runIf(hasPython())('flags on a terminal (pty)', () => {
  it('keeps the live view under NO_COLOR, without a single colour escape', async () => {
    const out = mkdtempSync(join(tmpdir(), 'troupe-pty-nocolor-'));
    const session = runInPty(['demo', '--out', out], {
      cols: 100,
      rows: 30,
      env: ptyEnv({ NO_COLOR: '1' }),
    });
    expect(await session.exited).toBe(0);
    // The live view: a frame redrawn in place (cursor hidden, moved up), not plain lines.
    expect(session.raw).toContain('\u001b[?25l');
    expect(session.raw).toMatch(new RegExp(`${ESC}\\[\\d+F`));
    expect(session.screen.transcript()).toContain('── recent ──');
    // No colour: no SGR sequence at all.
    expect(session.raw).not.toMatch(new RegExp(`${ESC}\\[[0-9;]*m`));
  }, 120_000);

  it('refuses a --base-url without a scheme at once, with the URL to write instead', async () => {
    const session = runInPty(
      ['run', 'a task', '--provider', 'openai', '--base-url', 'localhost:11434'],
      { cols: 200, rows: 30, env: ptyEnv() },
    );
    expect(await session.exited).toBe(2);
    expect(session.screen.transcript().replace(/\s+/g, ' ')).toContain(
      '--base-url localhost:11434 is not an http(s) URL. Write it whole, e.g. --base-url http://localhost:11434/v1',
    );
  }, 60_000);

  it('--thinking turns on Anthropic extended thinking with the budget given, and the view shows the thinking', async () => {
    const server = await startMockAnthropicServer();
    try {
      server.enqueue(
        anthropicReply({
          blocks: [
            { type: 'thinking', thinking: 'One researcher is enough for topic A.' },
            {
              type: 'tool_use',
              name: 'delegate',
              input: { tasks: [{ role: 'researcher', task: 'look into topic A' }] },
            },
          ],
        }),
        anthropicReply({
          blocks: [
            { type: 'thinking', thinking: 'Nothing to read; the answer is short.' },
            { type: 'text', text: 'Topic A is fine.' },
          ],
        }),
        anthropicReply({
          blocks: [
            { type: 'thinking', thinking: 'The researcher answered; sum it up.' },
            { type: 'text', text: 'Topic A is fine, says the researcher.' },
          ],
        }),
      );
      const out = mkdtempSync(join(tmpdir(), 'troupe-pty-thinking-'));
      const session = runInPty(
        ['run', 'Look into topic A.', '--provider', 'anthropic', '--base-url', server.baseURL]
          .concat(['--thinking', '2k', '--out', out, '--workspace', out, '--threads', '1'])
          .concat(['--no-interactive']),
        { cols: 120, rows: 40, env: ptyEnv({ ANTHROPIC_API_KEY: server.apiKey }) },
      );
      expect(await session.exited, session.screen.transcript()).toBe(0);
      expect(server.violations).toEqual([]);
      for (const request of server.requests) {
        const body = request.body as { thinking?: unknown; max_tokens?: number };
        expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });
        expect(body.max_tokens).toBeGreaterThan(2000);
      }
      const transcript = session.screen.transcript();
      expect(transcript).toMatch(/💭 The researcher answered; sum it up\./);
      expect(transcript).toContain('Topic A is fine, says the researcher.');
    } finally {
      await server.close();
    }
  }, 120_000);

  it('--thinking sets the reasoning effort for OpenAI, and says what each provider takes', async () => {
    const server = await startFanOutServer({
      tasks: [{ role: 'researcher', task: 'look into topic A' }],
      answer: 'All done.',
    });
    try {
      const { session } = runFanOut(server, { cols: 100, rows: 30, args: ['--thinking', 'high'] });
      expect(await session.exited).toBe(0);
      expect(server.requests.length).toBeGreaterThanOrEqual(3);
      for (const request of server.requests) {
        expect((request.body as { reasoning_effort?: string }).reasoning_effort).toBe('high');
      }
    } finally {
      await server.close();
    }
    for (const [args, message] of [
      [
        ['--provider', 'openai', '--base-url', 'http://127.0.0.1:9/v1', '--thinking', '8k'],
        '--thinking with --provider openai takes a reasoning effort: minimal, low, medium, high',
      ],
      [
        ['--provider', 'anthropic', '--thinking', '500'],
        "--thinking 500: Anthropic's thinking budget is at least 1024 tokens; try --thinking 4k.",
      ],
      [['--provider', 'offline', '--thinking'], '--thinking needs a model that thinks'],
    ] as const) {
      const session = runInPty(['run', 'a task', ...args], {
        cols: 200,
        rows: 30,
        env: ptyEnv({ ANTHROPIC_API_KEY: 'sk-ant-unused' }),
      });
      expect(await session.exited).toBe(2);
      expect(session.screen.transcript().replace(/\s+/g, ' ')).toContain(message);
    }
  }, 120_000);

  it('--tools loads a tool module into the tool pool for the roles that name its tools', async () => {
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
                    arguments: { tasks: [{ role: 'counter', task: 'count: one two three four' }] },
                  },
                ],
              })
            : openaiReply({
                content: `The counter says: ${text(toolResult.content).slice(0, 400)}`,
              });
        }
        return toolResult === undefined
          ? openaiReply({
              toolCalls: [{ name: 'count_words', arguments: { text: 'one two three four' } }],
            })
          : openaiReply({ content: `Counted: ${text(toolResult.content)}` });
      },
    });
    try {
      const { session } = runFanOut(server, {
        cols: 120,
        rows: 40,
        args: [
          '--tools',
          join(fixtures, 'words.mjs'),
          '--roles',
          join(fixtures, 'counter-role.mjs'),
          '--no-interactive',
        ],
      });
      expect(await session.exited, session.screen.transcript()).toBe(0);
      const transcript = session.screen.transcript();
      // Said before the run: a tool of the module no role names (the terminal may wrap it mid-word).
      expect(transcript.replace(/\s+/g, '')).toContain(
        '"unused_tool"isnamedbynorole,sonoagentcancallit',
      );
      expect(transcript).toMatch(/✅ count_words → 4 words, counted in thread \d+/);
      expect(transcript).toMatch(/Counted: 4 words/);
    } finally {
      await server.close();
    }
    const missing = runInPty(['run', 'a task', '--provider', 'offline', '--tools', 'nope.mjs'], {
      cols: 200,
      rows: 30,
      env: ptyEnv(),
    });
    expect(await missing.exited).toBe(2);
    expect(missing.screen.transcript()).toMatch(/--tools nope\.mjs: no such file/);
  }, 120_000);

  it('--help of a command ends with examples, the live view keys and the exit codes', async () => {
    const session = runInPty(['run', '--help'], { cols: 100, rows: 30, env: ptyEnv() });
    expect(await session.exited).toBe(0);
    const help = session.screen.transcript();
    expect(help).toMatch(/Examples:\n {2}\$ troupe run "Compare/);
    expect(help).toContain('$ troupe run "…" --provider anthropic --thinking 8k');
    expect(help).toContain('↑↓ select an agent · Enter its transcript');
    for (const code of ['0 ', '1 ', '2 ', '3 ', '130 '])
      expect(help).toMatch(new RegExp(`^ {2}${code}`, 'm'));
  }, 60_000);

  it('writes runs outside the workspace by default: under $XDG_STATE_HOME/troupe/runs, where runs and trace find them', async () => {
    const server = await startFanOutServer({
      tasks: [{ role: 'researcher', task: 'look into topic A' }],
      answer: 'All done.',
    });
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-pty-workspace-'));
    const state = mkdtempSync(join(tmpdir(), 'troupe-pty-state-'));
    const env = ptyEnv({ OPENAI_API_KEY: server.apiKey, XDG_STATE_HOME: state });
    try {
      const run = runInPty(
        ['run', 'Look into topic A.', '--provider', 'openai', '--model', 'gpt-test'].concat([
          '--base-url',
          server.baseURL,
          '--threads',
          '1',
          '--no-interactive',
        ]),
        { cols: 200, rows: 40, env, cwd: workspace },
      );
      expect(await run.exited, run.screen.transcript()).toBe(0);
      // Nothing was written into the workspace (the default --workspace is the current folder).
      expect(readdirSync(workspace)).toEqual([]);
      const runs = join(state, 'troupe', 'runs');
      const [runId] = readdirSync(runs);
      expect(existsSync(join(runs, runId ?? '', 'trace.jsonl'))).toBe(true);
      expect(run.screen.transcript()).toContain(
        `trace    ~/${relative(tmpdir(), join(runs, runId ?? '', 'trace.jsonl'))}`,
      );
      const list = runInPty(['runs'], { cols: 200, rows: 20, env, cwd: workspace });
      expect(await list.exited).toBe(0);
      expect(list.screen.transcript()).toContain(runId);
    } finally {
      await server.close();
    }
  }, 120_000);
});
