import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineRole } from '../../../src/roles/role.js';
import { FIRST_ROOM } from '../../../src/runtime/actors/scheduler.js';
import { Runtime } from '../../../src/runtime/runtime.js';
import type { MainToWorkerInput } from '../../../src/runtime/wire/protocol.js';
import type { Transport, TransportHandlers } from '../../../src/runtime/wire/transport.js';

// Hosts that never answer: the test sees which actors the runtime starts where, and says how
// busy each host's event loop is. `first` hosts at the start; grow() adds one (ready at once
// here) up to `most`.
function fakeHosts(
  busy: number | undefined,
  { first = 2, most = first }: { first?: number; most?: number } = {},
): Transport & { starts: Map<number, number>; load: number | undefined; grown: number } {
  let handlers: TransportHandlers | undefined;
  const ids = Array.from({ length: first }, (_, index) => index + 1);
  const transport = {
    starts: new Map<number, number>(ids.map((id) => [id, 0])),
    load: busy,
    grown: 0,
    start(given: TransportHandlers): void {
      handlers = given;
      for (const id of ids) given.hostUp(id);
    },
    hosts: () => [...ids],
    send(hostId: number, item: MainToWorkerInput): void {
      if (item.type === 'actor.start')
        transport.starts.set(hostId, (transport.starts.get(hostId) ?? 0) + 1);
    },
    busy: (): number | undefined => transport.load,
    grow(): boolean {
      if (ids.length >= most) return false;
      const id = ids.length + 1;
      ids.push(id);
      transport.grown += 1;
      transport.starts.set(id, 0);
      handlers?.hostUp(id);
      return true;
    },
    spareHosts: (): number => most - ids.length,
    terminate(): void {},
    close: async (): Promise<void> => {},
  };
  return transport;
}

// One host at first, up to three.
const growingHosts = (busy: number) => fakeHosts(busy, { first: 1, most: 3 });

// Every timer the scheduler keeps (its looks and its watch), and the clock they read.
const SCHEDULER_TIMERS = [
  'setTimeout',
  'clearTimeout',
  'setInterval',
  'clearInterval',
  'performance',
] as const;

const base = {
  model: { provider: 'scripted' as const, script: { steps: [{ content: 'done' }] } },
  workspace: '/tmp',
  grants: ['read' as const],
  cancelGraceMs: 0,
};
const role = defineRole({ name: 'w', description: 'w', system: 'w', tools: [] });

describe("a host's room", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('starts at FIRST_ROOM and grows, up to maxActorsPerThread, only while the host has time to spare', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const transport = fakeHosts(0.97);
    const runtime = new Runtime({ ...base, transport, maxActorsPerThread: 3000 });
    for (let index = 0; index < 7000; index += 1) runtime.spawn(role, `task ${index}`);
    await Promise.resolve();
    expect([...transport.starts.values()]).toEqual([FIRST_ROOM, FIRST_ROOM]);
    // Saturated: looking again changes nothing.
    await vi.advanceTimersByTimeAsync(1000);
    expect([...transport.starts.values()]).toEqual([FIRST_ROOM, FIRST_ROOM]);
    // Time to spare: the room grows in proportion (0.9 / 0.6 = 1.5 times), up to
    // maxActorsPerThread, once the host has been full for two looks (a busy figure from before
    // it was full says nothing).
    transport.load = 0.6;
    await vi.advanceTimersByTimeAsync(100);
    expect([...transport.starts.values()]).toEqual([1.5 * FIRST_ROOM, 1.5 * FIRST_ROOM]);
    await vi.advanceTimersByTimeAsync(200);
    expect([...transport.starts.values()]).toEqual([1.5 * FIRST_ROOM, 1.5 * FIRST_ROOM]);
    await vi.advanceTimersByTimeAsync(100);
    expect([...transport.starts.values()]).toEqual([2304, 2304]);
    // Nearly idle: four times at most, and never past maxActorsPerThread.
    transport.load = 0.05;
    await vi.advanceTimersByTimeAsync(300);
    expect([...transport.starts.values()]).toEqual([3000, 3000]);
    // The rest wait for a place, and spawning is still allowed: they count against maxQueued
    // only past what the hosts could hold at maxActorsPerThread.
    expect(runtime.spawn(role, 'one more')).toBeDefined();
    vi.useRealTimers();
    await runtime.close();
  });

  it('does not grow while the main thread, which every actor event crosses, is saturated', async () => {
    // Real timers and the main thread's real event-loop use: hosts idle, the main thread first kept
    // busy (a synchronous loop past two looks), then left idle.
    const transport = fakeHosts(0.05);
    const runtime = new Runtime({ ...base, transport, maxActorsPerThread: 3000 });
    for (let index = 0; index < 7000; index += 1) runtime.spawn(role, `task ${index}`);
    await Promise.resolve();
    expect([...transport.starts.values()]).toEqual([FIRST_ROOM, FIRST_ROOM]);
    for (let look = 0; look < 4; look += 1) {
      const until = performance.now() + 150;
      while (performance.now() < until) {
        // Busy: the look timer can only run after this, and finds the main thread saturated.
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect([...transport.starts.values()]).toEqual([FIRST_ROOM, FIRST_ROOM]);
    // Idle (the loop waits in its poll phase): the rooms grow within a few looks.
    const grown = (): boolean =>
      [...transport.starts.values()].every((count) => count > FIRST_ROOM);
    while (!grown()) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(grown()).toBe(true);
    await runtime.close();
  });

  it('is maxActorsPerThread at once when the transport cannot say how busy its hosts are', async () => {
    const transport = fakeHosts(undefined);
    const { busy: _busy, ...blind } = transport;
    const runtime = new Runtime({ ...base, transport: blind, maxActorsPerThread: 1500 });
    for (let index = 0; index < 4000; index += 1) runtime.spawn(role, `task ${index}`);
    await Promise.resolve();
    expect([...transport.starts.values()]).toEqual([1500, 1500]);
    await runtime.close();
  });

  it('counts only what no host could hold against maxQueued', async () => {
    const transport = fakeHosts(0.99);
    const runtime = new Runtime({
      ...base,
      transport,
      maxActorsPerThread: 2000,
      maxQueued: 10,
    });
    // 2 x 1,024 placed, 2 x 976 held back while the rooms may grow, 10 over: all accepted.
    const accepted = Array.from({ length: 4010 }, (_, index) =>
      runtime.spawn(role, `task ${index}`),
    );
    const refused = runtime.spawn(role, 'too many');
    const result = await refused.result;
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/10 spawns already wait for a place/);
    await runtime.close();
    const ends = await Promise.all(accepted.map((ref) => ref.result));
    expect(ends.filter((end) => /wait for a place/.test(end.error?.message ?? ''))).toEqual([]);
  });

  it('adds a host only while actors wait and every host is full and saturated, one per look', async () => {
    vi.useFakeTimers({ toFake: [...SCHEDULER_TIMERS] });
    const transport = growingHosts(0.97);
    const runtime = new Runtime({ ...base, transport, maxActorsPerThread: 3000 });
    // A thousand fit the first host: nothing waits, so no host is added for a queue (the watch
    // of the next tests would add one after a second of this).
    for (let index = 0; index < 1000; index += 1) runtime.spawn(role, `task ${index}`);
    await vi.advanceTimersByTimeAsync(500);
    expect(transport.grown).toBe(0);
    // Past its room, saturated: once every host was found full at least two looks apart, a host
    // more, filled from the queue at once.
    for (let index = 0; index < 3000; index += 1) runtime.spawn(role, `more ${index}`);
    await Promise.resolve();
    expect([...transport.starts.values()]).toEqual([FIRST_ROOM]);
    await vi.advanceTimersByTimeAsync(200);
    expect(transport.grown).toBe(0);
    await vi.advanceTimersByTimeAsync(100);
    expect(transport.grown).toBe(1);
    expect([...transport.starts.values()]).toEqual([FIRST_ROOM, FIRST_ROOM]);
    // The new host full and saturated for as long: one more.
    await vi.advanceTimersByTimeAsync(200);
    expect(transport.grown).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    expect(transport.grown).toBe(2);
    expect([...transport.starts.values()]).toEqual([FIRST_ROOM, FIRST_ROOM, FIRST_ROOM]);
    // At the transport's limit: the rest wait.
    await vi.advanceTimersByTimeAsync(1000);
    expect(transport.grown).toBe(2);
    vi.useRealTimers();
    await runtime.close();
  });

  it('grows the room of a host with time to spare instead of adding one', async () => {
    vi.useFakeTimers({ toFake: [...SCHEDULER_TIMERS] });
    const transport = growingHosts(0.3);
    const runtime = new Runtime({ ...base, transport, maxActorsPerThread: 3000 });
    for (let index = 0; index < 3000; index += 1) runtime.spawn(role, `task ${index}`);
    await vi.advanceTimersByTimeAsync(1000);
    expect(transport.grown).toBe(0);
    expect([...transport.starts.values()]).toEqual([3000]);
    vi.useRealTimers();
    await runtime.close();
  });

  it('counts the hosts the transport may still add as room, against maxQueued', async () => {
    const transport = growingHosts(0.99);
    const runtime = new Runtime({ ...base, transport, maxActorsPerThread: 2000, maxQueued: 10 });
    // 1,024 placed; 976 held back on the first host and 2 x 2,000 on the two it may add: accepted.
    const accepted = Array.from({ length: 1024 + 976 + 4000 + 10 }, (_, index) =>
      runtime.spawn(role, `task ${index}`),
    );
    const refused = await runtime.spawn(role, 'too many').result;
    expect(refused.error?.message).toMatch(/10 spawns already wait for a place/);
    await runtime.close();
    const ends = await Promise.all(accepted.map((ref) => ref.result));
    expect(ends.filter((end) => /wait for a place/.test(end.error?.message ?? ''))).toEqual([]);
  });

  it('adds a host with nothing waiting once every host was saturated, with actors on it, for a second', async () => {
    vi.useFakeTimers({ toFake: [...SCHEDULER_TIMERS] });
    const transport = growingHosts(0.97);
    const runtime = new Runtime({ ...base, transport, maxActorsPerThread: 3000 });
    for (let index = 0; index < 100; index += 1) runtime.spawn(role, `task ${index}`);
    await vi.advanceTimersByTimeAsync(900);
    expect(transport.grown).toBe(0);
    // A moment with time to spare starts the count again.
    transport.load = 0.5;
    await vi.advanceTimersByTimeAsync(100);
    transport.load = 0.97;
    await vi.advanceTimersByTimeAsync(900);
    expect(transport.grown).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    expect(transport.grown).toBe(1);
    // What is spawned next goes to the new host, the least loaded.
    for (let index = 0; index < 10; index += 1) runtime.spawn(role, `next ${index}`);
    await Promise.resolve();
    expect([...transport.starts.values()]).toEqual([100, 10]);
    vi.useRealTimers();
    await runtime.close();
  });

  it('adds no host while its threads have time to spare, however many actors they hold', async () => {
    vi.useFakeTimers({ toFake: [...SCHEDULER_TIMERS] });
    const transport = growingHosts(0.85);
    const runtime = new Runtime({ ...base, transport, maxActorsPerThread: 3000 });
    for (let index = 0; index < 1000; index += 1) runtime.spawn(role, `task ${index}`);
    await vi.advanceTimersByTimeAsync(5000);
    expect(transport.grown).toBe(0);
    vi.useRealTimers();
    await runtime.close();
  });
});
