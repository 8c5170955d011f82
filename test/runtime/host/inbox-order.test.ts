import { describe, expect, it } from 'vitest';
import { type AgentJournal, inboxPlan, type JournalEntry } from '../../../src/agent/journal.js';
import { emptyUsage } from '../../../src/model/types.js';
import { InboxOrder } from '../../../src/runtime/host/inbox-order.js';

const model = (step: number): JournalEntry => ({
  kind: 'model',
  step,
  hash: `h${step}`,
  response: { content: '', toolCalls: [], usage: emptyUsage(), stopReason: 'end' },
});

function journal(recorded: JournalEntry[]): AgentJournal & { written: JournalEntry[] } {
  const written: JournalEntry[] = [];
  return { recorded, written, record: (entry) => written.push(entry), intend: async () => {} };
}

describe('inboxPlan', () => {
  it('joins the records of one step in order, and a reset record drops the earlier attempt from its step on', () => {
    const plan = inboxPlan([
      { kind: 'inbox', step: 1, hashes: ['a'] },
      { kind: 'inbox', step: 1, hashes: ['b'] },
      { kind: 'inbox', step: 3, hashes: ['c'] },
      { kind: 'inbox', step: 4, hashes: ['d'] },
      { kind: 'inbox', step: 3, hashes: ['x'], reset: true },
    ]);
    expect([...plan]).toEqual([
      [1, ['a', 'b']],
      [3, ['x']],
    ]);
  });
});

describe('InboxOrder', () => {
  it('gives what is due while replaying, records nothing then, and records with a reset once live', () => {
    const recorded: JournalEntry[] = [
      { kind: 'inbox', step: 0, hashes: ['a', 'b'] },
      model(0),
      { kind: 'inbox', step: 1, hashes: ['c'] },
      model(1),
      model(2),
    ];
    const backing = journal(recorded);
    const order = new InboxOrder(backing);
    expect(order.replaying).toBe(true);
    expect(order.due(0)).toEqual(['a', 'b']);
    order.took(0, ['a']);
    expect(order.due(0)).toEqual(['b']);
    order.took(0, ['b']);
    expect(order.due(0)).toEqual([]);
    // Nothing was taken before call 2 the first time: hold what arrives.
    expect(order.due(2)).toEqual([]);
    // Past the recorded calls: live.
    expect(order.due(3)).toBeUndefined();
    expect(backing.written).toEqual([]);

    order.took(3, ['z']);
    order.took(4, ['y']);
    expect(backing.written).toEqual([
      { kind: 'inbox', step: 3, hashes: ['z'], reset: true },
      { kind: 'inbox', step: 4, hashes: ['y'] },
    ]);
  });

  it('repeats what this attempt took at the step it went live at in its reset record', () => {
    const backing = journal([{ kind: 'inbox', step: 0, hashes: ['a', 'b'] }, model(0)]);
    const order = new InboxOrder(backing);
    expect(order.due(0)).toEqual(['a', 'b']);
    order.took(0, ['a']);
    order.goLive();
    expect(order.due(0)).toBeUndefined();
    order.took(0, ['q']);
    expect(backing.written).toEqual([{ kind: 'inbox', step: 0, hashes: ['a', 'q'], reset: true }]);
  });

  it('records every take of an actor with nothing recorded, without a reset', () => {
    const backing = journal([]);
    const order = new InboxOrder(backing);
    expect(order.replaying).toBe(false);
    expect(order.due(0)).toBeUndefined();
    order.took(0, ['a']);
    expect(backing.written).toEqual([{ kind: 'inbox', step: 0, hashes: ['a'] }]);
  });

  it('replays the order over calls answered elsewhere (a NATS node journal), then records with a reset', () => {
    // Only inbox records: the model responses of calls 0 and 1 replay from the node's journal.
    const backing = journal([
      { kind: 'inbox', step: 1, hashes: ['a'] },
      { kind: 'inbox', step: 2, hashes: ['b'] },
    ]);
    const order = new InboxOrder(backing, 2);
    expect(order.replaying).toBe(true);
    expect(order.due(0)).toEqual([]);
    expect(order.due(1)).toEqual(['a']);
    order.took(1, ['a']);
    // Call 2 is live: it takes what it finds, and its record supersedes the earlier attempt's.
    expect(order.due(2)).toBeUndefined();
    order.took(2, ['b', 'c']);
    expect(backing.written).toEqual([{ kind: 'inbox', step: 2, hashes: ['b', 'c'], reset: true }]);
  });
});
