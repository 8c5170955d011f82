import { afterEach, describe, expect, it } from 'vitest';
import type { TroupeError } from '../../src/errors.js';
import { agentWorkerUrl, LocalTransport } from '../../src/runtime/wire/local-transport.js';
import type { WorkerWireItem } from '../../src/runtime/wire/protocol.js';
import { adoptPrestartedPool, prestartAgentPool } from '../../src/runtime/wire/thread-start.js';
import type { TransportHandlers } from '../../src/runtime/wire/transport.js';

const open: LocalTransport[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((transport) => transport.close(1000)));
});

type Heard =
  | { kind: 'up'; hostId: number }
  | { kind: 'ready'; hostId: number }
  | { kind: 'down'; hostId: number; error: TroupeError };

/** A one-thread transport and what its handlers heard, in order; `next` waits for the next match. */
function startTransport(threads = 1) {
  const transport = new LocalTransport({
    threads,
    config: {
      runId: 'r',
      workspace: process.cwd(),
      grants: [],
      toolModules: [],
      hasApprove: false,
    },
  });
  open.push(transport);
  const heard: Heard[] = [];
  const waiters: { match: (entry: Heard) => boolean; resolve: (entry: Heard) => void }[] = [];
  const hear = (entry: Heard): void => {
    heard.push(entry);
    for (const waiter of waiters.splice(0)) {
      if (waiter.match(entry)) waiter.resolve(entry);
      else waiters.push(waiter);
    }
  };
  const handlers: TransportHandlers = {
    items: (hostId: number, items: WorkerWireItem[]) => {
      if (items.some((item) => (item as { type?: string }).type === 'host.ready'))
        hear({ kind: 'ready', hostId });
    },
    hostDown: (hostId, error) => hear({ kind: 'down', hostId, error }),
    hostUp: (hostId) => hear({ kind: 'up', hostId }),
    error: () => {},
  };
  const next = (match: (entry: Heard) => boolean): Promise<Heard> => {
    const seen = heard.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => waiters.push({ match, resolve }));
  };
  transport.start(handlers);
  return { transport, heard, next };
}

describe('LocalTransport', () => {
  it('adopts threads prestarted with its shape, and its hosts get the config with their task', async () => {
    const shape = { filename: agentWorkerUrl().href, threads: 1 };
    prestartAgentPool(shape);
    const { transport, next } = startTransport();
    const [first] = transport.hosts();
    expect(await next((entry) => entry.kind === 'ready')).toEqual({ kind: 'ready', hostId: first });
    // Handed over once: nothing is waiting any more.
    expect(adoptPrestartedPool(shape)).toBeUndefined();
    expect(transport.threadCount).toBe(1);
  });

  it('starts one host, and another at each grow() once the last is ready, up to its threads', async () => {
    const { transport, next } = startTransport(2);
    expect(transport.hosts()).toHaveLength(1);
    expect(transport.spareHosts()).toBe(1);
    // Not while a host it has is still starting: that is already more work for the cores.
    expect(transport.grow()).toBe(false);
    const [first] = transport.hosts();
    await next((entry) => entry.kind === 'ready' && entry.hostId === first);
    expect(transport.grow()).toBe(true);
    const second = transport.hosts().find((id) => id !== first);
    expect(second).toBeDefined();
    await next((entry) => entry.kind === 'ready' && entry.hostId === second);
    expect(transport.threadCount).toBe(2);
    // At its limit.
    expect(transport.spareHosts()).toBe(0);
    expect(transport.grow()).toBe(false);
    expect(transport.hosts()).toHaveLength(2);
  });

  it('does not adopt prestarted threads of another shape', async () => {
    prestartAgentPool({ filename: agentWorkerUrl().href, threads: 1 });
    expect(
      adoptPrestartedPool({
        filename: agentWorkerUrl().href,
        threads: 1,
        resourceLimits: { maxOldGenerationSizeMb: 64 },
      }),
    ).toBeUndefined();
    // The mismatched pool was dropped, not kept for a later transport.
    expect(adoptPrestartedPool({ filename: agentWorkerUrl().href, threads: 1 })).toBeUndefined();
  });

  it('stops a host told to terminate before its thread reported ready, and replaces it', async () => {
    const { transport, next } = startTransport();
    const [first] = transport.hosts();
    expect(first).toBeDefined();
    const hostId = first as number;
    // Synchronously after start: the main thread cannot have read host.ready
    // yet, so the transport does not know the host's thread. An actor placed
    // there may block that thread as soon as it starts; it must still stop.
    transport.terminate(hostId, 'a test stopped it');
    const fate = await next((entry) => entry.hostId === hostId && entry.kind !== 'up');
    expect(fate.kind).toBe('down');
    expect(fate.kind === 'down' && fate.error).toMatchObject({
      code: 'runtime.worker_exit',
      message: expect.stringContaining('terminated: a test stopped it'),
    });
    // The pool replaces the thread and the replacement host comes up and says ready.
    const replacement = await next((entry) => entry.kind === 'up' && entry.hostId !== hostId);
    await next((entry) => entry.kind === 'ready' && entry.hostId === replacement.hostId);
    expect(transport.hosts()).toEqual([replacement.hostId]);
  });

  it('stops a ready host when told to terminate it', async () => {
    const { transport, next } = startTransport();
    const hostId = transport.hosts()[0] as number;
    await next((entry) => entry.kind === 'ready' && entry.hostId === hostId);
    transport.terminate(hostId, 'a test stopped it');
    const fate = await next((entry) => entry.kind === 'down' && entry.hostId === hostId);
    expect(fate.kind === 'down' && fate.error.message).toContain('terminated: a test stopped it');
  });
});

describe('a pool whose thread entry cannot be loaded (a missing build)', () => {
  it('fails the actor with a message that says what to do, instead of waiting for ever', async () => {
    const { Runtime } = await import('../../src/runtime/runtime.js');
    const { hostConfigOf } = await import('../../src/runtime/pool-transport.js');
    const { defineRole } = await import('../../src/roles/role.js');
    const options = {
      model: { provider: 'scripted' as const, script: { steps: [{ content: 'done' }] } },
      workspace: process.cwd(),
      grants: ['read' as const],
      runId: 'missing-entry',
    };
    const transport = new LocalTransport({
      threads: 1,
      config: hostConfigOf('missing-entry', options),
      workerUrl: new URL('file:///nonexistent/troupe/agent-entry.cjs'),
    });
    const runtime = new Runtime({ ...options, transport });
    const errors: string[] = [];
    runtime.bus.on('callback.error', (event) => errors.push(event.error.message));
    try {
      const role = defineRole({ name: 'w', description: 'w', system: 'w', tools: [] });
      const result = await runtime.spawn(role, 'work').result;
      expect(result.status).toBe('failed');
      // Whether a host's death is reported on its own (callback.error) before the runtime gives up
      // depends on where the actor waited when it came; what the person reads names the file and
      // says what to do either way.
      const told = `${result.error?.message ?? ''}\n${errors.join('\n')}`;
      expect(told).toContain('agent-entry.cjs');
      expect(told).toMatch(/npm run build/);
    } finally {
      await runtime.close();
    }
  });
});
