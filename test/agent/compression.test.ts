import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { estimatePromptTokens } from '../../src/agent/allowance.js';
import {
  compressionFor,
  isSummary,
  mergeCompression,
  planCompression,
} from '../../src/agent/history.js';
import type { AgentJournal, JournalEntry } from '../../src/agent/journal.js';
import type { UnsequencedEvent } from '../../src/events/schema.js';
import { knownContextWindow } from '../../src/model/context-window.js';
import { ScriptedModel } from '../../src/model/providers/scripted.js';
import type { ScriptStep } from '../../src/model/script.js';
import type { Message } from '../../src/model/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { answer, call, echoTool, SUMMARY_REQUEST, summaryStep } from '../helpers/scripts.js';

const SYSTEM = 'You echo things. Keep going until told to stop.';
const TASK = 'Echo the 120 pages of the manual, one page per call, then say done.';

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

// Every assistant tool call is answered, in order, by the tool messages right after it.
function expectPairsIntact(messages: readonly Message[]): void {
  messages.forEach((message, index) => {
    if (message.role === 'tool') {
      let owner = index - 1;
      while (owner >= 0 && messages[owner]?.role === 'tool') owner -= 1;
      const assistant = messages[owner];
      expect(assistant?.role).toBe('assistant');
      if (assistant?.role === 'assistant')
        expect(assistant.toolCalls?.map((c) => c.id)).toContain(message.toolCallId);
    }
    if (message.role !== 'assistant' || message.toolCalls === undefined) return;
    const following = messages.slice(index + 1, index + 1 + message.toolCalls.length);
    expect(following.map((m) => (m.role === 'tool' ? m.toolCallId : m.role))).toEqual(
      message.toolCalls.map((c) => c.id),
    );
  });
}

const SUMMARY = 'Pages echoed so far; nothing else of note.';

function pages(count: number, from = 1): ScriptStep[] {
  const steps: ScriptStep[] = [summaryStep(SUMMARY)];
  for (let page = from; page <= count; page += 1)
    steps.push(call('echo', { text: `page ${page}: ${'lorem ipsum '.repeat(20)}` }));
  steps.push(answer('done'));
  return steps;
}

function build(model: ScriptedModel, journal?: AgentJournal) {
  const events: UnsequencedEvent[] = [];
  const agent = new Agent({
    name: 'echoer',
    model,
    tools: new ToolRegistry([echoTool]),
    system: SYSTEM,
    maxSteps: 200,
    stream: false,
    compression: { maxTokens: 1500 },
    events: { emit: (event) => events.push(event) },
    ...(journal === undefined ? {} : { journal }),
  });
  return { agent, events };
}

describe('planCompression', () => {
  const history: Message[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'task' },
    {
      role: 'assistant',
      content: '',
      toolCalls: [{ id: 'a', name: 't', arguments: {}, raw: '{}' }],
    },
    { role: 'tool', toolCallId: 'a', name: 't', content: 'ra' },
    {
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'b', name: 't', arguments: {}, raw: '{}' },
        { id: 'c', name: 't', arguments: {}, raw: '{}' },
      ],
    },
    { role: 'tool', toolCallId: 'b', name: 't', content: 'rb' },
    { role: 'tool', toolCallId: 'c', name: 't', content: 'rc' },
  ];

  it('keeps the system prompt and the task in the head and a whole turn in the tail', () => {
    const plan = planCompression(history, 1);
    expect(plan?.head).toEqual(history.slice(0, 2));
    expect(plan?.middle).toEqual(history.slice(2, 4));
    expect(plan?.tail).toEqual(history.slice(4));
  });

  it('folds every turn after the task when no turn is kept', () => {
    const plan = planCompression(history, 0);
    expect(plan?.head).toEqual(history.slice(0, 2));
    expect(plan?.middle).toEqual(history.slice(2));
    expect(plan?.tail).toEqual([]);
  });

  it('has nothing to fold when only an earlier summary lies between the task and the tail', () => {
    const summary: Message = { role: 'user', content: '[Summary of the earlier conversation]\nx' };
    expect(isSummary(summary)).toBe(true);
    expect(planCompression([...history.slice(0, 2), summary, ...history.slice(4)], 1)).toBe(
      undefined,
    );
  });
});

describe('compressionFor', () => {
  it('compresses at three quarters of the known window of each default model', () => {
    const anthropic = { provider: 'anthropic', model: 'claude-sonnet-4-6' } as const;
    const openai = { provider: 'openai', model: 'gpt-5.4-mini' } as const;
    expect(knownContextWindow(anthropic)).toBe(200_000);
    expect(knownContextWindow(openai)).toBe(400_000);
    expect(compressionFor(undefined, anthropic)).toEqual({ maxTokens: 150_000 });
    expect(compressionFor(undefined, openai)).toEqual({ maxTokens: 300_000 });
  });

  it('is off for a model whose window is unknown unless a window is given', () => {
    const local = { provider: 'openai', model: 'llama3.1:8b' } as const;
    expect(compressionFor(undefined, local)).toBeUndefined();
    expect(compressionFor({ contextWindow: 8192, at: 0.5 }, local)).toEqual({ maxTokens: 4096 });
    expect(compressionFor({ contextWindow: 8192 }, { provider: 'offline' })).toEqual({
      maxTokens: 6144,
    });
    expect(compressionFor(false, { provider: 'anthropic', model: 'claude-x' })).toBeUndefined();
  });

  it("merges a role's setting over the run's, and false on either side turns it off", () => {
    expect(mergeCompression({ contextWindow: 8000 }, { at: 0.5 })).toEqual({
      contextWindow: 8000,
      at: 0.5,
    });
    expect(mergeCompression(false, { at: 0.5 })).toBe(false);
    expect(mergeCompression({ contextWindow: 8000 }, false)).toBe(false);
    expect(mergeCompression(undefined, undefined)).toBeUndefined();
  });
});

describe('Agent compression', () => {
  it('stays under its limit over 120 turns with the system prompt and task verbatim in every request', async () => {
    const model = new ScriptedModel({ steps: pages(120) });
    const { agent, events } = build(model);

    const result = await agent.run(TASK);

    expect(result.stopReason).toBe('final');
    expect(result.final).toBe('done');
    const compressed = events.filter((event) => event.type === 'history.compressed');
    expect(compressed.length).toBeGreaterThan(5);
    const summaries = model.calls.filter((c) =>
      c.request.messages.some((m) => m.content.includes(SUMMARY_REQUEST)),
    );
    expect(summaries).toHaveLength(compressed.length);
    for (const { request } of model.calls) {
      expect(estimatePromptTokens(request.messages, request.tools ?? [])).toBeLessThanOrEqual(1500);
      if (summaries.some((summary) => summary.request === request)) continue;
      expect(request.messages[0]).toEqual({ role: 'system', content: SYSTEM });
      expect(request.messages[1]).toEqual({ role: 'user', content: TASK });
      expectPairsIntact(request.messages);
    }
    for (const event of compressed) {
      if (event.type !== 'history.compressed') continue;
      expect(event.afterTokens).toBeLessThan(event.beforeTokens);
      expect(event.foldedMessages).toBeGreaterThan(0);
      expect(event.limitTokens).toBe(1500);
    }
    // The summary calls' usage goes out on history.compressed, so the run's ledger counts it.
    const counted = events.reduce(
      (sum, event) =>
        sum +
        (event.type === 'model.response' || event.type === 'history.compressed'
          ? (event.usage?.inputTokens ?? 0)
          : 0),
      0,
    );
    expect(result.usage.inputTokens).toBe(counted);
    expect(
      compressed.every((event) => event.type === 'history.compressed' && event.usage !== undefined),
    ).toBe(true);
    model.assertComplete();
  });

  it('journals its summaries, so a resume replays them and makes no model call', async () => {
    const journal = memoryJournal();
    const first = build(new ScriptedModel({ steps: pages(40) }), journal);
    const done = await first.agent.run(TASK);
    const summaryCalls = first.events.filter((event) => event.type === 'history.compressed').length;
    expect(summaryCalls).toBeGreaterThan(1);

    // Everything recorded: the resumed agent answers from the journal alone.
    const empty = new ScriptedModel({ steps: [] });
    const again = build(empty, memoryJournal(journal.entries));
    const resumed = await again.agent.run(TASK);

    expect(empty.calls).toHaveLength(0);
    expect(resumed.final).toBe(done.final);
    expect(resumed.messages).toEqual(done.messages);
    const replayedSummaries = again.events.filter(
      (event) =>
        event.type === 'history.compressed' && event.replayed === true && event.usage === undefined,
    );
    expect(replayedSummaries).toHaveLength(summaryCalls);
    expect(again.events.some((event) => event.type === 'journal.diverged')).toBe(false);
  });

  it('replays the summaries of a run killed midway and goes live from there', async () => {
    const journal = memoryJournal();
    await build(new ScriptedModel({ steps: pages(40) }), journal).agent.run(TASK);
    const models = journal.entries.filter((entry) => entry.kind === 'model');
    // Killed after the 30th model response (summaries included) was journaled.
    const lastStep = (models[29] as JournalEntry).step;
    const cut = journal.entries.filter((entry) => entry.step <= lastStep);
    const turns = models
      .slice(0, 30)
      .filter((entry) => entry.kind === 'model' && entry.response.content !== SUMMARY).length;
    const model = new ScriptedModel({ steps: pages(40, turns + 1) });
    const again = build(model, memoryJournal(cut));

    const resumed = await again.agent.run(TASK);

    expect(resumed.final).toBe('done');
    expect(again.events.some((event) => event.type === 'journal.diverged')).toBe(false);
    // Live calls: every model call of the whole run minus the 30 replayed.
    expect(model.calls).toHaveLength(models.length - 30);
  });
});
