import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/job/coordinator.js';
import type { ScriptStep } from '../../src/model/script.js';
import { DEFAULT_DIGEST_CHARS } from '../../src/roles/delegation-digest.js';
import { defineRole } from '../../src/roles/role.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const N = 1000;
// Seeded: the same failures in the middle of the fan-out every run.
const FAILING = [137, 138, 139, 401, 512, 640, 641, 777, 902, 999];
const reasonOf = (i: number): string =>
  `worker-${i} was refused by the provider: its task names missing-${i}.txt, which is not in the workspace; delegate it again with a file that exists.`;

// Each worker has its own small script (a role model), so the coordinator's
// thousand-task call never travels to the threads.
const worker = defineRole({
  name: 'worker',
  description: 'w',
  system: 'w',
  retry: 'fail_fast',
  model: {
    provider: 'scripted',
    script: {
      steps: [
        ...FAILING.map(
          (i): ScriptStep => ({
            match: { agent: `worker-${i}` },
            error: { code: 'model.bad_request', status: 400, message: reasonOf(i) },
          }),
        ),
        { content: `Finding: ${'the corpus says so; '.repeat(12)}`, repeat: true },
      ],
    },
  },
});

describe('A fan-out of 1,000 sub-agents in one delegate call', () => {
  it('gives the coordinator every result accounted for within the budget, failures whole, the rest on disk and through wait_agents', async () => {
    const out = mkdtempSync(join(tmpdir(), 'troupe-fanout-'));
    dirs.push(out);
    const coordinator: ScriptStep[] = [
      {
        match: { call: 1 },
        toolCalls: [
          {
            name: 'delegate',
            arguments: {
              tasks: Array.from({ length: N }, (_, index) => ({
                role: 'worker',
                task: `part ${index + 1}`,
              })),
            },
          },
        ],
      },
      {
        match: { call: 2 },
        toolCalls: [
          { name: 'wait_agents', arguments: { status: 'not_completed' } },
          { name: 'wait_agents', arguments: { ids: ['worker-500'] } },
          { name: 'wait_agents', arguments: { status: 'completed', offset: 900 } },
        ],
      },
      { match: { call: 3 }, content: 'done' },
    ];
    const { runtime, events } = makeRuntime({
      roles: [worker],
      threads: 2,
      toolModules: [],
      outDir: out,
      model: { provider: 'scripted', script: { steps: [] } },
    });
    const job = await runJob({
      task: 'split it',
      runtime,
      model: { provider: 'scripted', script: { steps: coordinator } },
    });
    expect(job.status).toBe('partial');
    expect(job.results.size).toBe(N);
    expectWellFormed(events, ['coordinator']);

    const results = ofType(events, 'tool.result').filter(
      (event) => event.agentId === 'coordinator',
    );
    const digest = results.find((event) => event.name === 'delegate')?.content ?? '';
    // The digest the model read: within its budget (under the registry's cut), all 1,000 counted.
    expect(digest.length).toBeLessThanOrEqual(DEFAULT_DIGEST_CHARS);
    expect(digest).not.toContain('[truncated');
    const counts = /^1000 sub-agents: (\d+) completed, (\d+) failed\.$/m.exec(digest);
    expect(counts?.slice(1).map(Number)).toEqual([N - FAILING.length, FAILING.length]);
    // Every failure, in the middle of the fan-out or not, with its whole reason, before the answers.
    for (const i of FAILING) {
      expect(digest).toContain(`- worker-${i} failed: ${reasonOf(i)}\n`);
    }
    expect(digest.lastIndexOf(reasonOf(999))).toBeLessThan(digest.indexOf('[worker-1] '));
    // Answers shown plus those named as more make up every completed one.
    const shown = digest.match(/^\[worker-\d+\] /gm) ?? [];
    const more = Number(
      /^- (\d+) more completed, read them with wait_agents/m.exec(digest)?.[1] ?? 0,
    );
    expect(shown.length + more).toBe(N - FAILING.length);

    // The whole results, one line each, in the run folder.
    const path = /^Every result in full: (.+) \(one JSON line per sub-agent\)\.$/m.exec(
      digest,
    )?.[1];
    expect(path).toBe(join(out, 'delegations', 'coordinator-1.jsonl'));
    const lines = readFileSync(path as string, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(N);
    expect(lines.filter((line) => line.status === 'failed').map((line) => line.agentId)).toEqual(
      FAILING.map((i) => `worker-${i}`),
    );
    expect(lines[499]).toMatchObject({ agentId: 'worker-500', status: 'completed' });
    expect(lines[499].final).toContain('the corpus says so');

    // And through wait_agents: the failures, one by id whole, a page of answers.
    const waits = results.filter((event) => event.name === 'wait_agents');
    expect(waits.map((event) => event.ok)).toEqual([true, true, true]);
    expect(waits[0]?.content.split('\n')[0]).toBe(
      `${FAILING.length} sub-agents: ${FAILING.length} failed.`,
    );
    for (const i of FAILING) expect(waits[0]?.content).toContain(reasonOf(i));
    expect(waits[1]?.content).toContain(`[worker-500] ${lines[499].final}`);
    expect(waits[2]?.content).toMatch(/^Results 901–990 of 990 completed \(of 1000 waited for\)\./);
  });
});
