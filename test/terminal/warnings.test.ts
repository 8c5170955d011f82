import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../src/events/trace.js';
import {
  anthropicReply,
  type MockAnthropicServer,
  startMockAnthropicServer,
} from '../helpers/mock-anthropic-server.js';
import { hasPython, ptyEnv, runInPty } from '../helpers/pty.js';

// Issue 13, problem 1: nothing but the renderer writes to the terminal during a
// live view. The Anthropic SDK console.warns on every request for a deprecated
// model; in a real pseudo-terminal those warnings must not tear the frame.
describe.runIf(hasPython())('warnings during a live view (pty)', () => {
  let server: MockAnthropicServer;
  beforeAll(async () => {
    server = await startMockAnthropicServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('become events in the view and the trace, and never raw text on the screen', async () => {
    server.enqueue(
      anthropicReply({
        blocks: [
          {
            type: 'tool_use',
            name: 'delegate',
            input: {
              tasks: [
                { role: 'researcher', task: 'look at topic A' },
                { role: 'researcher', task: 'look at topic B' },
                { role: 'researcher', task: 'look at topic C' },
              ],
            },
          },
        ],
      }),
      ...Array.from({ length: 4 }, (_, index) =>
        anthropicReply({ blocks: [{ type: 'text', text: `Answer ${index + 1}.` }] }),
      ),
    );
    const out = mkdtempSync(join(tmpdir(), 'troupe-pty-warn-'));
    const session = runInPty(
      [
        'run',
        'Research three topics.',
        '--provider',
        'anthropic',
        '--model',
        'claude-sonnet-4-5',
        '--base-url',
        server.baseURL,
        '--threads',
        '1',
        '--out',
        out,
        '--workspace',
        out,
      ],
      { cols: 100, rows: 30, env: ptyEnv({ ANTHROPIC_API_KEY: server.apiKey }) },
    );
    const code = await session.exited;
    const screen = session.screen.transcript();
    expect(code, screen).toBe(0);
    // The SDK's two-line warning never reached the terminal as raw text...
    expect(session.raw).not.toMatch(/(^|\n)\s*Please migrate to a newer model/);
    expect(session.raw).not.toContain('\nThe model ');
    // ...and the final screen is the frame, then the summary: no stray lines between.
    expect(screen).toContain('Run ');
    expect(screen).toMatch(/Run \S+ completed/);
    // The warning is an event of each agent whose request raised it, once per agent.
    const runId = readdirSync(out).find((name) => name !== 'answer.md') ?? '';
    const events = readTrace(join(out, runId, 'trace.jsonl')).events;
    const warned = events.filter((event) => event.type === 'warning.raised');
    expect(new Set(warned.map((event) => event.agentId))).toEqual(
      new Set(['coordinator', 'researcher-1', 'researcher-2', 'researcher-3']),
    );
    expect(
      warned.every((event) => event.message.includes("'claude-sonnet-4-5' is deprecated")),
    ).toBe(true);
    expect(server.violations).toEqual([]);
  }, 120_000);
});
