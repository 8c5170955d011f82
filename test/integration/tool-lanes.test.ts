import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PooledTools } from '../../src/runtime/host/pooled-tools.js';
import type { WorkerWireItem } from '../../src/runtime/wire/protocol.js';
import { type ToolLaneDown, ToolPool } from '../../src/runtime/wire/tool-pool.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { FAULT_TOOLS } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// One actor host's pooled calls (PooledTools, in this thread) with a lane to
// each tool thread, wired to the pool as the runtime wires them: lanes opened
// by the pool, relayed calls (`tool.requested`) run by `pool.call`.
function lanedPool(options: { threads?: number } = {}) {
  const workspace = mkdtempSync(join(tmpdir(), 'troupe-lanes-'));
  const relayed: WorkerWireItem[] = [];
  const downs: ToolLaneDown[] = [];
  const asked: string[] = [];
  let opened: () => void = () => {};
  const lanesOpen = new Promise<void>((resolve) => {
    opened = resolve;
  });
  let nextId = 1;
  const handles = new Map<number, { cancel(): void }>();
  const tools: PooledTools = new PooledTools({
    nextRequestId: () => nextId++,
    approve: async (_actorId, request) => {
      asked.push(`${request.tool}: ${request.summary}`);
      return true;
    },
    post: (item) => {
      relayed.push(item);
      if ('type' in item && item.type === 'tool.cancelled') handles.get(item.requestId)?.cancel();
      if (!('type' in item) || item.type !== 'tool.requested') return;
      const handle = pool.call(
        { tool: item.tool, input: item.input, agentId: item.actorId, solo: item.solo },
        { progress: () => {} },
      );
      handles.set(item.requestId, handle);
      void handle.answer.then((answer) =>
        tools.answered({
          type: 'tool.answered',
          requestId: item.requestId,
          ok: answer.ok,
          content: answer.ok ? answer.content : answer.message,
          ...(answer.ok ? {} : { code: answer.code }),
        }),
      );
    },
  });
  const pool = new ToolPool({
    threads: options.threads ?? 1,
    config: {
      runId: 'tool-lanes-test',
      workspace,
      grants: ['read'],
      toolModules: [FAULT_TOOLS],
      hasApprove: true,
      maxResultChars: 1000,
    },
    lanes: {
      hosts: () => [1],
      open: (_hostId, lane) => {
        tools.open({ type: 'tool.lane', thread: lane.thread, port: lane.port, state: lane.state });
        opened();
        return true;
      },
      down: (_hostId, item) => {
        downs.push(item);
        tools.down(item);
      },
    },
  });
  cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
  cleanups.push(() => pool.close());
  cleanups.push(() => tools.close());
  pool.start();
  const context = (notes: string[] = []): ToolContext => ({
    signal: new AbortController().signal,
    runId: 'tool-lanes-test',
    agentId: 'a-1',
    workspace,
    grants: ['read'],
    progress: (note) => notes.push(note),
  });
  const requests = () => relayed.filter((item) => 'type' in item && item.type === 'tool.requested');
  return { pool, tools, lanesOpen, context, requests, downs, asked, workspace };
}

describe('tool lanes', () => {
  it('sends a call straight to a tool thread; the main thread relays nothing', async () => {
    const { tools, lanesOpen, context, requests } = lanedPool();
    await lanesOpen;
    await expect(tools.call('echo', { text: 'hi' }, context())).resolves.toBe('echo: hi');
    expect(requests()).toEqual([]);
  });

  it('carries progress notes and approvals on the lane', async () => {
    const { tools, lanesOpen, context, requests, asked } = lanedPool();
    await lanesOpen;
    const notes: string[] = [];
    await expect(tools.call('emit_progress', { count: 3 }, context(notes))).resolves.toBe(
      'reported 3',
    );
    expect(notes).toEqual(['progress 0', 'progress 1', 'progress 2']);
    await expect(tools.call('ask_approval', { action: 'delete x' }, context())).resolves.toBe(
      'approved: delete x',
    );
    expect(asked).toEqual(['ask_approval: delete x']);
    expect(requests()).toEqual([]);
  });

  it('names a lane call that exits its thread; its neighbour on the lane runs again', async () => {
    const { tools, lanesOpen, context, downs, workspace } = lanedPool();
    await lanesOpen;
    const neighbour = tools.call('wait_for_file', { path: 'gate' }, context());
    const exit = tools.call('boom_exit', {}, context());
    await expect(exit).rejects.toMatchObject({
      code: 'tool.failed',
      message: expect.stringContaining('boom_exit called process.exit(3)'),
    });
    expect(downs).toMatchObject([{ type: 'tool.lane.down', blame: 'named' }]);
    // The neighbour was not failed: it runs again on the replacement thread (a lane or the main thread).
    writeFileSync(join(workspace, 'gate'), '');
    await expect(neighbour).resolves.toBe('gate gate open');
  });

  it('runs a suspect alone through the main thread when nobody could be named', async () => {
    const { tools, lanesOpen, context, requests, workspace } = lanedPool();
    await lanesOpen;
    const suspect = tools.call('wait_for_file', { path: 'gate' }, context());
    // What the pool says when a thread died of a fault it could pin on no call.
    tools.down({
      type: 'tool.lane.down',
      thread: 1,
      what: 'crashed its thread (x)',
      blame: 'nobody',
    });
    expect(requests()).toMatchObject([{ tool: 'wait_for_file', solo: true }]);
    // A later call (no lane left here) waits until the suspect has run alone.
    const later = tools.call('echo', { text: 'later' }, context());
    expect(requests()).toMatchObject([{ tool: 'wait_for_file', solo: true }, { tool: 'echo' }]);
    // The thread still runs the lane's first copy, so the suspect waits for it to end.
    writeFileSync(join(workspace, 'gate'), '');
    await expect(suspect).resolves.toBe('gate gate open');
    await expect(later).resolves.toBe('echo: later');
  });
});
