import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/job/coordinator.js';
import type { ScriptStep } from '../../src/model/script.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from '../integration/helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Workers act on their task text: "fail" fails for good, "hold" waits until
// cancelled, anything else answers at once.
const worker = defineRole({
  name: 'worker',
  description: 'Does one task.',
  system: 'w',
  tools: [userTool('wait_for_cancel'), userTool('wait_for_file')],
  retry: 'fail_fast',
});
const workerSteps: ScriptStep[] = [
  {
    match: { role: 'worker', lastUserContains: 'fail' },
    error: { code: 'tool.failed', message: 'this task cannot be done' },
  },
  { match: { role: 'worker', lastUserContains: 'hold' }, toolCalls: [{ name: 'wait_for_cancel' }] },
  { match: { role: 'worker' }, content: 'worker answer', repeat: true },
];

function coordinatorScript(
  delegate: Record<string, unknown>,
  final = 'all reported',
): ScriptStep[] {
  return [
    {
      match: { role: 'coordinator', call: 1 },
      toolCalls: [{ name: 'delegate', arguments: delegate }],
    },
    { match: { role: 'coordinator' }, content: final },
  ];
}

const tasks = (...texts: string[]) => texts.map((task) => ({ role: 'worker', task }));

async function delegateWith(delegate: Record<string, unknown>) {
  const { runtime, events } = makeRuntime({
    roles: [worker],
    model: {
      provider: 'scripted',
      script: { steps: [...coordinatorScript(delegate), ...workerSteps] },
    },
  });
  const job = await runJob({ task: 'coordinate', runtime });
  const delegated = ofType(events, 'tool.result').find((event) => event.name === 'delegate');
  // What the model read; the results themselves, in task order, from the job.
  const digest = delegated?.content ?? '';
  const results = [...job.results.values()]
    .sort((a, b) => a.agentId.localeCompare(b.agentId, 'en', { numeric: true }))
    .map((result) => ({
      agentId: result.agentId,
      status: result.status,
      error: result.error?.message,
    }));
  for (const result of results) {
    if (result.error !== undefined) expect(digest).toContain(result.error);
  }
  return { job, events, results, digest };
}

describe('runJob', () => {
  it('wraps the run in run.started and run.finished with the coordinator spawned and finished', async () => {
    const { job, events } = await delegateWith({ tasks: tasks('a', 'b') });
    expect(job).toMatchObject({ status: 'completed', final: 'all reported' });
    expect(events[0]).toMatchObject({
      type: 'run.started',
      agentId: 'coordinator',
      task: 'coordinate',
    });
    expect(events[1]).toMatchObject({ type: 'agent.spawned', agentId: 'coordinator', depth: 0 });
    expect(events.at(-2)).toMatchObject({
      type: 'agent.finished',
      agentId: 'coordinator',
      status: 'completed',
    });
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'completed',
      final: 'all reported',
    });
    expect(
      ofType(events, 'agent.spawned').filter((event) => event.parentId === 'coordinator'),
    ).toHaveLength(2);
    expect(job.usage).toEqual(ofType(events, 'run.finished')[0]?.usage);
    expectWellFormed(events, ['coordinator']);
  });
});

describe('the coordinator under supervision', () => {
  const flaky: ScriptStep[] = [
    {
      match: { role: 'coordinator', call: 1 },
      error: { code: 'model.server', message: 'the provider answered 503' },
    },
    { match: { role: 'coordinator' }, content: 'answered on the second attempt' },
  ];

  it('retries a transient failure from its history and says how many attempts it took', async () => {
    const { runtime, events } = makeRuntime({
      model: { provider: 'scripted', script: { steps: flaky } },
    });
    const job = await runJob({
      task: 'coordinate',
      runtime,
      retry: { maxRetries: 2, backoffMs: 1 },
    });
    expect(job).toMatchObject({ status: 'completed', final: 'answered on the second attempt' });
    expect(ofType(events, 'agent.finished').at(-1)).toMatchObject({
      agentId: 'coordinator',
      status: 'completed',
      attempts: 2,
    });
    expect(ofType(events, 'agent.progress')[0]?.note).toContain('attempt 1 failed');
  });

  it("fails at once under 'fail_fast'", async () => {
    const { runtime } = makeRuntime({ model: { provider: 'scripted', script: { steps: flaky } } });
    const job = await runJob({ task: 'coordinate', runtime, retry: 'fail_fast' });
    expect(job.status).toBe('failed');
    expect(job.error?.message).toContain('the provider answered 503');
  });
});

describe('delegate policies', () => {
  it('reports a failed child beside the others and cancels nobody under all_settled', async () => {
    const { job, results, events } = await delegateWith({ tasks: tasks('a', 'fail b', 'c') });
    expect(job.status).toBe('partial');
    expect(job.error?.message).toBe('1 of 3 sub-agents did not complete: worker-2 failed.');
    expect(results.map((result) => result.status)).toEqual(['completed', 'failed', 'completed']);
    expect(results[1]?.error).toContain('this task cannot be done');
    expect(
      ofType(events, 'agent.finished').filter((event) => event.status === 'cancelled'),
    ).toEqual([]);
  });

  it('cancels the rest once the quorum succeeded', async () => {
    const { job, results } = await delegateWith({
      tasks: tasks('a', 'b', 'hold c'),
      policy: 'quorum',
      quorum: 2,
    });
    expect(results.map((result) => result.status)).toEqual(['completed', 'completed', 'cancelled']);
    expect(results[2]?.error).toContain('quorum of 2 reached');
    // Cancelled by the policy the coordinator chose: the run did not depend on it.
    expect(job.status).toBe('completed');
  });

  it('cancels the rest at the first failure under fail_fast', async () => {
    const { job, results } = await delegateWith({
      tasks: tasks('hold a', 'fail b', 'hold c'),
      policy: 'fail_fast',
    });
    expect(results.map((result) => result.status)).toEqual(['cancelled', 'failed', 'cancelled']);
    expect(results[0]?.error).toContain('fail-fast');
    // The one sub-agent the run depended on failed.
    expect(job.status).toBe('failed');
  });
});

describe('coordinator tools', () => {
  it('starts with spawn_agent, steers with send_message and collects with wait_agents', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-coordinator-'));
    dirs.push(workspace);
    const { runtime, events } = makeRuntime({
      roles: [worker],
      workspace,
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'coordinator', call: 1 },
              toolCalls: [{ name: 'spawn_agent', arguments: { role: 'worker', task: 'hold on' } }],
            },
            {
              match: { role: 'coordinator', call: 2 },
              toolCalls: [
                {
                  name: 'send_message',
                  arguments: { agentId: 'worker-1', message: 'please wrap up' },
                },
              ],
            },
            {
              match: { role: 'coordinator', call: 3 },
              toolCalls: [{ name: 'wait_agents', arguments: { ids: ['worker-1'] } }],
            },
            { match: { role: 'coordinator' }, content: 'collected' },
            // The worker waits at a gate the test opens once the message is sent.
            {
              match: { role: 'worker', call: 1 },
              toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate' } }],
            },
            {
              match: { role: 'worker', conversationContains: 'please wrap up' },
              content: 'wrapped up',
            },
            { match: { role: 'worker' }, content: 'never steered' },
          ],
        },
      },
    });
    // Two turns later: the message has left the main thread before the gate opens.
    runtime.bus.on('message.sent', (event) => {
      if (event.to !== 'worker-1') return;
      setImmediate(() => setImmediate(() => writeFileSync(join(workspace, 'gate'), 'open')));
    });
    const job = await runJob({ task: 'coordinate', runtime });
    expect(job.status).toBe('completed');
    const waited = ofType(events, 'tool.result').find((event) => event.name === 'wait_agents');
    expect(waited?.content).toBe(
      '1 sub-agent: 1 completed.\n\nAnswers (1):\n[worker-1] wrapped up',
    );
  });

  it('gives the coordinator one last turn without delegation when the tree budget runs out', async () => {
    const spender = defineRole({
      name: 'spender',
      description: 's',
      system: 's',
      tools: [userTool('wait_for_cancel')],
    });
    const { runtime, events } = makeRuntime({
      roles: [spender],
      // About 2,900 of it are kept for the coordinator's last turn (its prompt plus 1,024).
      budget: { tokens: 6000 },
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'coordinator', call: 1 },
              toolCalls: [
                {
                  name: 'delegate',
                  arguments: {
                    tasks: [1, 2, 3, 4, 5, 6].map((n) => ({ role: 'spender', task: `spend ${n}` })),
                  },
                },
              ],
              usage: { inputTokens: 10, outputTokens: 0 },
            },
            {
              match: { role: 'coordinator', lastUserContains: 'budget is used up' },
              content: 'partial report',
            },
            { match: { role: 'coordinator' }, content: 'should not happen' },
            {
              match: { role: 'spender' },
              toolCalls: [{ name: 'wait_for_cancel' }],
              usage: { inputTokens: 100, outputTokens: 500 },
            },
          ],
        },
      },
    });
    const job = await runJob({ task: 'spend a lot', runtime });
    expect(job).toMatchObject({
      status: 'budget',
      final: 'partial report',
      error: { code: 'budget.exceeded' },
    });
    const lastRequest = ofType(events, 'model.request')
      .filter((event) => event.agentId === 'coordinator')
      .at(-1);
    expect(lastRequest?.tools).toBe(2);
    // Every call was sent with a max_tokens the budget had room for, and the whole run stayed inside it.
    const total = ofType(events, 'model.response').reduce(
      (sum, event) => sum + event.usage.inputTokens + event.usage.outputTokens,
      0,
    );
    expect(total).toBeLessThanOrEqual(6000);
    for (const request of ofType(events, 'model.request'))
      expect(request.maxTokens).toBeGreaterThan(0);
    expect(
      ofType(events, 'agent.finished')
        .filter((event) => event.role === 'spender')
        .every((event) => event.status === 'cancelled'),
    ).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'budget' });
    expectWellFormed(events, ['coordinator']);
  });
});
