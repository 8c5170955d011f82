import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listNodes } from '../../src/runtime/nats-setup.js';
import { subjects } from '../../src/runtime/wire/nats/nats-link.js';
import { encode, NATS_WIRE_VERSION, type NodeInfo } from '../../src/runtime/wire/nats/node-wire.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';

// `troupe nodes` lists what answers the nodes' ping: here, stand-ins that answer
// as worker nodes do, so the order is checked without starting node processes.

let server: NatsServer;
let responder: NatsConnection | undefined;

beforeEach(async () => {
  server = await NatsServer.start();
});

afterEach(async () => {
  await responder?.close();
  responder = undefined;
  await server.dispose();
});

function info(node: string): NodeInfo {
  return {
    node,
    version: '0.1.0',
    wire: NATS_WIRE_VERSION,
    threads: 2,
    maxActors: 5000,
    actors: 0,
    runs: 0,
    startedAt: 1,
  };
}

describe.skipIf(natsServerBinary() === undefined)('troupe nodes', () => {
  it('lists the nodes in natural name order, the same on every machine, and skips replies that are not node reports', async () => {
    const nc = await connect({ servers: server.url });
    responder = nc;
    const names = ['node-10', 'node-2', 'Node-3', 'alpha', 'node-1'];
    nc.subscribe(subjects.nodesPing, {
      callback: (_error, msg) => {
        for (const name of names) nc.publish(msg.reply ?? '', encode(info(name)));
        nc.publish(msg.reply ?? '', encode({ not: 'a node' }));
      },
    });
    await nc.flush();
    const nodes = await listNodes({ url: server.url }, 500);
    expect(nodes.map((node) => node.node)).toEqual([
      'alpha',
      'node-1',
      'node-2',
      'Node-3',
      'node-10',
    ]);
  });
});
