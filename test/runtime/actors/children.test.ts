import { describe, expect, it } from 'vitest';
import { TroupeError } from '../../../src/errors.js';
import type { ActorResult, AgentRef } from '../../../src/runtime/actors/actor.js';
import { WorkerChildren } from '../../../src/runtime/actors/children.js';

// Refs that finish at once, and record the messages they are sent.
function fakeRuntime(options: { delegates?: boolean } = {}) {
  const sent: string[] = [];
  let next = 0;
  const refOf = (role: string, task: string): AgentRef => {
    next += 1;
    const id = `${role}-${next}`;
    const result: ActorResult = {
      agentId: id,
      role,
      status: 'completed',
      final: `${id} did ${task}`,
      usage: { inputTokens: 0, outputTokens: 0 },
      steps: 1,
    };
    return {
      id,
      role,
      result: Promise.resolve(result),
      send: async (message) => {
        if (message === 'too late') throw new TroupeError('runtime.closed', `${id} has finished.`);
        sent.push(`${id}: ${message}`);
      },
      ask: async () => '',
      cancel: () => {},
    };
  };
  const children = new WorkerChildren({
    spawnBatch: (_parentId, tasks) => tasks.map((task) => refOf(task.role, task.task)),
    mayDelegate: () => options.delegates ?? true,
    roleNames: () => ['worker', 'analyst'],
  });
  return { children, sent };
}

describe('WorkerChildren', () => {
  it('starts a sub-agent and answers with its id at once', async () => {
    const { children } = fakeRuntime();
    expect(await children.answer('lead-1', { op: 'spawn', role: 'worker', task: 'a' })).toEqual({
      ok: true,
      message: 'Started worker-1.',
      agentId: 'worker-1',
    });
  });

  it('returns the results of the sub-agents it started, in the order asked', async () => {
    const { children } = fakeRuntime();
    await children.answer('lead-1', { op: 'spawn', role: 'worker', task: 'a' });
    await children.answer('lead-1', { op: 'spawn', role: 'worker', task: 'b' });
    const answer = await children.answer('lead-1', { op: 'wait', ids: ['worker-2', 'worker-1'] });
    expect(answer.ok).toBe(true);
    expect(answer.results?.map((result) => result.final)).toEqual([
      'worker-2 did b',
      'worker-1 did a',
    ]);
  });

  it('refuses ids another parent started, naming the ones this parent started', async () => {
    const { children } = fakeRuntime();
    await children.answer('lead-1', { op: 'spawn', role: 'worker', task: 'a' });
    await children.answer('lead-2', { op: 'spawn', role: 'worker', task: 'b' });
    expect(
      await children.answer('lead-1', { op: 'wait', ids: ['worker-1', 'worker-2'] }),
    ).toMatchObject({
      ok: false,
      code: 'tool.invalid_input',
      message: 'Unknown agent id: worker-2. Started so far: worker-1.',
    });
  });

  it('tracks the sub-agents of a delegate batch too', async () => {
    const { children } = fakeRuntime();
    children.spawnBatch('lead-1', [{ role: 'analyst', task: 'x' }]);
    expect(await children.answer('lead-1', { op: 'wait', ids: ['analyst-1'] })).toMatchObject({
      ok: true,
    });
  });

  it('steers a sub-agent it started and reports one that finished', async () => {
    const { children, sent } = fakeRuntime();
    await children.answer('lead-1', { op: 'spawn', role: 'worker', task: 'a' });
    expect(
      await children.answer('lead-1', { op: 'send', agentId: 'worker-1', message: 'hurry' }),
    ).toEqual({ ok: true, message: 'Delivered to worker-1.' });
    expect(sent).toEqual(['worker-1: hurry']);
    expect(
      await children.answer('lead-1', { op: 'send', agentId: 'worker-1', message: 'too late' }),
    ).toMatchObject({ ok: false, code: 'runtime.closed' });
    expect(
      await children.answer('lead-1', { op: 'send', agentId: 'worker-9', message: 'hi' }),
    ).toMatchObject({ ok: false, code: 'tool.invalid_input' });
  });

  it('refuses an unknown role, naming the known ones', async () => {
    const { children } = fakeRuntime();
    expect(await children.answer('lead-1', { op: 'spawn', role: 'poet', task: 'a' })).toMatchObject(
      {
        ok: false,
        code: 'tool.invalid_input',
        message: 'Unknown role "poet". Known roles: worker, analyst.',
      },
    );
  });

  it('refuses every request of an actor whose role does not delegate', async () => {
    const { children } = fakeRuntime({ delegates: false });
    expect(
      await children.answer('worker-1', { op: 'spawn', role: 'worker', task: 'a' }),
    ).toMatchObject({ ok: false, code: 'tool.not_allowed' });
  });

  it('forgets a parent and its sub-agents', async () => {
    const { children } = fakeRuntime();
    await children.answer('lead-1', { op: 'spawn', role: 'worker', task: 'a' });
    children.forget('lead-1');
    expect(await children.answer('lead-1', { op: 'wait', ids: ['worker-1'] })).toMatchObject({
      ok: false,
      message: 'Unknown agent id: worker-1. Started so far: (none).',
    });
  });
});
