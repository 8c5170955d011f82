import { describe, expect, it } from 'vitest';
import { formatEventLine, LineRenderer } from '../../src/render/lines.js';
import { EventFactory, sampleRun } from '../cli/events.js';
import { FakeTerminal } from './fake-terminal.js';

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
