import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/job/coordinator.js';
import type { ModelSpec } from '../../src/model/model.js';
import type { ScriptStep } from '../../src/model/script.js';
import { defineRole } from '../../src/roles/role.js';
import { FileJournal, readJournal } from '../../src/runtime/resume/journal.js';
import { summaryStep } from '../helpers/scripts.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from './helpers.js';

// A sub-agent in a worker thread compresses its history (the run's window,
// no option on its role); its summaries go into the run's journal, so a
// resume replays them with the rest: no model call is made again.

const PAGES = 12;
const TASK = 'Read the chain of pages.';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const reader = defineRole({
  name: 'reader',
  description: 'Follows a chain of pages.',
  system: 'You read pages.',
  tools: ['read_file'],
  maxSteps: PAGES + 4,
  retry: 'fail_fast',
});

// Every decision depends on the conversation only (the last tool result), so
// a fresh model answers a resumed agent as the first run did.
function script(): ModelSpec {
  const steps: ScriptStep[] = [
    {
      ...summaryStep('Pages read so far; each points to the next.'),
      usage: { inputTokens: 900, outputTokens: 60 },
    },
    {
      match: { role: 'coordinator', lastUserContains: 'Follow the chain' },
      toolCalls: [{ name: 'delegate', arguments: { tasks: [{ role: 'reader', task: TASK }] } }],
      repeat: true,
    },
    {
      match: { role: 'coordinator', lastToolResultContains: 'reader-' },
      content: 'The chain is read.',
      repeat: true,
    },
    {
      match: { role: 'reader', lastUserContains: TASK },
      toolCalls: [{ name: 'read_file', arguments: { path: 'p1.md' } }],
      repeat: true,
    },
    {
      match: { role: 'reader', lastToolResultContains: 'the end' },
      content: `read ${PAGES} pages`,
      repeat: true,
    },
  ];
  for (let page = 2; page <= PAGES; page += 1) {
    steps.push({
      match: { role: 'reader', lastToolResultContains: `next: p${page}.md` },
      toolCalls: [{ name: 'read_file', arguments: { path: `p${page}.md` } }],
      repeat: true,
    });
  }
  return { provider: 'scripted', script: { steps } };
}

function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-compress-journal-'));
  dirs.push(dir);
  for (let page = 1; page <= PAGES; page += 1) {
    const next = page === PAGES ? 'the end' : `next: p${page + 1}.md`;
    writeFileSync(
      join(dir, `p${page}.md`),
      `Page ${page}. ${'lorem ipsum dolor '.repeat(160)}${next}\n`,
    );
  }
  return dir;
}

async function run(dir: string, path: string) {
  const journal = new FileJournal(path, { runId: 'run-c', task: 'Follow the chain.' });
  const { runtime, events } = makeRuntime({
    roles: [reader],
    model: script(),
    workspace: dir,
    runId: 'run-c',
    threads: 1,
    journal,
    compression: { contextWindow: 8192, keepTurns: 1 },
  });
  const job = await runJob({ task: 'Follow the chain.', runtime });
  await runtime.close();
  journal.close();
  return { job, events };
}

describe('history compression in a worker, with the run journal', () => {
  it('compresses a sub-agent by the run setting and replays its summaries on resume', async () => {
    const dir = workspace();
    const path = join(dir, 'journal.jsonl');
    const first = await run(dir, path);
    expect(first.job).toMatchObject({ status: 'completed', final: 'The chain is read.' });
    const compressed = ofType(first.events, 'history.compressed');
    expect(compressed.length).toBeGreaterThan(0);
    expect(compressed.every((event) => event.role === 'reader')).toBe(true);
    // The summary's usage reaches the run's totals.
    expect(compressed.every((event) => event.usage?.inputTokens === 900)).toBe(true);
    expect(first.job.usage.inputTokens).toBeGreaterThanOrEqual(900 * compressed.length);
    // Each summary is a model entry of the reader's journal.
    const entries = [...readJournal(path).entries.values()].flat();
    const summaries = entries.filter(
      (entry) => entry.kind === 'model' && entry.response.content.startsWith('Pages read so far'),
    );
    expect(summaries).toHaveLength(compressed.length);
    expectWellFormed(first.events, ['coordinator']);

    const second = await run(dir, path);
    expect(second.job.final).toBe(first.job.final);
    expect(ofType(second.events, 'journal.diverged')).toEqual([]);
    const live = ofType(second.events, 'model.response').filter((event) => event.replayed !== true);
    expect(live).toEqual([]);
    const again = ofType(second.events, 'history.compressed');
    expect(again).toHaveLength(compressed.length);
    expect(again.every((event) => event.replayed === true && event.usage === undefined)).toBe(true);
    expect(second.job.usage).toEqual({ inputTokens: 0, outputTokens: 0 });
    expectWellFormed(second.events, ['coordinator']);
  });
});
