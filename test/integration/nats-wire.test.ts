import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineRole } from '../../src/roles/role.js';
import { createNatsTransport } from '../../src/runtime/nats-setup.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import { subjects } from '../../src/runtime/wire/nats/nats-link.js';
import { encode, NATS_WIRE_VERSION, type NodeInfo } from '../../src/runtime/wire/nats/node-wire.js';
import { createRunId } from '../../src/util/ids.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';

// A node of another troupe version reads another work queue (its wire's), so it never sees this
// coordinator's spawns: a run with only such nodes says so rather than waiting in silence.

const worker = defineRole({ name: 'worker', description: 'w', system: 'w' });

let server: NatsServer;
let standIn: NatsConnection | undefined;
const runtimes: Runtime[] = [];

beforeEach(async () => {
  server = await NatsServer.start();
});

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
  await standIn?.close();
  standIn = undefined;
  await server.dispose();
});

function olderNode(node: string): NodeInfo {
  return {
    node,
    version: '0.0.9',
    wire: NATS_WIRE_VERSION - 1,
    threads: 2,
    maxActors: 100,
    actors: 0,
    runs: 0,
    startedAt: 1,
  };
}

describe.skipIf(natsServerBinary() === undefined)('NATS wire versions', () => {
  it('fails a spawn that only nodes of another wire could take, naming them and what to do', async () => {
    const nc = await connect({ servers: server.url });
    standIn = nc;
    // It answers the coordinator's ping as a node does, and takes nothing.
    nc.subscribe(subjects.nodesPing, {
      callback: (_error, msg) => {
        msg.respond(encode(olderNode('old-node')));
      },
    });
    await nc.flush();
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
      placeTimeoutMs: 1500,
    });
    const runtime = new Runtime({ ...options, transport });
    runtimes.push(runtime);
    runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'fan out' });

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
