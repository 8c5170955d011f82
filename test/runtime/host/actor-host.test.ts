import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { readJournalLine } from '../../../src/agent/journal.js';
import type { ModelSpec } from '../../../src/model/model.js';
import { defineChannel, toChannelSpec } from '../../../src/roles/channel.js';
import { ActorHost } from '../../../src/runtime/host/actor-host.js';
import {
  HOST_STATE,
  HOST_STATE_BYTES,
  type HostConfig,
  type MainToWorkerInput,
  type RoleSpec,
  type WorkerWireItem,
} from '../../../src/runtime/wire/protocol.js';
import { defineTool } from '../../../src/tools/tool.js';

const config: HostConfig = {
  runId: 'run-1',
  workspace: process.cwd(),
  grants: ['read'],
  toolModules: [],
  hasApprove: false,
};
const notes = defineChannel('notes', z.object({ text: z.string() }));

let sideEffects = 0;
const countTool = defineTool({
  name: 'count',
  description: 'Counts.',
  parameters: z.object({}),
  execute: () => {
    sideEffects += 1;
    return `count ${sideEffects}`;
  },
});
const forbiddenTool = defineTool({
  name: 'forbidden',
  description: 'Must never run for a role without it.',
  parameters: z.object({}),
  execute: () => {
    sideEffects += 100;
    return 'ran';
  },
});
const sandboxTool = defineTool({
  name: 'sandbox_mode',
  description: 'Says whether tools run without the OS sandbox.',
  parameters: z.object({}),
  execute: (_input, context) => `unsafeNoSandbox=${context.unsafeNoSandbox === true}`,
});
const waitTool = defineTool({
  name: 'wait_for_cancel',
  description: 'Waits until cancelled.',
  parameters: z.object({}),
  execute: (_input, context) =>
    new Promise((resolve) =>
      context.signal.addEventListener('abort', () => resolve('stopped'), { once: true }),
    ),
});

function role(overrides: Partial<RoleSpec> = {}): RoleSpec {
  return {
    name: 'worker',
    system: 'Work.',
    tools: ['count'],
    maxSteps: 5,
    publishes: [],
    subscribes: [],
    canDelegate: false,
    ...overrides,
  };
}

// One host on an in-process MessageChannel: the test plays the main thread.
function startHost(overrides: Partial<HostConfig> = {}, state?: SharedArrayBuffer) {
  const { port1, port2 } = new MessageChannel();
  const host = new ActorHost({ ...config, ...overrides }, port2, {
    tools: [countTool, forbiddenTool, waitTool, sandboxTool],
    ...(state === undefined ? {} : { state }),
  });
  const running = host.run();
  const items: WorkerWireItem[] = [];
  const waiters: Array<() => void> = [];
  let batches = 0;
  port1.on('message', (batch: WorkerWireItem[]) => {
    batches += 1;
    items.push(...batch);
    for (const wake of waiters.splice(0)) wake();
  });
  const send = (...messages: MainToWorkerInput[]) => port1.postMessage(messages);
  let keys = 0;
  const start = (actorId: string, roleSpec: RoleSpec, model: ModelSpec, task: string) => {
    keys += 1;
    send(
      { type: 'role.define', key: `r${keys}`, role: roleSpec },
      { type: 'model.define', key: `m${keys}`, model },
      { type: 'actor.start', actorId, role: `r${keys}`, model: `m${keys}`, task, attempt: 1 },
    );
  };
  const until = async (predicate: (item: WorkerWireItem) => boolean): Promise<WorkerWireItem> => {
    for (;;) {
      const found = items.find(predicate);
      if (found !== undefined) return found;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  const stop = async () => {
    send({ type: 'host.shutdown' });
    await running;
    port1.close();
  };
  hosts.push(stop);
  return { items, send, start, until, stop, port: port1 as MessagePort, batches: () => batches };
}

const hosts: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of hosts.splice(0)) await stop();
});

// On the wire an event is itself (v: 1); protocol items have no v.
const isEvent = (item: WorkerWireItem): boolean => 'v' in item;
const events = (items: WorkerWireItem[]) =>
  items.flatMap((item) =>
    isEvent(item) ? [item as unknown as { type: string; agentId: string }] : [],
  );

describe('ActorHost', () => {
  it('beats the watchdog on every post, so a long busy turn that sends is not taken for blocked', async () => {
    // Only the interval is faked: it never fires, so every beat seen comes from a post.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const state = new SharedArrayBuffer(HOST_STATE_BYTES);
      const { start, until, batches } = startHost({}, state);
      start(
        'worker-1',
        role(),
        {
          provider: 'scripted',
          script: { steps: [{ toolCalls: [{ name: 'count' }] }, { content: 'done' }] },
        },
        'count once',
      );
      await until((item) => item.type === 'actor.result');
      // Every batched post beats (host.ready is posted alone, before the host runs).
      expect(batches()).toBeGreaterThan(1);
      const beats = Atomics.load(new Int32Array(state), HOST_STATE.beat);
      expect(beats).toBeGreaterThanOrEqual(batches() - 1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('runs an actor and sends its result after its last event', async () => {
    const { items, start, until } = startHost();
    start(
      'worker-1',
      role(),
      {
        provider: 'scripted',
        script: { steps: [{ toolCalls: [{ name: 'count' }] }, { content: 'done' }] },
      },
      'count once',
    );
    const result = await until((item) => item.type === 'actor.result');
    expect(result).toMatchObject({
      actorId: 'worker-1',
      outcome: { stopReason: 'final', final: 'done', steps: 2 },
    });
    expect(items[0]).toMatchObject({ type: 'host.ready' });
    const resultIndex = items.indexOf(result);
    expect(items.slice(resultIndex + 1).filter(isEvent)).toEqual([]);
    expect(events(items).map((event) => event.type)).toContain('tool.result');
    expect(events(items).every((event) => event.agentId === 'worker-1')).toBe(true);
  });

  it('sends each event as its JSON text when the config says eventText, in the same place', async () => {
    const { items, start, until } = startHost({ eventText: true });
    start(
      'worker-1',
      role(),
      {
        provider: 'scripted',
        script: { steps: [{ toolCalls: [{ name: 'count' }] }, { content: 'done "quoted"' }] },
      },
      'count once',
    );
    const result = await until((item) => (item as { type?: unknown }).type === 'actor.result');
    const wire = items as unknown[];
    const texts = wire.filter((item): item is string => typeof item === 'string');
    // Every event is text; no event crosses as an object.
    expect(wire.filter((item) => typeof item === 'object' && 'v' in (item as object))).toEqual([]);
    const parsed = texts.map((text) => JSON.parse(text) as { v: number; type: string });
    expect(parsed.every((event) => event.v === 1)).toBe(true);
    expect(texts.every((text, index) => text === JSON.stringify(parsed[index]))).toBe(true);
    expect(parsed.map((event) => event.type)).toEqual(
      expect.arrayContaining(['model.request', 'tool.call', 'tool.result', 'model.response']),
    );
    // The result still comes after the actor's last event.
    expect(wire.slice(wire.indexOf(result) + 1).filter((item) => typeof item === 'string')).toEqual(
      [],
    );
  });

  it('answers a tool outside the role set with tool.not_allowed and runs nothing', async () => {
    sideEffects = 0;
    const { items, start, until } = startHost();
    start(
      'worker-1',
      role({ tools: ['count'] }),
      {
        provider: 'scripted',
        script: { steps: [{ toolCalls: [{ name: 'forbidden' }] }, { content: 'ok' }] },
      },
      'try',
    );
    await until((item) => item.type === 'actor.result');
    const toolResult = events(items).find((event) => event.type === 'tool.result') as unknown as {
      ok: boolean;
      error: { code: string };
    };
    expect(toolResult).toMatchObject({ ok: false, error: { code: 'tool.not_allowed' } });
    expect(sideEffects).toBe(0);
  });

  it('keeps a subscriber running on each message and finishes after the close notice', async () => {
    const { items, send, start, until } = startHost();
    start(
      'reader-1',
      role({ tools: [], subscribes: ['notes'] }),
      {
        provider: 'scripted',
        script: {
          steps: [
            { match: { lastUserContains: 'closed' }, content: 'final analysis' },
            { match: { lastUserContains: 'from writer-1' }, content: 'noted', repeat: true },
            { content: 'waiting for notes' },
          ],
        },
      },
      'read notes',
    );
    await until((item) => item.type === 'actor.turn');
    send({
      type: 'mailbox.deliver',
      actorId: 'reader-1',
      messageId: 'm1',
      content: '[message on channel "notes" from writer-1]\n{"text":"hi"}',
      channel: 'notes',
      from: 'writer-1',
    });
    await until((item) => item.type === 'mailbox.consumed');
    send({ type: 'channel.closed', actorId: 'reader-1', channel: 'notes' });
    const result = await until((item) => item.type === 'actor.result');
    expect(result).toMatchObject({ outcome: { stopReason: 'final', final: 'final analysis' } });
    expect(
      items
        .filter((item) => item.type === 'actor.turn')
        .map((item) => (item as { final: string }).final),
    ).toEqual(['waiting for notes', 'noted']);
    expect(events(items).find((event) => event.type === 'message.received')).toMatchObject({
      channel: 'notes',
      from: 'writer-1',
    });
  });

  it('stops an actor cooperatively on actor.cancel', async () => {
    const { send, start, until } = startHost();
    start(
      'worker-1',
      role({ tools: ['wait_for_cancel'] }),
      {
        provider: 'scripted',
        script: { steps: [{ toolCalls: [{ name: 'wait_for_cancel' }] }] },
      },
      'wait',
    );
    await until((item) => isEvent(item) && item.type === 'tool.call');
    send({ type: 'actor.cancel', actorId: 'worker-1', reason: 'worker-1 was cancelled: test' });
    const result = await until((item) => item.type === 'actor.result');
    expect(result).toMatchObject({
      outcome: { stopReason: 'cancelled', error: { code: 'cancelled' } },
    });
  });

  it('makes the intents of one batch durable with one request, after their lines, before any tool runs', async () => {
    sideEffects = 0;
    const { items, send, until } = startHost({ journal: true });
    const model: ModelSpec = {
      provider: 'scripted',
      script: { steps: [{ toolCalls: [{ name: 'count' }] }, { content: 'done' }] },
    };
    // Two journaled actors started in one message: their first model calls answer in one turn.
    send(
      { type: 'role.define', key: 'r', role: role() },
      { type: 'model.define', key: 'm', model },
      {
        type: 'actor.start',
        actorId: 'a-1',
        role: 'r',
        model: 'm',
        task: 'one',
        attempt: 1,
        key: 'k1',
      },
      {
        type: 'actor.start',
        actorId: 'a-2',
        role: 'r',
        model: 'm',
        task: 'two',
        attempt: 1,
        key: 'k2',
      },
    );
    const intent = await until((item) => item.type === 'journal.intent');
    // Let the thread run on: nothing may run before the answer.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sideEffects).toBe(0);
    const intents = items.filter((item) => item.type === 'journal.intent');
    expect(intents).toHaveLength(1);
    // Both actors' intents are in the lines that went ahead of the one request.
    const lines = items
      .slice(0, items.indexOf(intent))
      .flatMap((item) => (item.type === 'journal.lines' ? item.text.split('\n') : []))
      .filter((line) => line.includes('"tool.started"'));
    expect(lines.map((line) => readJournalLine(line)?.key).sort()).toEqual(['k1', 'k2']);
    send({ type: 'journal.answered', requestId: (intent as { requestId: number }).requestId });
    await until((item) => item.type === 'actor.result' && item.actorId === 'a-1');
    await until((item) => item.type === 'actor.result' && item.actorId === 'a-2');
    expect(sideEffects).toBe(2);
  });

  it('runs none of the tools whose shared intent the main thread could not write', async () => {
    sideEffects = 0;
    const { items, send, until } = startHost({ journal: true });
    const model: ModelSpec = {
      provider: 'scripted',
      script: { steps: [{ toolCalls: [{ name: 'count' }] }, { content: 'done' }] },
    };
    send(
      { type: 'role.define', key: 'r', role: role() },
      { type: 'model.define', key: 'm', model },
      {
        type: 'actor.start',
        actorId: 'a-1',
        role: 'r',
        model: 'm',
        task: 'one',
        attempt: 1,
        key: 'k1',
      },
      {
        type: 'actor.start',
        actorId: 'a-2',
        role: 'r',
        model: 'm',
        task: 'two',
        attempt: 1,
        key: 'k2',
      },
    );
    const intent = await until((item) => item.type === 'journal.intent');
    send({
      type: 'journal.answered',
      requestId: (intent as { requestId: number }).requestId,
      refused: 'cannot write the journal: disk full',
    });
    const first = await until((item) => item.type === 'actor.result' && item.actorId === 'a-1');
    const second = await until((item) => item.type === 'actor.result' && item.actorId === 'a-2');
    expect(sideEffects).toBe(0);
    // Both stop on the disk error (the run then stops with exit 4), neither with a tool result.
    for (const result of [first, second]) {
      expect(result).toMatchObject({ outcome: { error: { code: 'io.write_failed' } } });
    }
    expect(events(items).filter((event) => event.type === 'tool.result')).toEqual([]);
  });

  it('round-trips a publication and reports the answer to the model', async () => {
    const { items, send, start, until } = startHost();
    start(
      'writer-1',
      role({ tools: [], publishes: [toChannelSpec(notes)] }),
      {
        provider: 'scripted',
        script: {
          steps: [
            { toolCalls: [{ name: 'publish_notes', arguments: { text: 'hi' } }] },
            { content: 'published' },
          ],
        },
      },
      'publish',
    );
    const request = await until((item) => item.type === 'channel.publish');
    expect(request).toMatchObject({
      actorId: 'writer-1',
      channel: 'notes',
      payload: { text: 'hi' },
    });
    send({
      type: 'publish.answered',
      requestId: (request as { requestId: number }).requestId,
      ok: true,
      message: 'Published m1',
    });
    await until((item) => item.type === 'actor.result');
    expect(events(items).find((event) => event.type === 'tool.result')).toMatchObject({
      ok: true,
      content: 'Published m1',
    });
  });

  it('refuses an invalid payload in the sender thread before it reaches the main thread', async () => {
    const { items, start, until } = startHost();
    start(
      'writer-1',
      role({ tools: [], publishes: [toChannelSpec(notes)] }),
      {
        provider: 'scripted',
        script: {
          steps: [
            { toolCalls: [{ name: 'publish_notes', arguments: { note: 'no text field' } }] },
            { content: 'gave up' },
          ],
        },
      },
      'publish',
    );
    await until((item) => item.type === 'actor.result');
    expect(items.some((item) => item.type === 'channel.publish')).toBe(false);
    expect(events(items).find((event) => event.type === 'tool.result')).toMatchObject({
      ok: false,
      error: { code: 'tool.invalid_input' },
    });
  });

  it('gives actors unsafeNoSandbox in their tool context only when the host config says so', async () => {
    const sandboxMode = async (overrides: Partial<HostConfig>) => {
      const { items, start, until } = startHost(overrides);
      start(
        'worker-1',
        role({ tools: ['sandbox_mode'] }),
        {
          provider: 'scripted',
          script: { steps: [{ toolCalls: [{ name: 'sandbox_mode' }] }, { content: 'done' }] },
        },
        'check',
      );
      await until((item) => item.type === 'actor.result');
      return (
        events(items).find((event) => event.type === 'tool.result') as unknown as {
          content: string;
        }
      ).content;
    };
    expect(await sandboxMode({ unsafeNoSandbox: true })).toBe('unsafeNoSandbox=true');
    expect(await sandboxMode({})).toBe('unsafeNoSandbox=false');
  });

  it('gives a delegating role spawn_agent, wait_agents and send_message, answered by the main thread', async () => {
    const { items, send, start, until } = startHost();
    start(
      'lead-1',
      role({ tools: [], canDelegate: true }),
      {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { call: 1 },
              toolCalls: [{ name: 'spawn_agent', arguments: { role: 'worker', task: 'a' } }],
            },
            {
              match: { call: 2 },
              toolCalls: [{ name: 'wait_agents', arguments: { ids: ['worker-7'] } }],
            },
            {
              match: { call: 3 },
              toolCalls: [
                { name: 'send_message', arguments: { agentId: 'worker-7', message: 'hi' } },
              ],
            },
            { content: 'done' },
          ],
        },
      },
      'lead',
    );
    const answerNext = async (index: number, answer: Record<string, unknown>) => {
      const request = await until(
        (item) =>
          item.type === 'child.requested' &&
          items.filter((other) => other.type === 'child.requested').indexOf(item) === index,
      );
      send({
        type: 'child.answered',
        requestId: (request as { requestId: number }).requestId,
        answer: answer as never,
      });
      return request;
    };
    expect(
      await answerNext(0, { ok: true, message: 'Started worker-7.', agentId: 'worker-7' }),
    ).toMatchObject({
      actorId: 'lead-1',
      request: { op: 'spawn', role: 'worker', task: 'a' },
    });
    expect(
      await answerNext(1, {
        ok: true,
        message: '1 finished.',
        results: [
          {
            agentId: 'worker-7',
            role: 'worker',
            status: 'completed',
            final: 'worker-7 did a',
            usage: { inputTokens: 0, outputTokens: 0 },
            steps: 1,
          },
        ],
      }),
    ).toMatchObject({ request: { op: 'wait', ids: ['worker-7'] } });
    expect(
      await answerNext(2, { ok: false, code: 'runtime.closed', message: 'worker-7 has finished.' }),
    ).toMatchObject({ request: { op: 'send', agentId: 'worker-7', message: 'hi' } });
    await until((item) => item.type === 'actor.result');

    const results = events(items).filter(
      (event) => event.type === 'tool.result',
    ) as unknown as Array<{
      name: string;
      ok: boolean;
      content: string;
      error?: { code: string };
    }>;
    expect(results.map((result) => [result.name, result.ok])).toEqual([
      ['spawn_agent', true],
      ['wait_agents', true],
      ['send_message', false],
    ]);
    expect(results[0]?.content).toBe('Started worker-7.');
    expect(results[1]?.content).toContain('worker-7 did a');
    expect(results[2]?.error?.code).toBe('runtime.closed');
    const request = events(items).find((event) => event.type === 'model.request') as unknown as {
      tools: number;
    };
    expect(request.tools).toBe(4);
  });
});
