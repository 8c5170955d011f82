import { describe, expect, it } from 'vitest';
import { closePendingToolCalls } from '../../src/agent/history.js';
import type { Message, ToolCall } from '../../src/model/types.js';

// The rule, written the plain way: every call of the latest assistant turn
// that no tool message has answered gets a synthetic result before the next
// non-tool message (or at the end).
function reference(messages: readonly Message[], reason: string): Message[] {
  const out: Message[] = [];
  let pending: ToolCall[] = [];
  const answerPending = (): void => {
    for (const call of pending) {
      out.push({
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: `Error: ${reason}`,
        isError: true,
      });
    }
    pending = [];
  };
  for (const message of messages) {
    if (message.role === 'tool') {
      pending = pending.filter((call) => call.id !== message.toolCallId);
      out.push(message);
      continue;
    }
    answerPending();
    out.push(message);
    if (message.role === 'assistant') pending = [...(message.toolCalls ?? [])];
  }
  answerPending();
  return out;
}

// A small deterministic generator (no Math.random: the same cases every run).
function* conversations(count: number): Generator<Message[]> {
  let seed = 7;
  const next = (limit: number): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % limit;
  };
  const ids = ['a', 'b', 'c', 'd'];
  for (let index = 0; index < count; index += 1) {
    const messages: Message[] = [];
    const length = next(9);
    for (let position = 0; position < length; position += 1) {
      switch (next(5)) {
        case 0:
          messages.push({ role: 'user', content: `u${position}` });
          break;
        case 1:
          messages.push({ role: 'assistant', content: `a${position}` });
          break;
        case 2: {
          const calls = Array.from({ length: next(4) }, () => {
            const id = ids[next(ids.length)] as string;
            return { id, name: 't', arguments: {}, raw: '{}' };
          });
          messages.push({ role: 'assistant', content: '', toolCalls: calls });
          break;
        }
        default:
          messages.push({
            role: 'tool',
            toolCallId: ids[next(ids.length)] as string,
            name: 't',
            content: `r${position}`,
          });
      }
    }
    yield messages;
  }
}

describe('closePendingToolCalls', () => {
  it('answers each unanswered call after the results that arrived when a turn was cut short', () => {
    const messages: Message[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'a', name: 't', arguments: {}, raw: '{}' },
          { id: 'b', name: 't', arguments: {}, raw: '{}' },
        ],
      },
      { role: 'tool', toolCallId: 'a', name: 't', content: 'done' },
      { role: 'user', content: 'next' },
    ];
    expect(closePendingToolCalls(messages, 'stopped.')).toEqual([
      messages[0],
      messages[1],
      messages[2],
      { role: 'tool', toolCallId: 'b', name: 't', content: 'Error: stopped.', isError: true },
      messages[3],
    ]);
  });

  it('returns a new array equal to the plain rule on 2,000 generated conversations', () => {
    for (const messages of conversations(2000)) {
      const closed = closePendingToolCalls(messages, 'cut.');
      expect(closed).not.toBe(messages);
      expect(closed).toEqual(reference(messages, 'cut.'));
    }
  });
});
