import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolHost } from '../../../src/runtime/host/tool-host.js';
import {
  TOOL_STATE,
  TOOL_STATE_BYTES,
  type ToolToMain,
} from '../../../src/runtime/wire/tool-protocol.js';
import { defineTool } from '../../../src/tools/tool.js';

// A tool thread's host, in-process over a MessageChannel: the calls past its
// `maxCalls` wait, oldest first, and a waiting call that is cancelled never runs.

interface Gate {
  started: string[];
  release(name: string): void;
}

function gatedTool(gate: Gate & { waits: Map<string, () => void> }) {
  return defineTool({
    name: 'gated',
    description: 'Runs until the test releases it.',
    parameters: z.object({ name: z.string() }),
    execute: ({ name }) =>
      new Promise<string>((resolve) => {
        gate.started.push(name);
        gate.waits.set(name, () => resolve(`done ${name}`));
      }),
  });
}

let open: { main: MessagePort; host: MessagePort } | undefined;

afterEach(() => {
  open?.main.close();
  open?.host.close();
  open = undefined;
});

// Reports `count` notes in one go, then answers.
const chattyTool = defineTool({
  name: 'chatty',
  description: 'Reports progress in a loop.',
  parameters: z.object({ count: z.number().int() }),
  execute: ({ count }, context) => {
    for (let index = 0; index < count; index += 1) context.progress?.(`note ${index}`);
    return `reported ${count}`;
  },
});

function startHost(maxCalls: number) {
  const waits = new Map<string, () => void>();
  const gate = {
    started: [] as string[],
    waits,
    release(name: string) {
      const release = waits.get(name);
      if (release === undefined) throw new Error(`${name} has not started`);
      release();
    },
  };
  const { port1: main, port2: host } = new MessageChannel();
  open = { main, host };
  const state = new SharedArrayBuffer(TOOL_STATE_BYTES);
  const toolHost = new ToolHost(
    {
      runId: 'run-1',
      workspace: process.cwd(),
      grants: ['read'],
      toolModules: [],
      hasApprove: false,
      maxResultChars: 10_000,
      maxCalls,
    },
    host,
    state,
    [gatedTool(gate), chattyTool],
  );
  const received: ToolToMain[] = [];
  const waiters: Array<() => void> = [];
  main.on('message', (items: ToolToMain[]) => {
    received.push(...items);
    for (const wake of waiters.splice(0)) wake();
  });
  const until = async (check: () => boolean): Promise<void> => {
    while (!check()) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  const call = (callId: number, name: string) =>
    main.postMessage([
      { type: 'call', callId, tool: 'gated', input: { name }, agentId: `agent-${callId}` },
    ]);
  const done = () =>
    received.flatMap((item) => (item.type === 'done' ? [`${item.callId}:${item.content}`] : []));
  // The calls the host holds, started or waiting (the shared state the pool reads).
  const inflight = () => Atomics.load(new Int32Array(state), TOOL_STATE.inflight);
  const running = toolHost.run();
  return { gate, main, call, done, until, received, running, inflight };
}

const turn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

// The tool's execute runs a turn after the call arrives: wait for it to show up as started.
async function startedWith(gate: Gate, names: string[]): Promise<void> {
  for (let index = 0; index < 100 && gate.started.length < names.length; index += 1) await turn();
  expect(gate.started).toEqual(names);
}

describe('ToolHost waiting calls', () => {
  it('starts the calls past maxCalls oldest first, and never runs one cancelled while it waited', async () => {
    const host = startHost(1);
    await host.until(() => host.received.some((item) => item.type === 'ready'));
    host.call(1, 'a');
    host.call(2, 'b');
    host.call(3, 'c');
    host.call(4, 'd');
    await startedWith(host.gate, ['a']);
    // b gives up while it waits: it leaves the queue, and c is next.
    expect(host.inflight()).toBe(4);
    host.main.postMessage([{ type: 'cancel', callId: 2 }]);
    for (let index = 0; index < 100 && host.inflight() === 4; index += 1) await turn();
    expect(host.inflight()).toBe(3);
    host.gate.release('a');
    await host.until(() => host.done().length === 1);
    await startedWith(host.gate, ['a', 'c']);
    host.gate.release('c');
    await host.until(() => host.done().length === 2);
    await startedWith(host.gate, ['a', 'c', 'd']);
    host.gate.release('d');
    await host.until(() => host.done().length === 3);
    expect(host.done()).toEqual(['1:done a', '3:done c', '4:done d']);
    host.main.postMessage([{ type: 'shutdown' }]);
    await host.running;
  });

  it('runs every waiting call in order when many wait', async () => {
    const host = startHost(2);
    await host.until(() => host.received.some((item) => item.type === 'ready'));
    const names = Array.from({ length: 40 }, (_, index) => `t${index}`);
    names.forEach((name, index) => {
      host.call(index + 1, name);
    });
    for (let index = 0; index < names.length; index += 1) {
      const name = names[index] as string;
      await startedWith(host.gate, names.slice(0, Math.min(names.length, index + 2)));
      host.gate.release(name);
      await host.until(() => host.done().length === index + 1);
    }
    expect(host.done()).toEqual(names.map((name, index) => `${index + 1}:done ${name}`));
    host.main.postMessage([{ type: 'shutdown' }]);
    await host.running;
  });
});

describe('ToolHost progress', () => {
  it("sends a call's notes in a row as shared items, in order, at most 1,024 each, before its answer", async () => {
    const host = startHost(2);
    await host.until(() => host.received.some((item) => item.type === 'ready'));
    host.main.postMessage([
      { type: 'call', callId: 7, tool: 'chatty', input: { count: 2500 }, agentId: 'agent-7' },
    ]);
    await host.until(() => host.done().length === 1);
    const items = host.received.filter((item) => item.type === 'progress' || item.type === 'done');
    const notes = items.flatMap((item) => (item.type === 'progress' ? [item.notes.length] : []));
    expect(notes).toEqual([1024, 1024, 452]);
    expect(items.at(-1)).toMatchObject({ type: 'done', callId: 7, content: 'reported 2500' });
    const all = items.flatMap((item) => (item.type === 'progress' ? item.notes : []));
    expect(all).toEqual(Array.from({ length: 2500 }, (_, index) => `note ${index}`));
    host.main.postMessage([{ type: 'shutdown' }]);
    await host.running;
  });
});
