import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { defineRole } from '../../src/roles/role.js';
import { createNatsTransport } from '../../src/runtime/nats-setup.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import { createRunId } from '../../src/util/ids.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';
import { expectWellFormed, ofType } from './helpers.js';
import { type NodeProcess, startNode, stopNode } from './nats-helpers.js';

const worker = defineRole({ name: 'worker', description: 'w', system: 'w' });

let server: NatsServer;
const nodes: NodeProcess[] = [];
const runtimes: Runtime[] = [];

beforeEach(async () => {
  server = await NatsServer.start();
});

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
  await Promise.all(nodes.splice(0).map((node) => stopNode(node)));
  await server.dispose();
});

async function natsRuntime(
  options: Partial<RuntimeOptions> & Pick<RuntimeOptions, 'model'>,
): Promise<{ runtime: Runtime; events: AgentEvent[] }> {
  const runId = createRunId();
  const full: RuntimeOptions = {
    workspace: process.cwd(),
    grants: ['read'],
    runId,
    ...options,
  };
  const transport = await createNatsTransport(runId, full, { url: server.url, deadAfterMs: 3000 });
  const runtime = new Runtime({ ...full, transport });
  runtimes.push(runtime);
  const events: AgentEvent[] = [];
  runtime.bus.onAny((event) => events.push(event));
  return { runtime, events };
}

function nodeOf(events: readonly AgentEvent[]): Map<string, string> {
  const placed = new Map<string, string>();
  for (const event of ofType(events, 'agent.progress')) {
    const match = /(?:runs|continues) on node (\S+?)[;]?$|(?:runs|continues) on node (\S+?);/.exec(
      event.note,
    );
    const node = match?.[1] ?? match?.[2];
    if (node !== undefined) placed.set(event.agentId, node);
  }
  return placed;
}

describe.skipIf(natsServerBinary() === undefined)('NATS transport', () => {
  it('runs 200 actors over two worker processes: all finish, spread over both, events ordered per agent', async () => {
    nodes.push(
      ...(await Promise.all([startNode(server.url, 'node-a'), startNode(server.url, 'node-b')])),
    );
    const { runtime, events } = await natsRuntime({
      roles: [worker],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { call: 1 },
              toolCalls: [{ name: 'list_files', arguments: { path: '.' } }],
              repeat: true,
            },
            { content: 'done', repeat: true },
          ],
        },
      },
    });
    runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'fan out' });
    const refs = Array.from({ length: 200 }, (_, index) =>
      runtime.spawn('worker', `task ${index}`, { parent: 'coordinator' }),
    );
    const results = await Promise.all(refs.map((ref) => ref.result));

    expect(results.filter((result) => result.status !== 'completed')).toEqual([]);
    expect(results.every((result) => result.final === 'done')).toBe(true);
    const placed = nodeOf(events);
    expect(placed.size).toBe(200);
    const perNode = new Map<string, number>();
    for (const node of placed.values()) perNode.set(node, (perNode.get(node) ?? 0) + 1);
    expect([...perNode.keys()].sort()).toEqual(['node-a', 'node-b']);
    expectWellFormed(events, ['coordinator']);
    // Per agent: request, tool call, result, request, response… in the order the actor made them.
    for (const ref of refs) {
      const types = events
        .filter((event) => event.agentId === ref.id && event.type !== 'model.delta')
        .map((event) => event.type)
        .filter((type) => type !== 'agent.progress' && type !== 'step');
      expect(types).toEqual([
        'agent.spawned',
        'model.request',
        'model.response',
        'tool.call',
        'tool.result',
        'model.request',
        'model.response',
        'agent.finished',
      ]);
    }
  }, 120_000);
});
