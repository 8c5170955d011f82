import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent } from '../../src/agent/agent.js';
import {
  type AgentJournal,
  INTERRUPTED_RESULT,
  type JournalEntry,
  journalLine,
  journalLineEncoder,
  messageHash,
  RequestHasher,
  readJournalLine,
  requestHash,
} from '../../src/agent/journal.js';
import type { AgentEvent, UnsequencedEvent } from '../../src/events/schema.js';
import { ScriptedModel } from '../../src/model/providers/scripted.js';
import type { Script } from '../../src/model/script.js';
import type { Message, ToolSchema } from '../../src/model/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { defineTool } from '../../src/tools/tool.js';

/** A journal in memory: what was recorded, and intents in the order they were made durable. */
function memoryJournal(recorded: readonly JournalEntry[] = []): AgentJournal & {
  entries: JournalEntry[];
} {
  const entries: JournalEntry[] = [];
  return {
    recorded,
    entries,
    record: (entry) => {
      entries.push(entry);
    },
    intend: async (entry) => {
      entries.push(entry);
    },
  };
}

/** Tools that count their runs: `look` is idempotent, `charge` is not. */
function countingTools() {
  const runs = { look: 0, charge: 0 };
  const look = defineTool({
    name: 'look',
    description: 'Looks.',
    parameters: z.object({ at: z.string() }),
    idempotent: true,
    execute: ({ at }) => {
      runs.look += 1;
      return `saw ${at}`;
    },
  });
  const charge = defineTool({
    name: 'charge',
    description: 'Charges a card.',
    parameters: z.object({ cents: z.number() }),
    execute: ({ cents }) => {
      runs.charge += 1;
      return `charged ${cents}`;
    },
  });
  return { runs, tools: new ToolRegistry([look, charge]) };
}

const SCRIPT: Script = {
  steps: [
    {
      toolCalls: [
        { name: 'look', arguments: { at: 'a' }, id: 'c1' },
        { name: 'charge', arguments: { cents: 5 }, id: 'c2' },
      ],
      usage: { inputTokens: 100, outputTokens: 10 },
    },
    { content: 'all done', usage: { inputTokens: 200, outputTokens: 20 } },
  ],
};

function build(
  model: ScriptedModel,
  journal: AgentJournal,
  tools: ToolRegistry,
  system = 'Be brief.',
) {
  const events: UnsequencedEvent[] = [];
  const agent = new Agent({
    name: 'worker',
    model,
    tools,
    system,
    journal,
    events: { emit: (event) => events.push(event) },
  });
  return { agent, events };
}

function ofType<T extends AgentEvent['type']>(events: readonly UnsequencedEvent[], type: T) {
  return events.filter((event) => event.type === type) as Extract<UnsequencedEvent, { type: T }>[];
}

describe('Agent journal', () => {
  it('records every model response and tool result, intents before the tool that is not idempotent', async () => {
    const journal = memoryJournal();
    const { runs, tools } = countingTools();
    const { agent } = build(new ScriptedModel(SCRIPT), journal, tools);
    const result = await agent.run('go');
    expect(result.final).toBe('all done');
    expect(runs).toEqual({ look: 1, charge: 1 });
    expect(journal.entries.map((entry) => `${entry.kind}:${entry.step}`)).toEqual([
      'model:0',
      'tool.started:0',
      'tool:0',
      'tool:0',
      'model:1',
    ]);
    const started = journal.entries.find((entry) => entry.kind === 'tool.started');
    expect(started).toMatchObject({ callId: 'c2', name: 'charge' });
  });

  it('replays a whole run without calling the model or running a tool, with zero new tokens', async () => {
    const journal = memoryJournal();
    const { tools } = countingTools();
    const first = build(new ScriptedModel(SCRIPT), journal, tools);
    const original = await first.agent.run('go');

    const again = countingTools();
    // A model with no steps: any call it gets fails the run.
    const empty = new ScriptedModel({ steps: [] });
    const second = build(empty, memoryJournal(journal.entries), again.tools);
    const replayed = await second.agent.run('go');

    expect(replayed.final).toBe(original.final);
    expect(replayed.messages).toEqual(original.messages);
    expect(empty.calls).toHaveLength(0);
    expect(again.runs).toEqual({ look: 0, charge: 0 });
    const responses = ofType(second.events, 'model.response');
    expect(responses.every((event) => event.replayed === true)).toBe(true);
    expect(responses.map((event) => event.usage)).toEqual([
      { inputTokens: 0, outputTokens: 0 },
      { inputTokens: 0, outputTokens: 0 },
    ]);
    expect(responses.map((event) => event.replayedUsage?.inputTokens)).toEqual([100, 200]);
    expect(ofType(second.events, 'tool.result').every((event) => event.replayed === true)).toBe(
      true,
    );
    expect(replayed.usage).toEqual({ inputTokens: 0, outputTokens: 0 });
  });

  it('goes live where the journal ends: a recorded step replays, the next is a model call', async () => {
    const journal = memoryJournal();
    const { tools } = countingTools();
    await build(new ScriptedModel(SCRIPT), journal, tools).agent.run('go');
    // Killed after the first response and both results were journaled, before the second call ended.
    const cut = journal.entries.filter((entry) => entry.step === 0);

    const again = countingTools();
    const model = new ScriptedModel({ steps: [SCRIPT.steps[1]!] });
    const second = build(model, memoryJournal(cut), again.tools);
    const result = await second.agent.run('go');
    expect(result.final).toBe('all done');
    expect(model.calls).toHaveLength(1);
    expect(again.runs).toEqual({ look: 0, charge: 0 });
    expect(ofType(second.events, 'model.response').map((event) => event.replayed)).toEqual([
      true,
      undefined,
    ]);
  });

  it('re-runs an interrupted idempotent call and answers an interrupted one that is not with "outcome unknown"', async () => {
    const journal = memoryJournal();
    const { tools } = countingTools();
    await build(new ScriptedModel(SCRIPT), journal, tools).agent.run('go');
    // Killed while both calls ran: the response and the intent are journaled, no result.
    const cut = journal.entries.filter((entry) =>
      entry.kind === 'model' ? entry.step === 0 : entry.kind === 'tool.started',
    );
    expect(cut.map((entry) => entry.kind)).toEqual(['model', 'tool.started']);
    // `look` is idempotent but had no intent: it never needed one, and it runs again.
    const again = countingTools();
    const model = new ScriptedModel({
      steps: [{ match: { lastToolResultIsError: true }, content: 'charge state unknown' }],
    });
    const second = build(model, memoryJournal(cut), again.tools);
    const result = await second.agent.run('go');
    expect(again.runs).toEqual({ look: 1, charge: 0 });
    // Calls of one turn run concurrently: results come in the order they end.
    const results = ofType(second.events, 'tool.result').sort((a, b) =>
      a.name.localeCompare(b.name),
    );
    expect(results.map((event) => [event.name, event.ok, event.content])).toEqual([
      ['charge', false, INTERRUPTED_RESULT.content],
      ['look', true, 'saw a'],
    ]);
    expect(
      result.messages.filter((message) => message.role === 'tool').map((m) => m.content),
    ).toEqual(['saw a', INTERRUPTED_RESULT.content]);
    expect(result.final).toBe('charge state unknown');
  });

  it('stops replaying and says why when the request no longer matches the record', async () => {
    const journal = memoryJournal();
    const { tools } = countingTools();
    await build(new ScriptedModel(SCRIPT), journal, tools).agent.run('go');

    const again = countingTools();
    const model = new ScriptedModel(SCRIPT);
    const second = build(model, memoryJournal(journal.entries), again.tools, 'A new prompt.');
    const result = await second.agent.run('go');
    expect(result.final).toBe('all done');
    expect(model.calls).toHaveLength(2);
    expect(again.runs).toEqual({ look: 1, charge: 1 });
    const diverged = ofType(second.events, 'journal.diverged');
    expect(diverged).toHaveLength(1);
    expect(diverged[0]).toMatchObject({ step: 0 });
    expect(diverged[0]?.reason).toContain('goes live');
  });

  it('keeps counting steps across runs of one agent, so a later run replays its own records', async () => {
    const journal = memoryJournal();
    const script: Script = {
      steps: [
        { content: 'first', match: { lastUserContains: 'one' } },
        { content: 'second', match: { lastUserContains: 'two' } },
      ],
    };
    const { tools } = countingTools();
    const first = build(new ScriptedModel(script), journal, tools).agent;
    await first.run('one');
    await first.run('two');
    expect(journal.entries.map((entry) => entry.step)).toEqual([0, 1]);

    const empty = new ScriptedModel({ steps: [] });
    const second = build(empty, memoryJournal(journal.entries), tools).agent;
    expect((await second.run('one')).final).toBe('first');
    expect((await second.run('two')).final).toBe('second');
    expect(empty.calls).toHaveLength(0);
  });
});

describe('requestHash', () => {
  // Journals written by earlier versions hold hashes made this way: they must still match.
  it('is the digest journals of earlier versions recorded, and tells requests apart', () => {
    const messages: Message[] = [
      { role: 'system', content: 'You check the ledger. ünïcödé ✓' },
      { role: 'user', content: 'task 1' },
    ];
    const tools: ToolSchema[] = [
      { name: 'noop', description: 'n', parameters: { type: 'object', properties: {} } },
      {
        name: 'burn',
        description: 'b',
        parameters: { type: 'object', properties: { ms: { type: 'number' } } },
      },
    ];
    const before = createHash('sha256');
    before.update(JSON.stringify(messages));
    for (const tool of tools)
      before.update(`\u0000${tool.name}\u0000${JSON.stringify(tool.parameters)}`);
    expect(requestHash(messages, tools)).toBe(before.digest('hex').slice(0, 24));
    // Asked again with the same tool list (its part is cached): the same digest.
    expect(requestHash(messages, tools)).toBe(requestHash([...messages], tools));
    expect(requestHash(messages, tools.slice(0, 1))).not.toBe(requestHash(messages, tools));
    expect(requestHash([...messages, { role: 'user', content: 'more' }], tools)).not.toBe(
      requestHash(messages, tools),
    );
    expect(messageHash('hello')).toBe(
      createHash('sha256').update('hello').digest('hex').slice(0, 16),
    );
  });
});

describe('RequestHasher', () => {
  const tools: ToolSchema[] = [
    { name: 'noop', description: 'n', parameters: { type: 'object', properties: {} } },
  ];
  const turn = (index: number, size: number): Message[] => [
    {
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: `call_${index}`, name: 'noop', arguments: { index }, raw: `{"index":${index}}` },
      ],
    },
    {
      role: 'tool',
      toolCallId: `call_${index}`,
      name: 'noop',
      content: `ünï ✓ ${'x'.repeat(size)}`,
    },
  ];

  it('gives what requestHash gives, call after call, as the history grows past the running digest', () => {
    const hasher = new RequestHasher();
    const messages: Message[] = [
      { role: 'system', content: 'You check the ledger.' },
      { role: 'user', content: 'task 1' },
    ];
    // 40 turns of ~2 KB: the history passes the running digest's threshold on the way.
    for (let index = 0; index < 40; index += 1) {
      expect(hasher.hash(messages, tools)).toBe(requestHash(messages, tools));
      // Another tool list for the same history: its own digest, still the full one.
      expect(hasher.hash(messages, [])).toBe(requestHash(messages, []));
      messages.push(...turn(index, 2_000));
    }
    expect(JSON.stringify(messages).length).toBeGreaterThan(40_000 * 2);
    expect(hasher.hash(messages, tools)).toBe(requestHash(messages, tools));
    expect(new RequestHasher().hash([], tools)).toBe(requestHash([], tools));
  });

  it('starts again when the history was rewritten: another array, a shorter one, or its last message replaced', () => {
    const hasher = new RequestHasher();
    const messages: Message[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
      ...turn(0, 20_000),
      ...turn(1, 20_000),
    ];
    expect(hasher.hash(messages, tools)).toBe(requestHash(messages, tools));
    // Compression: a new array with a summary in the middle.
    const compressed: Message[] = [
      messages[0] as Message,
      messages[1] as Message,
      { role: 'user', content: 'summary' },
      ...turn(1, 20_000),
    ];
    expect(hasher.hash(compressed, tools)).toBe(requestHash(compressed, tools));
    // The same array, shortened, then grown by other messages of the same count.
    compressed.splice(2);
    expect(hasher.hash(compressed, tools)).toBe(requestHash(compressed, tools));
    compressed.push(...turn(2, 10));
    expect(hasher.hash(compressed, tools)).toBe(requestHash(compressed, tools));
    // Its last hashed message replaced in place.
    compressed[compressed.length - 1] = {
      role: 'tool',
      toolCallId: 'call_2',
      name: 'noop',
      content: 'other',
    };
    expect(hasher.hash(compressed, tools)).toBe(requestHash(compressed, tools));
  });
});

describe('journalLineEncoder', () => {
  // The main thread appends an actor thread's lines as they came, and a resume reads them with
  // the lines the main thread writes itself: one agent's encoder must write journalLine's bytes.
  it('writes the very line journalLine writes, for every kind of record and a key that needs escaping', () => {
    const entries: JournalEntry[] = [
      {
        kind: 'model',
        step: 0,
        hash: 'abc',
        response: {
          content: 'é "quoted" \n',
          toolCalls: [{ id: 'c1', name: 'count', arguments: { n: 1 }, raw: '{"n":1}' }],
          usage: { inputTokens: 3, outputTokens: 2 },
          stopReason: 'tool_calls',
        },
      },
      { kind: 'tool.started', step: 0, callId: 'c1', name: 'count' },
      { kind: 'tool', step: 0, callId: 'c1', name: 'count', result: { ok: true, content: 'ok' } },
      { kind: 'inbox', step: 1, hashes: ['h1', 'h2'], reset: true },
    ];
    for (const key of ['5b001f388edc4f0603269a7b35a8b473', 'a "key"\\with\u2028escapes']) {
      const encode = journalLineEncoder(key);
      for (const entry of entries) {
        expect(encode(entry)).toBe(journalLine(key, entry));
        expect(readJournalLine(encode(entry))).toEqual({ key, entry });
      }
    }
  });
});
