import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { waitForEvent } from '../../src/events/bus.js';
import { defineChannel } from '../../src/roles/channel.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { createPoolTransport } from '../../src/runtime/pool-transport.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import { LocalTransport } from '../../src/runtime/wire/local-transport.js';
import { closeRuntimes, expectWellFormed, FAULT_TOOLS, makeRuntime, ofType } from './helpers.js';

afterEach(closeRuntimes);

const worker = defineRole({
  name: 'worker',
  description: 'w',
  system: 'Work.',
  tools: ['read_file'],
});

describe('Runtime on a worker pool', () => {
  it('finishes a fan-out of 50 with every event in order, the tree complete and seq gap-free', async () => {
    const { runtime, events } = makeRuntime({
      roles: [worker],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            { toolCalls: [{ name: 'read_file', arguments: { path: 'package.json' } }] },
            { content: 'done' },
          ],
        },
      },
    });
    runtime.registerRoot('coordinator', { model: runtime.defaultModel, task: 'fan out' });
    const refs = Array.from({ length: 50 }, (_, index) =>
      runtime.spawn('worker', `task ${index}`, { parent: 'coordinator' }),
    );

    const results = await Promise.all(refs.map((ref) => ref.result));

    expect(
      results.every((result) => result.status === 'completed' && result.final === 'done'),
    ).toBe(true);
    expect(new Set(refs.map((ref) => ref.id)).size).toBe(50);
    expect(refs[0]?.id).toBe('worker-1');
    expectWellFormed(events, ['coordinator']);
    expect(ofType(events, 'agent.spawned').every((event) => event.parentId === 'coordinator')).toBe(
      true,
    );
    for (const ref of refs) {
      const steps = ofType(events, 'model.request')
        .filter((event) => event.agentId === ref.id)
        .map((event) => event.step);
      expect(steps).toEqual([0, 1]);
    }
    expect(runtime.usage().agents).toBe(51);
  });

  it('gives a tool outside the role set an error result and runs nothing', async () => {
    const { runtime, events } = makeRuntime({
      roles: [worker],
      model: {
        provider: 'scripted',
        script: { steps: [{ toolCalls: [{ name: 'exit_process' }] }, { content: 'refused' }] },
      },
    });
    const result = await runtime.spawn('worker', 'try a tool you do not have').result;
    expect(result.status).toBe('completed');
    expect(ofType(events, 'tool.result')[0]).toMatchObject({
      ok: false,
      error: { code: 'tool.not_allowed' },
    });
  });

  it('fails a role handed straight to spawn(), naming the tier and the flag, when a tool it requires needs an ungranted tier', async () => {
    const fetcher = defineRole({
      name: 'fetcher',
      description: 'Fetches pages.',
      system: 'Fetch.',
      tools: ['fetch_url', 'read_file'],
      requiredTools: ['fetch_url'],
    });
    // In the runtime's roles it fails at construction (test/roles/role-check.test.ts); a role object at spawn.
    const { runtime, events } = makeRuntime({
      model: { provider: 'scripted', script: { steps: [] } },
    });
    expect(runtime.roleAdaptations.map((adaptation) => adaptation.role)).toContain('researcher');
    const result = await runtime.spawn(fetcher, 'look things up').result;
    expect(result).toMatchObject({ status: 'failed', error: { code: 'permission.denied' } });
    expect(result.error?.message).toContain('network');
    expect(result.error?.message).toContain('--allow');
    expect(ofType(events, 'model.request')).toEqual([]);
    expectWellFormed(events);
  });

  it('refuses a channel payload that breaks the schema to its sender and never delivers it', async () => {
    const scores = defineChannel(
      'scores',
      z.object({ score: z.number().refine((n) => n % 2 === 0, 'score must be even') }),
    );
    const scorer = defineRole({
      name: 'scorer',
      description: 's',
      system: 's',
      publishes: [scores],
      retry: 'fail_fast',
    });
    const tally = defineRole({
      name: 'tally',
      description: 't',
      system: 't',
      subscribes: [scores],
    });
    const { runtime, events } = makeRuntime({
      roles: [scorer, tally],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'scorer', call: 1 },
              toolCalls: [{ name: 'publish_scores', arguments: { score: 3 } }],
            },
            { match: { role: 'scorer' }, content: 'could not publish' },
            { match: { role: 'tally', lastUserContains: 'closed' }, content: 'nothing came' },
            { match: { role: 'tally' }, content: 'waiting', repeat: true },
          ],
        },
      },
    });
    const [scorerRef, tallyRef] = runtime.spawnBatch('coordinator', [
      { role: 'scorer', task: 'publish a score' },
      { role: 'tally', task: 'count scores' },
    ]);
    const [scored, tallied] = await Promise.all([scorerRef?.result, tallyRef?.result]);

    expect(scored?.status).toBe('completed');
    expect(tallied?.final).toBe('nothing came');
    const refusal = ofType(events, 'tool.result').find((event) => event.name === 'publish_scores');
    expect(refusal).toMatchObject({ ok: false, error: { code: 'channel.invalid_payload' } });
    expect(refusal?.content).toContain('score must be even');
    expect(ofType(events, 'message.sent')).toEqual([]);
    expect(ofType(events, 'message.received')).toEqual([]);
  });

  it('lands a steering message in a running child history before its next model call', async () => {
    const { runtime } = makeRuntime({
      roles: [worker],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { call: 1 },
              toolCalls: [{ name: 'read_file', arguments: { path: 'package.json' } }],
              latencyMs: 20,
            },
            { match: { conversationContains: 'STEER: focus on scripts' }, content: 'steered' },
            { content: 'not steered' },
          ],
        },
      },
    });
    const ref = runtime.spawn('worker', 'read the package');
    await ref.send('STEER: focus on scripts');
    expect((await ref.result).final).toBe('steered');
  });

  it('answers ask with the turn that read the question', async () => {
    const listener = defineRole({
      name: 'listener',
      description: 'l',
      system: 'l',
      subscribes: [defineChannel('never', z.object({}))],
    });
    const { runtime } = makeRuntime({
      roles: [listener],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            { match: { lastUserContains: 'What is 2+2?' }, content: 'four' },
            { match: { lastUserContains: 'closed' }, content: 'closed, bye' },
            { content: 'ready' },
          ],
        },
      },
    });
    const ref = runtime.spawn('listener', 'listen');
    expect(await ref.ask('What is 2+2?', { timeoutMs: 10_000 })).toBe('four');
    expect((await ref.result).status).toBe('completed');
  });

  it('cancels a whole subtree when its root is cancelled', async () => {
    const lead = defineRole({
      name: 'lead',
      description: 'l',
      system: 'l',
      canDelegate: true,
      retry: 'fail_fast',
    });
    const waiter = defineRole({
      name: 'waiter',
      description: 'w',
      system: 'w',
      tools: [userTool('wait_for_cancel')],
      retry: 'fail_fast',
    });
    const { runtime, events } = makeRuntime({
      roles: [lead, waiter],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'lead', call: 1 },
              toolCalls: [
                {
                  name: 'delegate',
                  arguments: {
                    tasks: [
                      { role: 'waiter', task: 'a' },
                      { role: 'waiter', task: 'b' },
                    ],
                  },
                },
              ],
            },
            { match: { role: 'lead' }, content: 'lead done' },
            { match: { role: 'waiter', call: 1 }, toolCalls: [{ name: 'wait_for_cancel' }] },
            { match: { role: 'waiter' }, content: 'waiter done' },
          ],
        },
      },
    });
    const ref = runtime.spawn('lead', 'delegate and wait');
    let started = 0;
    await waitForEvent(
      runtime.bus,
      'tool.call',
      (event) => event.name === 'wait_for_cancel' && ++started === 2,
    );
    ref.cancel('the test says stop');
    const result = await ref.result;

    expect(result.status).toBe('cancelled');
    const children = ofType(events, 'agent.finished').filter((event) => event.role === 'waiter');
    expect(children.map((event) => event.status)).toEqual(['cancelled', 'cancelled']);
    expect(children.every((event) => event.parentId === ref.id)).toBe(true);
    expect(children[0]?.error?.message).toContain(`its parent ${ref.id}`);
    expectWellFormed(events);
  });

  it('refuses a spawn past the delegation depth limit', async () => {
    const lead = defineRole({
      name: 'lead',
      description: 'l',
      system: 'l',
      canDelegate: true,
      retry: 'fail_fast',
    });
    const { runtime, events } = makeRuntime({
      roles: [lead, worker],
      maxDepth: 1,
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'lead', call: 1 },
              toolCalls: [
                { name: 'delegate', arguments: { tasks: [{ role: 'worker', task: 'too deep' }] } },
              ],
            },
            { match: { role: 'lead' }, content: 'lead done' },
            { content: 'worker done' },
          ],
        },
      },
    });
    const result = await runtime.spawn('lead', 'delegate', { parent: 'coordinator' }).result;
    expect(result.status).toBe('completed');
    const child = ofType(events, 'agent.finished').find((event) => event.role === 'worker');
    expect(child).toMatchObject({ status: 'failed', error: { code: 'runtime.spawn_refused' } });
    expect(child?.error?.message).toContain('depth 2');
    expectWellFormed(events, ['coordinator']);
  });

  it('round-trips a worker tool approval to the main thread approver', async () => {
    const approver = defineRole({
      name: 'approver',
      description: 'a',
      system: 'a',
      tools: [userTool('ask_approval')],
    });
    const asked: string[] = [];
    const { runtime, events } = makeRuntime({
      roles: [approver],
      approve: async (request) => {
        asked.push(`${request.agentId}: ${request.summary}`);
        return request.summary.startsWith('safe');
      },
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { call: 1 },
              toolCalls: [
                { name: 'ask_approval', arguments: { action: 'safe: read a file' } },
                { name: 'ask_approval', arguments: { action: 'delete everything' } },
              ],
            },
            { content: 'asked' },
          ],
        },
      },
    });
    const ref = runtime.spawn('approver', 'ask');
    await ref.result;
    expect(asked.sort()).toEqual([`${ref.id}: delete everything`, `${ref.id}: safe: read a file`]);
    expect(
      ofType(events, 'tool.result')
        .map((event) => event.content)
        .sort(),
    ).toEqual(['approved: safe: read a file', 'denied: delete everything']);
  });

  it('cancels an actor when its spawn signal aborts', async () => {
    const waiter = defineRole({
      name: 'waiter',
      description: 'w',
      system: 'w',
      tools: [userTool('wait_for_cancel')],
    });
    const { runtime } = makeRuntime({
      roles: [waiter],
      model: {
        provider: 'scripted',
        script: { steps: [{ toolCalls: [{ name: 'wait_for_cancel' }] }, { content: 'x' }] },
      },
    });
    const controller = new AbortController();
    const ref = runtime.spawn('waiter', 'wait', { signal: controller.signal });
    await waitForEvent(runtime.bus, 'tool.call', (event) => event.agentId === ref.id);
    controller.abort(new Error('the user pressed Ctrl-C'));
    const result = await ref.result;
    expect(result).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect(result.error?.message).toContain('Ctrl-C');
  });

  it('leaves no thread behind after close', async () => {
    const transport = new LocalTransport({
      threads: 2,
      config: {
        runId: 'r',
        workspace: process.cwd(),
        grants: ['read'],
        toolModules: [],
        hasApprove: false,
      },
    });
    const { runtime } = makeRuntime({
      roles: [worker],
      transport,
      model: { provider: 'scripted', script: { steps: [{ content: 'done' }] } },
    });
    await runtime.spawn('worker', 'quick').result;
    // One actor needs one thread: the second starts only when the first is saturated.
    expect(transport.threadCount).toBe(1);
    await runtime.close();
    expect(transport.threadCount).toBe(0);
  });

  it('runs actors and their user tool calls on a thread added while the run goes', async () => {
    const echoer = defineRole({
      name: 'echoer',
      description: 'e',
      system: 'e',
      tools: [userTool('echo')],
      retry: 'fail_fast',
    });
    const options: RuntimeOptions = {
      model: {
        provider: 'scripted',
        script: {
          steps: [
            { match: { call: 1 }, toolCalls: [{ name: 'echo', arguments: { text: 'hi' } }] },
            { content: 'echoed' },
          ],
        },
      },
      roles: [echoer],
      workspace: process.cwd(),
      grants: ['read'],
      threads: 2,
      toolModules: [FAULT_TOOLS],
      runId: 'grown',
    };
    const transport = createPoolTransport('grown', options);
    const { runtime, events } = makeRuntime({ ...options, transport });
    expect((await runtime.spawn('echoer', 'first').result).status).toBe('completed');
    expect(transport.hosts()).toHaveLength(1);
    // What the scheduler does when every host is saturated, asked directly.
    expect(transport.grow()).toBe(true);
    await vi.waitFor(() => expect(transport.threadCount).toBe(2), { timeout: 30_000 });
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, index) => runtime.spawn('echoer', `next ${index}`).result),
    );
    expect(results.map((result) => result.status)).toEqual(Array(4).fill('completed'));
    const echoed = ofType(events, 'tool.result').filter((event) => event.content === 'echo: hi');
    expect(echoed).toHaveLength(5);
    expectWellFormed(events);
  });
});
