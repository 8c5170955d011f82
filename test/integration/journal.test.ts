import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/job/coordinator.js';
import type { ModelSpec } from '../../src/model/model.js';
import type { ScriptStep } from '../../src/model/script.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { FileJournal, readJournal } from '../../src/runtime/resume/journal.js';
import { closeRuntimes, expectWellFormed, FAULT_TOOLS, makeRuntime, ofType } from './helpers.js';

const LEDGER_TOOLS = fileURLToPath(new URL('../fixtures/tools/ledger.mjs', import.meta.url));

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const clerk = defineRole({
  name: 'clerk',
  description: 'Records one entry in the ledger.',
  system: 'You record entries.',
  tools: [userTool('append_ledger'), 'read_file'],
  retry: 'fail_fast',
});

const NAMES = ['alpha', 'beta', 'gamma'];

// Decisions depend on the conversation only, never on call counts, so a
// fresh model answers a resumed agent's next live call as the first run did.
function script(): ModelSpec {
  const steps: ScriptStep[] = [
    {
      match: { role: 'coordinator', lastUserContains: 'Keep the ledger' },
      toolCalls: [
        {
          name: 'delegate',
          arguments: { tasks: NAMES.map((name) => ({ role: 'clerk', task: `Record ${name}.` })) },
        },
      ],
      usage: { inputTokens: 1000, outputTokens: 100 },
      repeat: true,
    },
    {
      match: { role: 'coordinator', lastToolResultContains: 'clerk-' },
      content: 'The ledger holds alpha, beta and gamma.',
      usage: { inputTokens: 2000, outputTokens: 200 },
      repeat: true,
    },
  ];
  for (const name of NAMES) {
    steps.push(
      {
        match: { role: 'clerk', lastUserContains: `Record ${name}.` },
        toolCalls: [
          { name: 'read_file', arguments: { path: 'notes.md' } },
          { name: 'append_ledger', arguments: { entry: name } },
        ],
        repeat: true,
      },
      {
        match: {
          role: 'clerk',
          conversationContains: `Record ${name}.`,
          lastToolResultIsError: true,
        },
        content: `${name}: outcome unknown`,
        repeat: true,
      },
      {
        match: { role: 'clerk', conversationContains: `Record ${name}.` },
        content: `${name} recorded`,
        repeat: true,
      },
    );
  }
  return { provider: 'scripted', script: { steps } };
}

function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-journal-run-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'notes.md'), 'Notes for the clerks.\n');
  return dir;
}

async function run(dir: string, journalPath: string) {
  const journal = new FileJournal(journalPath, { runId: 'run-j', task: 'Keep the ledger.' });
  const { runtime, events } = makeRuntime({
    roles: [clerk],
    model: script(),
    workspace: dir,
    runId: 'run-j',
    toolModules: [LEDGER_TOOLS],
    threads: 1,
    journal,
  });
  const job = await runJob({ task: 'Keep the ledger.', runtime });
  await runtime.close();
  journal.close();
  return { job, events };
}

const ledger = (dir: string): string[] =>
  existsSync(join(dir, 'ledger.txt'))
    ? readFileSync(join(dir, 'ledger.txt'), 'utf8').trim().split('\n').sort()
    : [];

describe('the run journal', () => {
  it('journals every model response and tool result, and a resume from it calls no model and runs no tool', async () => {
    const dir = workspace();
    const path = join(dir, 'journal.jsonl');
    const first = await run(dir, path);
    expect(first.job).toMatchObject({ status: 'completed' });
    expect(ledger(dir)).toEqual(NAMES);
    const recorded = readJournal(path);
    // 2 coordinator responses, and per clerk 2 responses, 2 results and 1 intent.
    const all = [...recorded.entries.values()].flat();
    expect(all.filter((entry) => entry.kind === 'model')).toHaveLength(2 + 2 * NAMES.length);
    expect(all.filter((entry) => entry.kind === 'tool.started')).toHaveLength(NAMES.length);
    expect(recorded.notes.filter((note) => note.kind === 'spawn')).toHaveLength(NAMES.length);

    const second = await run(dir, path);
    expect(second.job.final).toBe(first.job.final);
    expect(ledger(dir)).toEqual(NAMES);
    const responses = ofType(second.events, 'model.response');
    expect(responses.length).toBe(2 + 2 * NAMES.length);
    expect(responses.every((event) => event.replayed === true)).toBe(true);
    expect(second.job.usage).toEqual({ inputTokens: 0, outputTokens: 0 });
    expect(
      ofType(second.events, 'tool.result').filter((event) => event.name !== 'delegate'),
    ).toSatisfy((results: { replayed?: boolean }[]) =>
      results.every((result) => result.replayed === true),
    );
    expectWellFormed(second.events, ['coordinator']);
  });

  it('resumes from every cut of the journal: each recorded step replays, the rest goes live, nothing runs twice', async () => {
    const reference = workspace();
    const referencePath = join(reference, 'journal.jsonl');
    const full = await run(reference, referencePath);
    const lines = readFileSync(referencePath, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
    const liveResponses = ofType(full.events, 'model.response').length;

    // Every prefix of the journal, as a crash after that line would leave it (the first line is the header).
    for (let keep = 1; keep <= lines.length; keep += 1) {
      const dir = workspace();
      const path = join(dir, 'journal.jsonl');
      writeFileSync(path, `${lines.slice(0, keep).join('\n')}\n`);
      const byAgent = [...readJournal(path).entries];
      const kept = byAgent.flatMap(([, entries]) => entries);
      // Call ids are unique per agent, not per run.
      const calls = (kind: 'tool.started' | 'tool'): Set<string> => {
        const found = new Set<string>();
        for (const [key, entries] of byAgent) {
          for (const entry of entries) {
            if (entry.kind === kind && entry.name === 'append_ledger')
              found.add(`${key}/${entry.callId}`);
          }
        }
        return found;
      };
      const started = calls('tool.started');
      const finished = calls('tool');
      // The cut run's ledger: what ran before the crash (intent recorded means the entry may be there).
      const interrupted = [...started].filter((call) => !finished.has(call));
      const resumed = await run(dir, path);
      const events = resumed.events;
      const live = ofType(events, 'model.response').filter((event) => event.replayed !== true);
      const replayed = ofType(events, 'model.response').filter((event) => event.replayed === true);
      const keptModels = kept.filter((entry) => entry.kind === 'model').length;
      expect(replayed.length, `cut after line ${keep}`).toBe(keptModels);
      expect(live.length + keptModels, `cut after line ${keep}`).toBe(liveResponses);
      // The ledger of this workspace only has what the resume ran: never an entry whose intent was journaled.
      expect(ledger(dir).length, `cut after line ${keep}`).toBe(NAMES.length - started.size);
      expect(ofType(events, 'journal.diverged')).toEqual([]);
      const unknown = ofType(events, 'tool.result').filter(
        (event) => event.name === 'append_ledger' && !event.ok,
      );
      expect(unknown.length, `cut after line ${keep}`).toBe(interrupted.length);
      if (interrupted.length === 0) expect(resumed.job.final).toBe(full.job.final);
      expectWellFormed(events, ['coordinator']);
    }
  }, 180_000);

  it('continues an actor retried after its thread died from its last journaled step, not from its task', async () => {
    const dir = workspace();
    const journal = new FileJournal(join(dir, 'journal.jsonl'), { runId: 'run-r', task: 't' });
    const crasher = defineRole({
      name: 'crasher',
      description: 'c',
      system: 'c',
      tools: [userTool('append_ledger'), userTool('exit_process')],
      retry: { maxRetries: 2, backoffMs: 0, maxRestarts: 5, periodMs: 60_000 },
    });
    const { runtime, events } = makeRuntime({
      roles: [crasher],
      workspace: dir,
      runId: 'run-r',
      threads: 1,
      toolModules: [FAULT_TOOLS, LEDGER_TOOLS],
      // In the actor's own thread, so exit_process takes the actor's thread down.
      toolIsolation: 'thread',
      journal,
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { lastUserContains: 'go' },
              toolCalls: [{ name: 'append_ledger', arguments: { entry: 'once' } }],
              repeat: true,
            },
            {
              match: { lastToolResultContains: 'recorded once' },
              toolCalls: [{ name: 'exit_process' }],
              repeat: true,
            },
            {
              match: { lastToolResultIsError: true },
              content: 'the exit is in doubt; stopping here',
              repeat: true,
            },
          ],
        },
      },
    });
    runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 't' });
    const result = await runtime.spawn('crasher', 'go', { parent: 'coordinator' }).result;
    expect(result).toMatchObject({
      status: 'completed',
      final: 'the exit is in doubt; stopping here',
    });
    // The ledger entry was made once; the thread-killing call was journaled as started and not run again.
    expect(ledger(dir)).toEqual(['once']);
    const responses = ofType(events, 'model.response');
    expect(responses.map((event) => event.replayed === true)).toEqual([
      false,
      false,
      true,
      true,
      false,
    ]);
    const exits = ofType(events, 'tool.result').filter((event) => event.name === 'exit_process');
    expect(exits).toHaveLength(1);
    expect(exits[0]?.content).toContain('interrupted by a crash');
    expect(ofType(events, 'agent.progress')).toHaveLength(1);
    await runtime.close();
    journal.close();
  });
});
