import { describe, expect, it } from 'vitest';
import { chatLayout } from '../../src/render/chat-layout.js';
import { EventFactory } from '../cli/events.js';

describe('chatLayout', () => {
  const f = new EventFactory();

  it('cuts thinking at 120 characters, indented two spaces', () => {
    const [line] = chatLayout(
      f.make('a', {
        type: 'model.response',
        content: '',
        thinking: 'y'.repeat(500),
        toolCalls: [],
        usage: { inputTokens: 1, outputTokens: 1 },
      }),
    );
    expect(line?.startsWith('  💭 ')).toBe(true);
    expect([...(line ?? '')].length).toBe(2 + 2 + 120);
  });

  it('cuts a tool call at 80 and a result at 60 characters', () => {
    const [call] = chatLayout(
      f.make('a', {
        type: 'tool.call',
        callId: 'c',
        name: 'read_file',
        input: { path: 'p'.repeat(200) },
      }),
    );
    expect(call?.startsWith('  🤔 read_file({"path":"ppp')).toBe(true);
    expect([...(call ?? '')].length).toBe(2 + 2 + 80);
    const [result] = chatLayout(
      f.make('a', {
        type: 'tool.result',
        callId: 'c',
        name: 'read_file',
        ok: true,
        content: 'z'.repeat(200),
      }),
    );
    expect(result).toBe(`  ✅ read_file → ${'z'.repeat(59)}…`);
  });

  it('keeps the whole message when a tool failed', () => {
    const message = 'm'.repeat(500);
    const [line] = chatLayout(
      f.make('a', {
        type: 'tool.result',
        callId: 'c',
        name: 'shell',
        ok: false,
        content: 'Error',
        error: { code: 'tool.failed', message },
      }),
    );
    expect(line).toBe(`  ❌ shell failed: ${message}`);
  });
});
