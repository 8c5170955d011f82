import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { defineRole } from '../../src/roles/role.js';
import { createNatsTransport } from '../../src/runtime/nats-setup.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import { STREAMS, subjects } from '../../src/runtime/wire/nats/nats-link.js';
import type { NatsTransport } from '../../src/runtime/wire/nats/nats-transport.js';
import { encode, NATS_WIRE_VERSION, type NodeInfo } from '../../src/runtime/wire/nats/node-wire.js';
import { createRunId } from '../../src/util/ids.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';
import { ofType } from './helpers.js';
import { type NodeProcess, startNode, stopNode } from './nats-helpers.js';

// What the coordinator keeps in the work queue, against stand-in nodes (a connection that answers
// the nodes' ping and takes nothing) and, where a spawn has to run, a real node.

const worker = defineRole({
  name: 'worker',
  description: 'w',
  system: 'w',
  model: { provider: 'scripted', script: { steps: [{ content: 'done' }] } },
});

let server: NatsServer;
let standIn: NatsConnection | undefined;
const runtimes: Runtime[] = [];
const nodes: NodeProcess[] = [];

beforeEach(async () => {
  server = await NatsServer.start();
});

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
  await Promise.all(nodes.splice(0).map((node) => stopNode(node)));
  await standIn?.close();
  standIn = undefined;
  await server.dispose();
});

function standInNode(node: string, wire = NATS_WIRE_VERSION): NodeInfo {
  return {
    node,
    version: wire === NATS_WIRE_VERSION ? '0.1.0' : '0.0.9',
    wire,
    threads: 2,
    maxActors: 100,
    actors: 0,
    runs: 0,
    startedAt: 1,
  };
}

// A connection that answers the coordinator's ping as a node does, and takes nothing.
async function standInAnswering(info: NodeInfo): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url });
  standIn = nc;
  nc.subscribe(subjects.nodesPing, {
    callback: (_error, msg) => {
      msg.respond(encode(info));
    },
  });
  await nc.flush();
  return nc;
}

async function until(what: string, condition: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`still not: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// A run's runtime on the NATS transport, its coordinator registered.
async function natsRuntime(
  placeTimeoutMs: number,
): Promise<{ runtime: Runtime; transport: NatsTransport }> {
  const runId = createRunId();
  const options: RuntimeOptions = {
    workspace: process.cwd(),
    grants: ['read'],
    runId,
    roles: [worker],
    model: { provider: 'offline' },
  };
  const transport = await createNatsTransport(runId, options, {
    url: server.url,
    placeTimeoutMs,
  });
  const runtime = new Runtime({ ...options, transport });
  runtimes.push(runtime);
  runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'fan out' });
  return { runtime, transport };
}

describe.skipIf(natsServerBinary() === undefined)('NATS work queue', () => {
  it('takes a message out of the queue once none of its spawns is wanted, and keeps it while one is', async () => {
    const nc = await standInAnswering(standInNode('stand-in'));
    const jsm = await jetstreamManager(nc);
    const queued = async (): Promise<number> =>
      (await jsm.streams.info(STREAMS.work)).state.messages;
    const { runtime, transport } = await natsRuntime(20_000);
    const events: AgentEvent[] = [];
    runtime.bus.onAny((event) => events.push(event));
    // The first spawn starts the transport, which pings the nodes: then it knows the stand-in,
    // and a burst goes as one message (one live node).
    const first = runtime.spawn('worker', 'first', { parent: 'coordinator' });
    await until('the stand-in heard', () => transport.nodes.length === 1);
    await until('the first spawn queued', async () => (await queued()) === 1);

    // A burst cancelled whole before any node took it: its message leaves the queue.
    const gone = Array.from({ length: 3 }, (_, index) =>
      runtime.spawn('worker', `gone ${index}`, { parent: 'coordinator' }),
    );
    for (const ref of [first, ...gone]) runtime.cancel(ref.id, 'not needed');
    const cancelled = await Promise.all([first, ...gone].map((ref) => ref.result));
    expect(cancelled.map((result) => result.status)).toEqual(Array(4).fill('cancelled'));
    await until('the cancelled spawns left the queue', async () => (await queued()) === 0);

    // Four of a burst of five cancelled: the message stays for the fifth, which a node then runs.
    const burst = Array.from({ length: 5 }, (_, index) =>
      runtime.spawn('worker', `burst ${index}`, { parent: 'coordinator' }),
    );
    await until('the burst queued as one message', async () => (await queued()) === 1);
    const [kept, ...dropped] = burst;
    for (const ref of dropped) runtime.cancel(ref.id, 'not needed');
    expect(
      (await Promise.all(dropped.map((ref) => ref.result))).map((result) => result.status),
    ).toEqual(Array(4).fill('cancelled'));
    nodes.push(await startNode(server.url, 'node-a'));
    expect((await kept?.result)?.status).toBe('completed');
    // Only the wanted spawn ran: the node's claims of the cancelled ones were refused.
    const placed = ofType(events, 'agent.progress').map((event) => event.agentId);
    expect(placed).toEqual([kept?.id]);
    await until('the node acknowledged the message', async () => (await queued()) === 0);
  }, 60_000);

  it('fails a spawn that only nodes of another wire could take, naming them and what to do', async () => {
    await standInAnswering(standInNode('old-node', NATS_WIRE_VERSION - 1));
    const { runtime } = await natsRuntime(1500);

    const result = await runtime.spawn('worker', 'a task', { parent: 'coordinator' }).result;
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('runtime.unplaced');
    expect(result.error?.message).toMatch(
      new RegExp(
        `old-node \\(troupe 0\\.0\\.9, wire ${NATS_WIRE_VERSION - 1}\\) speak another troupe NATS wire .*run the same troupe version`,
      ),
    );
  }, 30_000);
});
