import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelSpec } from '../../src/model/model.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { LocalTransport } from '../../src/runtime/wire/local-transport.js';
import type { MainToWorkerInput } from '../../src/runtime/wire/protocol.js';
import type { Transport } from '../../src/runtime/wire/transport.js';
import { closeRuntimes, expectWellFormed, FAULT_TOOLS, makeRuntime, ofType } from './helpers.js';

const workspaces: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of workspaces.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// The faulty actor fails fast; its siblings retry a thread crash at once, so
// the test sees exactly who failed and that everyone else got through.
const sibling = defineRole({
  name: 'sibling',
  description: 's',
  system: 's',
  tools: [userTool('wait_for_file')],
  retry: { maxRetries: 3, backoffMs: 0, maxRestarts: 20 },
});
const faulty = (tool: string) =>
  defineRole({
    name: 'faulty',
    description: 'f',
    system: 'f',
    tools: [userTool(tool)],
    retry: 'fail_fast',
  });

function script(tool: string): ModelSpec {
  return {
    provider: 'scripted',
    script: {
      steps: [
        { match: { role: 'faulty', call: 1 }, toolCalls: [{ name: tool }] },
        { match: { role: 'faulty' }, content: 'the faulty one answered' },
        // Siblings wait, on both threads, until the fault is over: those on
        // the faulty thread are mid-turn when it goes down.
        {
          match: { role: 'sibling', call: 1 },
          toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate' } }],
        },
        { match: { role: 'sibling' }, content: 'sibling done' },
      ],
    },
  };
}

async function runFault(tool: string, options: { timeoutMs?: number } = {}) {
  const workspace = mkdtempSync(join(tmpdir(), 'troupe-faults-'));
  workspaces.push(workspace);
  const { runtime, events } = makeRuntime({
    roles: [faulty(tool), sibling],
    model: script(tool),
    workspace,
    threadLimits: { maxOldGenerationSizeMb: 48 },
    cancelGraceMs: 200,
    // These tests are about the actor threads' supervision: the fault tools run in them.
    toolIsolation: 'thread',
    // And about deaths, not the watchdog (test/integration/watchdog.test.ts): on a
    // loaded machine the GC storm before an out-of-memory could trip it first.
    blockedThreadMs: 60_000,
  });
  const siblings = Array.from({ length: 4 }, (_, index) =>
    runtime.spawn('sibling', `sibling ${index}`),
  );
  const bad = await runtime.spawn('faulty', 'misbehave', options).result;
  writeFileSync(join(workspace, 'gate'), 'open');
  const results = await Promise.all(siblings.map((ref) => ref.result));
  const retried = events.filter(
    (event) => event.type === 'agent.progress' && event.note.includes('retrying'),
  );
  return { bad, siblings: results, events, retried: retried.map((event) => event.agentId) };
}

describe('Runtime faults, with the fault tools in the actor threads', () => {
  it('turns a throwing tool into an error result the model reads, and the actor completes', async () => {
    const { bad, siblings, events, retried } = await runFault('boom');
    expect(retried).toEqual([]);
    expect(bad).toMatchObject({ status: 'completed', final: 'the faulty one answered' });
    const result = events.find(
      (event) => event.type === 'tool.result' && event.agentId === bad?.agentId,
    );
    expect(result).toMatchObject({
      ok: false,
      content: expect.stringContaining('boom: the tool failed on purpose'),
    });
    expect(siblings.every((result) => result?.status === 'completed')).toBe(true);
    expectWellFormed(events);
  });

  it('fails only the actor whose tool calls process.exit, with the exit as reason', async () => {
    const { bad, siblings, events, retried } = await runFault('exit_process');
    expect(bad).toMatchObject({ status: 'failed', error: { code: 'runtime.worker_exit' } });
    expect(retried).toHaveLength(2);
    expect(bad?.error?.message).toContain('exited');
    expect(siblings.every((result) => result?.status === 'completed')).toBe(true);
    expectWellFormed(events);
  });

  it('fails only the actor whose tool throws an uncaught error on a timer', async () => {
    const { bad, siblings, events, retried } = await runFault('crash_later');
    expect(bad).toMatchObject({ status: 'failed', error: { code: 'runtime.worker_exit' } });
    expect(retried).toHaveLength(2);
    expect(bad?.error?.message).toContain('uncaught: crashed on purpose');
    expect(siblings.every((result) => result?.status === 'completed')).toBe(true);
    expectWellFormed(events);
  });

  it('fails only the actor that runs its thread out of memory under the resource limits', async () => {
    const { bad, siblings, events, retried } = await runFault('eat_memory');
    expect(bad).toMatchObject({ status: 'failed', error: { code: 'runtime.worker_exit' } });
    expect(retried).toHaveLength(2);
    expect(bad?.error?.message).toContain('out of memory');
    expect(siblings.every((result) => result?.status === 'completed')).toBe(true);
    expectWellFormed(events);
  });

  it('times out an actor that hangs past its timeout, stopping its thread after the grace period', async () => {
    const { bad, siblings, events, retried } = await runFault('spin_forever', { timeoutMs: 200 });
    expect(bad).toMatchObject({ status: 'timed_out', error: { code: 'timeout' } });
    expect(retried).toHaveLength(2);
    expect(bad?.error?.message).toContain('its thread was stopped');
    expect(siblings.every((result) => result?.status === 'completed')).toBe(true);
    expectWellFormed(events);
  });

  it('stops the thread of an actor that blocks it from its start, even before the thread reported ready', async () => {
    // The local transport, watched: the test learns when the actor's start
    // went out, so it can order its cancel behind it on the port.
    const local = new LocalTransport({
      threads: 1,
      config: {
        runId: 'faults-early-stop',
        workspace: process.cwd(),
        grants: ['read'],
        toolModules: [FAULT_TOOLS],
        hasApprove: false,
      },
    });
    let started: () => void = () => {};
    const start = new Promise<void>((resolve) => {
      started = resolve;
    });
    const transport: Transport = {
      start: (handlers) => local.start(handlers),
      hosts: () => local.hosts(),
      send: (hostId: number, item: MainToWorkerInput) => {
        local.send(hostId, item);
        if (item.type === 'actor.start') started();
      },
      terminate: (hostId, reason) => local.terminate(hostId, reason),
      close: (graceMs) => local.close(graceMs),
    };
    const { runtime, events } = makeRuntime({
      runId: 'faults-early-stop',
      roles: [faulty('spin_forever')],
      model: script('spin_forever'),
      transport,
      // The grace period ends long before a thread can boot: the thread is
      // stopped while the main thread has not heard its host.ready yet.
      cancelGraceMs: 0,
    });
    const ref = runtime.spawn('faulty', 'misbehave');
    await start;
    // The start's batch goes out at the end of its turn; the cancel follows in
    // a later message, which the actor never reads: it blocks its thread first.
    await new Promise((resolve) => setImmediate(resolve));
    ref.cancel('a test cancelled it');
    const result = await ref.result;
    expect(result).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect(result.error?.message).toContain('its thread was stopped');
    expectWellFormed(events);
  });

  it('escalates a crash loop to the parent once the restart limit is reached', async () => {
    const crasher = defineRole({
      name: 'crasher',
      description: 'c',
      system: 'c',
      tools: [userTool('exit_process')],
      retry: { maxRetries: 10, backoffMs: 0, maxRestarts: 2, periodMs: 60_000 },
    });
    const { runtime, events } = makeRuntime({
      roles: [crasher],
      model: {
        provider: 'scripted',
        script: { steps: [{ toolCalls: [{ name: 'exit_process' }], repeat: true }] },
      },
      toolIsolation: 'thread',
    });
    const result = await runtime.spawn('crasher', 'crash', { parent: 'coordinator' }).result;
    expect(result).toMatchObject({ status: 'failed', error: { code: 'runtime.worker_exit' } });
    expect(result.error?.message).toContain('restart limit reached');
    expect(events.filter((event) => event.type === 'agent.progress')).toHaveLength(2);
    expectWellFormed(events, ['coordinator']);
  });

  it("cancels the children of a delegating actor's failed attempt before it restarts", async () => {
    const lead = defineRole({
      name: 'lead',
      description: 'l',
      system: 'l',
      canDelegate: true,
      tools: [userTool('exit_process')],
      retry: { maxRetries: 1, backoffMs: 0 },
    });
    const helper = defineRole({
      name: 'helper',
      description: 'h',
      system: 'h',
      tools: [userTool('wait_for_cancel')],
      retry: 'fail_fast',
    });
    const { runtime, events } = makeRuntime({
      roles: [lead, helper],
      toolIsolation: 'thread',
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'lead', call: 1 },
              toolCalls: [{ name: 'spawn_agent', arguments: { role: 'helper', task: 'wait' } }],
              repeat: true,
            },
            { match: { role: 'lead' }, toolCalls: [{ name: 'exit_process' }], repeat: true },
            { match: { role: 'helper' }, toolCalls: [{ name: 'wait_for_cancel' }], repeat: true },
          ],
        },
      },
    });
    const result = await runtime.spawn('lead', 'delegate, then crash').result;
    expect(result).toMatchObject({ status: 'failed', error: { code: 'runtime.worker_exit' } });
    // The last attempt's helper is cancelled as its parent ends: wait until everything has.
    await runtime.close();
    const finished = ofType(events, 'agent.finished').filter((event) => event.role === 'helper');
    // The first attempt's helper is cancelled when its parent restarts, not left working for nobody.
    expect(finished.map((event) => event.agentId)).toContain('helper-1');
    const first = finished.find((event) => event.agentId === 'helper-1');
    expect(first?.error?.message).toContain('its parent lead-1 restarted after attempt 1');
    expectWellFormed(events);
  });
});
