import { afterEach, describe, expect, it, vi } from 'vitest';
import { ToolPool } from '../../src/runtime/wire/tool-pool.js';
import { FAULT_TOOLS } from './helpers.js';

const pools: ToolPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

function makePool(
  options: {
    timeoutMs?: number;
    blockedMs?: number;
    threads?: number;
    startThreads?: number;
    workerUrl?: URL;
  } = {},
) {
  const pool = new ToolPool({
    threads: options.threads ?? 1,
    startThreads: options.startThreads,
    workerUrl: options.workerUrl,
    timeoutMs: options.timeoutMs,
    blockedMs: options.blockedMs,
    config: {
      runId: 'tool-pool-test',
      workspace: process.cwd(),
      grants: ['read'],
      toolModules: [FAULT_TOOLS],
      hasApprove: true,
      maxResultChars: 1000,
    },
  });
  pools.push(pool);
  return pool;
}

const quiet = { progress: () => {} };
const call = (tool: string, input: unknown = {}) => ({ tool, input, agentId: 'a-1' });

describe('ToolPool', () => {
  it('starts one thread and grows to its limit only while every thread is busy', async () => {
    const pool = makePool({ threads: 2, blockedMs: 60_000 });
    // Quick calls, many at once: one thread serves them and the pool does not grow.
    const quick = Array.from({ length: 40 }, (_, index) =>
      pool.call(call('echo', { text: String(index) }), quiet),
    );
    for (const handle of quick) expect(await handle.answer).toMatchObject({ ok: true });
    expect(pool.threadCount).toBe(1);
    // CPU-bound calls keep the one thread busy: a second one starts and takes calls.
    const burns = Array.from({ length: 8 }, () => pool.call(call('burn', { ms: 250 }), quiet));
    await vi.waitFor(() => expect(pool.threadCount).toBe(2), { timeout: 60_000, interval: 20 });
    for (const handle of burns)
      expect(await handle.answer).toEqual({ ok: true, content: 'burned 250 ms' });
    expect(pool.threadCount).toBe(2);
  });

  it('answers a call that never settles with a timeout and keeps its thread for the others', async () => {
    const pool = makePool({ timeoutMs: 300 });
    const hung = pool.call(call('never_settle'), quiet);
    const fine = pool.call(call('echo', { text: 'hi' }), quiet);
    expect(await fine.answer).toEqual({ ok: true, content: 'echo: hi' });
    expect(await hung.answer).toMatchObject({
      ok: false,
      code: 'tool.timeout',
      message: expect.stringContaining('never_settle did not finish within 300 ms'),
    });
    // The same thread serves the next call: nothing was restarted for a call that only waited.
    expect(await pool.call(call('echo', { text: 'again' }), quiet).answer).toMatchObject({
      ok: true,
    });
    expect(pool.threadCount).toBe(1);
  });

  it('names the call that exits its thread; its neighbour is run again, not failed', async () => {
    const pool = makePool();
    const slow = pool.call(call('wait_for_cancel'), quiet);
    const exit = pool.call(call('boom_exit'), quiet);
    expect(await exit.answer).toMatchObject({
      ok: false,
      code: 'tool.failed',
      message: expect.stringContaining('boom_exit called process.exit(3)'),
    });
    slow.cancel();
    expect(await slow.answer).toMatchObject({ ok: false, code: 'cancelled' });
    expect(await pool.call(call('echo', { text: 'after' }), quiet).answer).toEqual({
      ok: true,
      content: 'echo: after',
    });
  });

  it('stops a thread that a busy loop blocks, naming the loop', async () => {
    const pool = makePool({ blockedMs: 300 });
    const spin = pool.call(call('spin_forever'), quiet);
    expect(await spin.answer).toMatchObject({
      ok: false,
      message: expect.stringMatching(/spin_forever blocked its thread for \d+ ms/),
    });
  });

  it('carries progress notes and approvals across the pool', async () => {
    const pool = makePool();
    const notes: string[] = [];
    const asked: string[] = [];
    const progress = pool.call(call('emit_progress', { count: 3 }), {
      progress: (note) => notes.push(note),
    });
    expect(await progress.answer).toEqual({ ok: true, content: 'reported 3' });
    expect(notes).toEqual(['progress 0', 'progress 1', 'progress 2']);
    const approval = pool.call(call('ask_approval', { action: 'delete x' }), {
      progress: () => {},
      approve: async (tool, summary) => {
        asked.push(`${tool}: ${summary}`);
        return true;
      },
    });
    expect(await approval.answer).toEqual({ ok: true, content: 'approved: delete x' });
    expect(asked).toEqual(['ask_approval: delete x']);
  });
});
