import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createModel } from '../../../src/model/model.js';
import {
  OFFLINE_DELAY_ENV,
  OFFLINE_MODEL_NAME,
  OfflineModel,
} from '../../../src/model/providers/offline.js';
import {
  aggregateFindings,
  aggregateMessages,
  HEURISTIC_NOTE,
} from '../../../src/model/providers/offline-aggregate.js';
import { extractFindings } from '../../../src/model/providers/offline-extract.js';
import type { Message, ModelRequest, ModelResponse, ToolSchema } from '../../../src/model/types.js';
import { formatDelegationResults } from '../../../src/roles/delegation-digest.js';
import type { ActorResult } from '../../../src/roles/result.js';

const corpus = new URL('../../../examples/corpus/', import.meta.url);
const market = readFileSync(new URL('battery-storage-market.md', corpus), 'utf8');
const grid = readFileSync(new URL('grid-reliability-report.md', corpus), 'utf8');

function done(agentId: string, final: string): ActorResult {
  const role = agentId.replace(/-\d+$/, '');
  return {
    agentId,
    role,
    status: 'completed',
    final,
    usage: { inputTokens: 0, outputTokens: 0 },
    steps: 1,
  };
}

function tool(name: string, properties: Record<string, unknown> = {}): ToolSchema {
  return { name, description: name, parameters: { type: 'object', properties } };
}

const delegateTool = tool('delegate', {
  tasks: {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        role: { enum: ['researcher', 'analyst', 'reporter'] },
        task: { type: 'string' },
      },
    },
  },
});

/** Appends the model's reply and a tool result for each of its calls. */
function answer(
  messages: Message[],
  response: ModelResponse,
  results: (name: string, args: any) => { content: string; isError?: boolean },
): void {
  messages.push({ role: 'assistant', content: response.content, toolCalls: response.toolCalls });
  for (const call of response.toolCalls) {
    const result = results(call.name, call.arguments);
    messages.push({ role: 'tool', toolCallId: call.id, name: call.name, ...result });
  }
}

describe('OfflineModel', () => {
  it('drives the coordinator through list_dir, research with the analyst, then the reporter', async () => {
    const model = new OfflineModel();
    const tools = [tool('list_dir', { path: { type: 'string' } }), tool('read_file'), delegateTool];
    const messages: Message[] = [{ role: 'user', content: 'Compare the storage documents.' }];
    const request = (): ModelRequest => ({ messages, tools, caller: { name: 'coordinator' } });

    const first = await model.complete(request());
    expect(first.toolCalls.map((call) => [call.name, call.arguments])).toEqual([
      ['list_dir', { path: '.' }],
    ]);
    answer(messages, first, () => ({
      content:
        'file  a.md  120 B\nfile  notes/b.txt  80 B\ndir  .git\nfile  troupe-runs/x/report.md',
    }));

    const second = await model.complete(request());
    const tasks = (second.toolCalls[0]!.arguments as any).tasks as Array<{
      role: string;
      task: string;
    }>;
    expect(second.toolCalls[0]?.name).toBe('delegate');
    expect(tasks.map((task) => task.role)).toEqual(['researcher', 'researcher', 'analyst']);
    expect(tasks[0]?.task).toContain('"a.md"');
    expect(tasks[1]?.task).toContain('"notes/b.txt"');
    answer(messages, second, () => ({
      // The digest delegate returns, as the coordinator reads it.
      content: formatDelegationResults([
        done('researcher-1', 'ok'),
        done('analyst-1', '## Analysis X\n\n- [a.md] says so.\n\n[b] too.'),
      ]),
    }));

    const third = await model.complete(request());
    const reporterTask = (third.toolCalls[0]!.arguments as any).tasks[0];
    expect(reporterTask.role).toBe('reporter');
    expect(reporterTask.task).toMatch(
      /Analysis:\n## Analysis X\n\n- \[a\.md\] says so\.\n\n\[b\] too\.$/,
    );
    answer(messages, third, () => ({
      content: formatDelegationResults([done('reporter-1', 'Wrote runs/r1/report.md (2 kB)')], {
        saved: { path: 'runs/r1/delegations/coordinator-2.jsonl' },
      }),
    }));

    const last = await model.complete(request());
    expect(last.toolCalls).toEqual([]);
    expect(last.content).toContain('The reporter wrote runs/r1/report.md.');
    expect(last.content).toContain('offline heuristic');
    expect(last.model).toBe(OFFLINE_MODEL_NAME);
  });

  it('reports honestly on its last turn when the budget stopped the run', async () => {
    const model = new OfflineModel();
    const messages: Message[] = [
      { role: 'user', content: 'Compare the documents.' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'd1', name: 'delegate', arguments: { tasks: [] }, raw: '{"tasks":[]}' }],
      },
      {
        role: 'tool',
        toolCallId: 'd1',
        name: 'delegate',
        content: 'Error: cancelled',
        isError: true,
      },
      {
        role: 'user',
        content: `The run's tokens budget is used up. Results so far:\n${formatDelegationResults([done('researcher-1', 'ok')])}`,
      },
    ];
    const last = await model.complete({
      messages,
      tools: [tool('list_dir'), tool('read_file')],
      caller: { name: 'coordinator', role: 'coordinator' },
    });
    expect(last.toolCalls).toEqual([]);
    expect(last.content).toBe(
      '(offline heuristic model) The run stopped at its budget. 1 sub-agent completed before the stop. No report was written.',
    );
  });

  it('reads the named document and publishes extractive findings when it is a researcher', async () => {
    const model = createModel({ provider: 'offline' });
    const tools = [tool('read_file'), tool('list_dir'), tool('publish_findings')];
    const messages: Message[] = [
      {
        role: 'user',
        content: 'Read "corpus/battery-storage-market.md" and publish your findings.',
      },
    ];
    const request = (): ModelRequest => ({
      messages,
      tools,
      caller: { name: 'researcher-1', role: 'researcher' },
    });

    const read = await model.complete(request());
    expect(read.toolCalls.map((call) => call.arguments)).toEqual([
      { path: 'corpus/battery-storage-market.md' },
    ]);
    answer(messages, read, () => ({ content: market }));

    const publish = await model.complete(request());
    expect(publish.toolCalls[0]?.name).toBe('publish_findings');
    const findings = publish.toolCalls[0]?.arguments as any;
    expect(findings.source).toBe('corpus/battery-storage-market.md');
    expect(findings.title).toBe('Grid Battery Storage Market Review 2025');
    expect(findings.keyPoints.length).toBeGreaterThan(2);
    expect(findings.figures.some((figure: string) => figure.includes('$115 per kWh'))).toBe(true);
    expect(market).toContain(findings.keyPoints[0]);
    answer(messages, publish, () => ({ content: 'Published on findings.' }));

    const done = await model.complete(request());
    expect(done.toolCalls).toEqual([]);
    expect(done.content).toContain('Published findings for 1 document');
  });

  it('notes each channel message and aggregates after the close notice when it is the analyst', async () => {
    const model = new OfflineModel();
    const a = extractFindings('market.md', market);
    const b = extractFindings('grid.md', grid);
    const messages: Message[] = [
      { role: 'user', content: 'Aggregate the findings.' },
      {
        role: 'user',
        content: `[message on channel "findings" from researcher-1]\n${JSON.stringify(a)}`,
      },
    ];
    const request = (): ModelRequest => ({
      messages,
      tools: [tool('read_file')],
      caller: { name: 'analyst-1', role: 'analyst' },
    });

    const interim = await model.complete(request());
    expect(interim.toolCalls).toEqual([]);
    expect(interim.content).toContain('Noted Grid Battery Storage Market Review 2025');
    messages.push({ role: 'assistant', content: interim.content });
    messages.push({
      role: 'user',
      content: `[message on channel "findings" from researcher-2]\n${JSON.stringify(b)}`,
    });
    messages.push({
      role: 'user',
      content: '[channel "findings" closed: no more messages will arrive]',
    });

    const aggregate = await model.complete(request());
    expect(aggregate.content).toContain('## Analysis across 2 sources');
    expect(aggregate.content).toContain('### Common themes');
    expect(aggregate.content).toContain('| market.md |');
    expect(aggregate.content).toContain('| grid.md |');
    expect(aggregate.content).toContain(HEURISTIC_NOTE);
  });

  it('writes report.md from the analysis in its task when it is the reporter', async () => {
    const model = new OfflineModel();
    const messages: Message[] = [
      {
        role: 'user',
        content:
          'Write report.md, the final report for: Compare storage.\n\nAnalysis:\n## Analysis Z',
      },
    ];
    const request = (): ModelRequest => ({
      messages,
      tools: [tool('write_file'), tool('read_file')],
      caller: { name: 'reporter-1', role: 'reporter' },
    });
    const write = await model.complete(request());
    const args = write.toolCalls[0]?.arguments as any;
    expect(write.toolCalls[0]?.name).toBe('write_file');
    expect(args.path).toBe('report.md');
    expect(args.content).toMatch(/^# Compare storage\n/);
    expect(args.content).toContain('## Analysis Z');
    answer(messages, write, () => ({ content: 'Wrote 812 bytes to report.md' }));
    const done = await model.complete(request());
    expect(done.content).toContain('Wrote report.md');
  });

  it('tells the truth about failures when a tool result is an error', async () => {
    const model = new OfflineModel();
    const messages: Message[] = [{ role: 'user', content: 'Read "missing.md".' }];
    const request = (): ModelRequest => ({
      messages,
      tools: [tool('read_file'), tool('publish_findings')],
      caller: { name: 'researcher-1', role: 'researcher' },
    });
    answer(messages, await model.complete(request()), () => ({
      content: 'Error: no such file',
      isError: true,
    }));
    const done = await model.complete(request());
    expect(done.content).toContain('could not read');
    expect(done.content).toContain('no such file');
  });

  it('fills a custom channel payload from its field names when the role publishes on one', async () => {
    const model = new OfflineModel();
    const publish = tool('publish_summaries', {
      file: { type: 'string' },
      headline: { type: 'string' },
      wordCount: { type: 'integer' },
      figures: { type: 'array', items: { type: 'string' } },
    });
    const messages: Message[] = [{ role: 'user', content: 'Summarize "grid.md".' }];
    const request = (): ModelRequest => ({
      messages,
      tools: [tool('read_file'), publish],
      caller: { name: 'summarizer-1', role: 'summarizer' },
    });
    answer(messages, await model.complete(request()), () => ({ content: grid }));
    const published = await model.complete(request());
    expect(published.toolCalls[0]?.name).toBe('publish_summaries');
    const payload = published.toolCalls[0]?.arguments as any;
    expect(payload.file).toBe('grid.md');
    expect(payload.wordCount).toBe(grid.match(/\S+/g)?.length);
    expect(payload.figures.length).toBeGreaterThan(0);
    expect(typeof payload.headline).toBe('string');
  });

  it('puts other payloads side by side after the close notice when it subscribes to a custom channel', async () => {
    const model = new OfflineModel();
    const messages: Message[] = [
      { role: 'user', content: 'Collect the summaries.' },
      {
        role: 'user',
        content:
          '[message on channel "summaries" from summarizer-2]\n{"file":"b.md","wordCount":20}',
      },
      {
        role: 'user',
        content:
          '[message on channel "summaries" from summarizer-1]\n{"file":"a.md","wordCount":10}',
      },
      { role: 'user', content: '[channel "summaries" closed: no more messages will arrive]' },
    ];
    const done = await model.complete({ messages, caller: { name: 'digest-1', role: 'digest' } });
    expect(done.content).toContain('| from | file | wordCount |');
    expect(done.content).toContain('| summarizer-1 | a.md | 10 |\n| summarizer-2 | b.md | 20 |');
    expect(done.content).toContain('| **total** |  | **30** |');
  });

  it('lists the workspace and answers honestly when it is a chat agent', async () => {
    const model = new OfflineModel();
    const messages: Message[] = [{ role: 'user', content: 'What is here?' }];
    const request = (): ModelRequest => ({
      messages,
      tools: [tool('list_dir'), tool('read_file')],
    });
    answer(messages, await model.complete(request()), () => ({ content: 'a.md\nb.md' }));
    const done = await model.complete(request());
    expect(done.content).toContain('not a language model');
    expect(done.content).toContain('a.md, b.md');
  });

  it('estimates usage from text length and answers the same request the same way', async () => {
    const model = new OfflineModel({ seed: 7 });
    const request: ModelRequest = { messages: [{ role: 'user', content: 'x'.repeat(400) }] };
    const one = await model.complete(request);
    const two = await model.complete(request);
    expect(one).toEqual(two);
    expect(one.usage.inputTokens).toBe(Math.ceil((400 + 2) / 4));
    expect(one.usage.outputTokens).toBeGreaterThan(0);
    expect(model.spec).toEqual({ provider: 'offline', seed: 7 });
  });

  it('streams deltas ending with the whole response', async () => {
    const model = new OfflineModel();
    const parts = [];
    for await (const part of model.stream({ messages: [{ role: 'user', content: 'hi' }] })) {
      parts.push(part);
    }
    expect(parts.at(-1)?.type).toBe('finish');
    expect(parts.filter((part) => part.type === 'text-delta').length).toBeGreaterThan(1);
  });

  it('pauses only the roles named in the delay variable when it lists roles', async () => {
    const model = new OfflineModel({}, { [OFFLINE_DELAY_ENV]: 'reporter=60000,0' });
    const controller = new AbortController();
    let settled = false;
    const slow = model
      .complete(
        { messages: [{ role: 'user', content: 'hi' }], caller: { name: 'r', role: 'reporter' } },
        { signal: controller.signal },
      )
      .finally(() => {
        settled = true;
      });
    // Another role's call is answered at once while the reporter's still waits.
    const quick = await model.complete({
      messages: [{ role: 'user', content: 'hi' }],
      caller: { name: 'a', role: 'analyst' },
    });
    expect(quick.content.length).toBeGreaterThan(0);
    expect(settled).toBe(false);
    controller.abort();
    await expect(slow).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('rejects with code cancelled when the signal is already aborted', async () => {
    const model = new OfflineModel({}, { [OFFLINE_DELAY_ENV]: '50' });
    const controller = new AbortController();
    controller.abort();
    await expect(
      model.complete({ messages: [] }, { signal: controller.signal }),
    ).rejects.toMatchObject({ code: 'cancelled' });
  });
});

describe('extractFindings', () => {
  it('takes the title from the first heading and keeps measured figures when given markdown', () => {
    const findings = extractFindings('grid.md', grid);
    expect(findings.title).toBe('Keeping the Lights On: Storage and Grid Reliability');
    expect(findings.summary).toContain('Batteries have become the fastest tool');
    expect(findings.figures.some((figure) => figure.includes('58%'))).toBe(true);
    expect(JSON.stringify(findings)).not.toContain('Fictional sample');
  });
});

describe('aggregateMessages', () => {
  it('says there is nothing to collect when no message arrived', () => {
    expect(aggregateMessages([])).toContain('No messages arrived');
  });
});

describe('aggregateFindings', () => {
  it('says there is nothing to aggregate when no findings arrived', () => {
    expect(aggregateFindings([])).toContain('No findings arrived');
  });
});
