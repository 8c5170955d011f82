import { describe, expect, it } from 'vitest';
import { formatEventLine, LineRenderer } from '../../src/render/lines.js';
import { stripAnsi } from '../../src/render/terminal.js';
import { EventFactory, sampleRun } from '../cli/events.js';
import { FakeTerminal } from './fake-terminal.js';

// A coloured agent prefix: its colour code, the id padded, the colour reset.
const COLOURED_PREFIX = new RegExp(
  `^(${String.fromCharCode(27)}\\[\\d+m)\\S+\\s*${String.fromCharCode(27)}\\[39m `,
);

describe('formatEventLine', () => {
  const f = new EventFactory();

  it('prefixes the agent and shows a tool call with its arguments when given tool.call', () => {
    const line = formatEventLine(
      f.make('researcher-1', {
        type: 'tool.call',
        callId: 'x',
        name: 'read_file',
        input: { path: 'a.md' },
      }),
    );
    expect(line).toMatchInlineSnapshot(`"researcher-1   call read_file {"path":"a.md"}"`);
  });

  it('keeps the whole error message when a tool failed', () => {
    const message = `${'x'.repeat(300)} end`;
    const line = formatEventLine(
      f.make('a', {
        type: 'tool.result',
        callId: 'x',
        name: 'shell',
        ok: false,
        content: 'Error',
        error: { code: 'tool.failed', message },
      }),
    );
    expect(line).toContain(message);
  });

  it('prints nothing for deltas, requests and steps', () => {
    expect(
      formatEventLine(f.make('a', { type: 'model.delta', kind: 'text', text: 'hi' })),
    ).toBeUndefined();
    expect(
      formatEventLine(f.make('a', { type: 'model.request', step: 0, messages: 1, tools: 0 })),
    ).toBeUndefined();
    expect(
      formatEventLine(f.make('a', { type: 'step', step: { index: 0, kind: 'final', detail: '' } })),
    ).toBeUndefined();
  });
});

describe('LineRenderer', () => {
  it('writes one line per printable event and a summary table when the run finishes', () => {
    const output = new FakeTerminal();
    const renderer = new LineRenderer({ output, env: {} });
    for (const event of sampleRun()) renderer.handle(event);
    renderer.finish();

    const lines = output.text.split('\n');
    expect(lines[0]).toBe('coordinator    run run-1 started: Compare the documents.');
    expect(output.text).toContain(
      'researcher-2   failed read_file: ENOENT: b.md does not exist in the workspace',
    );
    expect(output.text).toContain('researcher-2   finished failed: The model failed: HTTP 500');
    expect(output.text).toContain('Run run-1 completed in 1.6s');
    expect(output.text).toMatch(/researcher\s+2\s+1\s+1\s+0\s+2\.5k/);
    expect(output.text).not.toContain('\u001b[');
  });

  it('redacts secret values from the environment when an event carries one', () => {
    const output = new FakeTerminal();
    const secret = 'sk-test-abcdefghijklmnop1234';
    const renderer = new LineRenderer({ output, env: { OPENAI_API_KEY: secret } });
    renderer.handle(
      new EventFactory().make('a', { type: 'agent.progress', note: `key is ${secret}` }),
    );
    expect(output.text).not.toContain(secret);
    expect(output.text).toContain('[redacted]');
  });
});

describe('LineRenderer colours', () => {
  const prefix = (line: string): string | undefined => COLOURED_PREFIX.exec(line)?.[1];

  it('prints each agent prefix in its own stable colour when colour is on, like docker compose', () => {
    const output = new FakeTerminal();
    const renderer = new LineRenderer({ output, env: {}, color: true });
    for (const event of sampleRun()) renderer.handle(event);
    const lines = output.text.split('\n').filter((line) => line.startsWith('\u001b['));
    const byAgent = new Map<string, Set<string | undefined>>();
    for (const line of lines) {
      const id = stripAnsi(line).split(' ')[0] as string;
      const set = byAgent.get(id) ?? new Set();
      set.add(prefix(line));
      byAgent.set(id, set);
    }
    expect(byAgent.size).toBeGreaterThan(2);
    // One colour per agent, in every line of it; agents apart.
    for (const colours of byAgent.values()) expect(colours.size).toBe(1);
    expect(new Set([...byAgent.values()].map((colours) => [...colours][0])).size).toBeGreaterThan(
      1,
    );
    // Only the prefix is coloured: the text after it is as without colour.
    const plain = new FakeTerminal();
    const uncoloured = new LineRenderer({ output: plain, env: {} });
    for (const event of sampleRun()) uncoloured.handle(event);
    expect(stripAnsi(output.text)).toBe(plain.text);
    expect(plain.text).not.toContain('\u001b[');
  });

  it('redacts before colouring', () => {
    const secret = 'sk-line-secret-0123456789abcdef';
    const output = new FakeTerminal();
    const renderer = new LineRenderer({ output, env: { OPENAI_API_KEY: secret }, color: true });
    const f = new EventFactory();
    renderer.handle(f.make('a', { type: 'agent.progress', note: `key ${secret}` }));
    expect(output.text).not.toContain(secret);
    expect(stripAnsi(output.text)).toContain('progress: key [redacted]');
  });
});
