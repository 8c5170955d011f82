import { describe, expect, it } from 'vitest';
import { parseToolToMain, ToolToMainSchema } from '../../../src/runtime/wire/tool-protocol.js';

// What a tool thread sends: the hand check for answers and progress (the bulk) must accept what
// the schema accepts and refuse what it refuses, so a bad item never gets past either.
describe('parseToolToMain', () => {
  const progress = { type: 'progress', callId: 3, notes: ['one', 'two'] };
  const done = { type: 'done', callId: 3, ok: true, content: 'fine' };

  it('takes progress items with their notes, in order, beside answers', () => {
    expect(parseToolToMain([progress, done])).toEqual([progress, done]);
  });

  it('refuses what the schema refuses, item by item', () => {
    const bad: unknown[] = [
      { ...progress, notes: ['one', 2] },
      { ...progress, notes: 'one' },
      { ...progress, callId: 1.5 },
      { type: 'progress', callId: 3 },
      { ...progress, note: 'the old shape', notes: undefined },
      { ...done, ok: 'yes' },
      null,
    ];
    for (const item of bad) {
      expect(ToolToMainSchema.safeParse(item).success).toBe(false);
      expect(parseToolToMain([done, item])).toBeUndefined();
    }
  });
});
