import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { runPipeline } from '../../src/job/pipeline.js';
import type { ModelSpec } from '../../src/model/model.js';
import { findingsChannel } from '../../src/roles/builtin.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { FileJournal, readJournal } from '../../src/runtime/resume/journal.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from '../integration/helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// A researcher that can be held at a gate the test opens.
const scout = defineRole({
  name: 'scout',
  description: 's',
  system: 's',
  tools: [userTool('wait_for_file')],
  publishes: [findingsChannel],
});

const finding = (source: string) => ({
  source,
  title: `About ${source}`,
  summary: `What ${source} says.`,
  keyPoints: ['a point'],
  figures: ['42 GW in 2023'],
});

// The analyst answers every message with a note; the order of its notes is the order it read the findings in.
const model: ModelSpec = {
  provider: 'scripted',
  script: {
    steps: [
      {
        match: { agent: 'scout-1', call: 1 },
        toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate-1' } }],
      },
      {
        match: { agent: 'scout-1', call: 2, conversationContains: 'solar-2024.md' },
        toolCalls: [{ name: 'publish_findings', arguments: finding('solar-2024') }],
      },
      {
        match: { agent: 'scout-1', call: 2 },
        toolCalls: [{ name: 'publish_findings', arguments: finding('solar') }],
      },
      { match: { agent: 'scout-1' }, content: 'scout-1 done' },
      {
        match: { agent: 'scout-2', call: 1 },
        toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate-2' } }],
      },
      {
        match: { agent: 'scout-2', call: 2 },
        toolCalls: [{ name: 'publish_findings', arguments: finding('wind.md') }],
      },
      { match: { agent: 'scout-2' }, content: 'scout-2 done' },
      { match: { role: 'analyst', lastUserContains: 'closed' }, content: 'analysis done' },
      { match: { role: 'analyst', lastUserContains: 'wind.md' }, content: 'noted wind' },
      { match: { role: 'analyst', lastUserContains: 'solar' }, content: 'noted solar' },
      { match: { role: 'analyst' }, content: 'waiting for findings', repeat: true },
      { match: { role: 'reporter' }, content: 'report written' },
    ],
  },
};

async function run(workspace: string, journalPath: string, gates: boolean, solar = 'solar.md') {
  const journal = new FileJournal(journalPath, { runId: 'run-p', task: 'Compare.' });
  const { runtime, events } = makeRuntime({
    roles: [scout],
    workspace,
    grants: ['read', 'write'],
    model,
    runId: 'run-p',
    threads: 1,
    journal,
  });
  if (gates) {
    // The first run: wind (scout-2) is read first, then solar, each in a turn of its own.
    writeFileSync(join(workspace, 'gate-2'), 'open');
    runtime.bus.on('message.received', (event) => {
      if (event.role === 'analyst') writeFileSync(join(workspace, 'gate-1'), 'open');
    });
  }
  const result = await runPipeline({
    runtime,
    topics: [solar, 'wind.md'],
    goal: 'Compare solar and wind.',
    roles: { researcher: 'scout' },
  });
  await runtime.close();
  journal.close();
  return { result, events };
}

const analystReads = (events: readonly AgentEvent[]) =>
  ofType(events, 'message.received')
    .filter((event) => event.role === 'analyst')
    .map((event) => event.from);

describe('a resumed pipeline', () => {
  it('gives a replaying subscriber its messages in the recorded order, so no model call is made again', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-pipeline-resume-'));
    dirs.push(workspace);
    const path = join(workspace, 'journal.jsonl');
    const first = await run(workspace, path, true);
    expect(first.result.status).toBe('completed');
    expect(analystReads(first.events)).toEqual(['scout-2', 'scout-1']);
    const inbox = [...readJournal(path).entries.values()]
      .flat()
      .filter((entry) => entry.kind === 'inbox');
    expect(inbox.length).toBeGreaterThanOrEqual(2);

    // On resume both scouts replay at once (their gates' results are recorded), solar first.
    const second = await run(workspace, path, false);
    expect(second.result.status).toBe('completed');
    expect(second.result.analysis.final).toBe(first.result.analysis.final);
    expect(analystReads(second.events)).toEqual(['scout-2', 'scout-1']);
    expect(ofType(second.events, 'journal.diverged')).toEqual([]);
    const responses = ofType(second.events, 'model.response');
    expect(responses.length).toBe(ofType(first.events, 'model.response').length);
    expect(responses.filter((event) => event.replayed !== true)).toEqual([]);
    expectWellFormed(second.events);
  });

  it('goes live when a message its journal recorded does not come, and takes what came instead', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-pipeline-resume-'));
    dirs.push(workspace);
    const path = join(workspace, 'journal.jsonl');
    await run(workspace, path, true);

    // Another topic: that researcher is a new agent and publishes another finding.
    const second = await run(workspace, path, false, 'solar-2024.md');
    expect(second.result.status).toBe('completed');
    expect(second.result.analysis.final).toBe('analysis done');
    expect(analystReads(second.events)).toEqual(['scout-2', 'scout-1']);
    const analyst = (type: string) =>
      second.events.filter((event) => event.role === 'analyst' && event.type === type);
    expect(analyst('journal.diverged')).toHaveLength(1);
    // Its first two calls (the task, then wind) replayed; the rest went live.
    const replayed = ofType(second.events, 'model.response').filter(
      (event) => event.role === 'analyst' && event.replayed === true,
    );
    expect(replayed).toHaveLength(2);
    expectWellFormed(second.events);
  });
});

describe('a publisher retried after its thread died', () => {
  it('is not delivered twice: what it publishes again as it replays its journal reaches nobody again', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-pipeline-retry-'));
    dirs.push(workspace);
    const journal = new FileJournal(join(workspace, 'journal.jsonl'), {
      runId: 'run-t',
      task: 't',
    });
    const crier = defineRole({
      name: 'crier',
      description: 'c',
      system: 'c',
      tools: [userTool('exit_process')],
      publishes: [findingsChannel],
      retry: { maxRetries: 2, backoffMs: 0, maxRestarts: 5, periodMs: 60_000 },
    });
    const { runtime, events } = makeRuntime({
      roles: [crier],
      workspace,
      runId: 'run-t',
      threads: 1,
      // In the actors' own thread, so exit_process takes it down with both actors.
      toolIsolation: 'thread',
      journal,
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'crier', lastUserContains: 'go' },
              toolCalls: [{ name: 'publish_findings', arguments: finding('solar') }],
              repeat: true,
            },
            {
              match: { role: 'crier', lastToolResultContains: 'Published' },
              toolCalls: [{ name: 'exit_process' }],
              repeat: true,
            },
            {
              match: { role: 'crier', lastToolResultIsError: true },
              content: 'crier done',
              repeat: true,
            },
            {
              match: { role: 'analyst', lastUserContains: 'closed' },
              content: 'analysis done',
              repeat: true,
            },
            { match: { role: 'analyst' }, content: 'noted', repeat: true },
          ],
        },
      },
    });
    const published = runtime.spawn('crier', 'go');
    const analyst = runtime.spawn('analyst', 'Analyse the findings as they arrive.');
    expect(await published.result).toMatchObject({ status: 'completed', final: 'crier done' });
    expect(await analyst.result).toMatchObject({ status: 'completed', final: 'analysis done' });
    await runtime.close();
    journal.close();

    expect(ofType(events, 'agent.progress').length).toBeGreaterThanOrEqual(1);
    expect(ofType(events, 'message.sent').map((event) => event.messageId)).toEqual(['crier-1/m1']);
    const reads = ofType(events, 'message.received').filter((event) => event.role === 'analyst');
    expect(new Set(reads.map((event) => event.messageId))).toEqual(new Set(['crier-1/m1']));
    expect(
      ofType(events, 'journal.diverged').filter((event) => event.agentId === 'crier-1'),
    ).toEqual([]);
    expectWellFormed(events);
  });
});
