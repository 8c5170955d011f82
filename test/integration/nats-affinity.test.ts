import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { findingsChannel } from '../../src/roles/builtin.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { createNatsTransport } from '../../src/runtime/nats-setup.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { NatsTransport } from '../../src/runtime/wire/nats/nats-transport.js';
import { createRunId } from '../../src/util/ids.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';
import { FAULT_TOOLS, ofType } from './helpers.js';
import { type NodeProcess, startNode, stopNode } from './nats-helpers.js';

let server: NatsServer;
const nodes: NodeProcess[] = [];
const runtimes: Runtime[] = [];
const dirs: string[] = [];

beforeEach(async () => {
  server = await NatsServer.start();
});

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
  await Promise.all(nodes.splice(0).map((node) => stopNode(node)));
  await server.dispose();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Researchers of a pipeline and other actors, each held at a gate file until the test opens it.
const scout = defineRole({
  name: 'scout',
  description: 's',
  system: 's',
  tools: [userTool('wait_for_file')],
  publishes: [findingsChannel],
});
const holder = defineRole({
  name: 'holder',
  description: 'h',
  system: 'h',
  tools: [userTool('wait_for_file')],
});

function nodeOf(events: readonly AgentEvent[]): Map<string, string> {
  const placed = new Map<string, string>();
  for (const event of ofType(events, 'agent.progress')) {
    const node = /(?:runs|continues) on node ([^;\s]+)/.exec(event.note)?.[1];
    if (node !== undefined) placed.set(event.agentId, node);
  }
  return placed;
}

describe.skipIf(natsServerBinary() === undefined)('NATS placement', () => {
  it("places a channel pipeline's members together on the least-loaded node, and the rest elsewhere once that node is full", async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-nats-affinity-'));
    dirs.push(workspace);
    const runId = createRunId();
    const options = {
      workspace,
      grants: ['read', 'write'] as ('read' | 'write')[],
      runId,
      roles: [scout, holder],
      toolModules: [FAULT_TOOLS],
      model: {
        provider: 'scripted' as const,
        script: {
          steps: [
            {
              match: { role: 'scout', call: 1 },
              toolCalls: [{ name: 'wait_for_file', arguments: { path: 'go' } }],
            },
            { match: { role: 'scout' }, content: 'scouted' },
            {
              match: { role: 'holder', call: 1 },
              toolCalls: [{ name: 'wait_for_file', arguments: { path: 'go' } }],
            },
            { match: { role: 'holder' }, content: 'held' },
            { match: { role: 'analyst', lastUserContains: 'closed' }, content: 'analysed' },
            { match: { role: 'analyst' }, content: 'waiting', repeat: true },
          ],
        },
      },
    };
    const transport = (await createNatsTransport(runId, options, {
      url: server.url,
      deadAfterMs: 5000,
    })) as NatsTransport;
    const runtime = new Runtime({ ...options, transport });
    runtimes.push(runtime);
    const events: AgentEvent[] = [];
    runtime.bus.onAny((event) => events.push(event));
    runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'pipeline' });
    const spawn = (role: string, task: string) =>
      runtime.spawn(role, task, { parent: 'coordinator' });

    // node-a, alone at first, gets two actors that are not in the pipeline: half its room.
    nodes.push(await startNode(server.url, 'node-a', ['--max-actors', '4']));
    const held = [spawn('holder', 'hold 1'), spawn('holder', 'hold 2')];
    nodes.push(await startNode(server.url, 'node-b', ['--max-actors', '4']));
    // The coordinator has heard both nodes, node-a with its two actors.
    await vi.waitFor(
      () => {
        const loads = new Map(transport.nodeLoads.map((info) => [info.node, info.actors]));
        expect(loads.get('node-a')).toBe(2);
        expect(loads.get('node-b')).toBe(0);
      },
      { timeout: 60_000, interval: 100 },
    );

    // A pipeline of five: four researchers publishing findings and the analyst reading them.
    const members = [
      spawn('scout', 'Research solar.md'),
      spawn('scout', 'Research wind.md'),
      spawn('analyst', 'Analyse the findings as they arrive.'),
      spawn('scout', 'Research hydro.md'),
      spawn('scout', 'Research tides.md'),
    ];
    const memberIds = ['scout-1', 'scout-2', 'analyst-1', 'scout-3', 'scout-4'];
    await vi.waitFor(() => expect(memberIds.every((id) => nodeOf(events).has(id))).toBe(true), {
      timeout: 60_000,
      interval: 100,
    });
    writeFileSync(join(workspace, 'go'), 'open');
    const results = await Promise.all([...held, ...members].map((ref) => ref.result));
    expect(results.map((result) => result.status)).toEqual(Array(7).fill('completed'));

    const placed = nodeOf(events);
    expect(['holder-1', 'holder-2'].map((id) => placed.get(id))).toEqual(['node-a', 'node-a']);
    // node-b was the least loaded: the pipeline went there together while it had room (four),
    // and the member past its room went to the node that had some.
    const onB = memberIds.filter((id) => placed.get(id) === 'node-b');
    const onA = memberIds.filter((id) => placed.get(id) === 'node-a');
    expect(onB).toHaveLength(4);
    expect(onA).toHaveLength(1);
    expect(onB).toEqual(expect.arrayContaining(['scout-1', 'scout-2', 'analyst-1']));
  }, 300_000);
});
