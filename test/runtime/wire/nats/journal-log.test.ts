import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ModelResponse } from '../../../../src/model/types.js';
import { JournalLog } from '../../../../src/runtime/wire/nats/journal-log.js';
import {
  connectNats,
  ensureStreams,
  type NatsLink,
  STREAMS,
} from '../../../../src/runtime/wire/nats/nats-link.js';
import { NatsServer, natsServerBinary } from '../../../helpers/nats-server.js';

let server: NatsServer;
const links: NatsLink[] = [];

// Like the other NATS tests, skipped (not failed) where nats-server is not installed.
const hasServer = natsServerBinary() !== undefined;

beforeEach(async () => {
  if (hasServer) server = await NatsServer.start();
});

afterEach(async () => {
  await Promise.all(links.splice(0).map((link) => link.nc.close()));
  if (hasServer) await server.dispose();
});

async function link(): Promise<NatsLink> {
  const opened = await connectNats({ url: server.url, name: 'journal-log test' });
  links.push(opened);
  await ensureStreams(opened, 5000);
  return opened;
}

function response(content: string): ModelResponse {
  return {
    content,
    toolCalls: [],
    usage: { inputTokens: 1, outputTokens: 1 },
    stopReason: 'end',
  };
}

const contents = (responses: readonly ModelResponse[]): string[] =>
  responses.map((item) => item.content);

async function messagesIn(nats: NatsLink): Promise<number> {
  return (await nats.jsm.streams.info(STREAMS.responses)).state.messages;
}

describe.skipIf(!hasServer)('JournalLog', () => {
  it('stores the entries of one turn in one message and reads each actor back', async () => {
    const nats = await link();
    const writer = new JournalLog({ link: nats, runId: 'run-a', node: 'node-a', log: () => {} });
    const stored = Array.from({ length: 50 }, (_, index) =>
      writer.write({
        key: `agent-${index}`,
        chain: 'n1.1',
        from: 1,
        responses: [response(`first of ${index}`)],
      }),
    );
    await Promise.all(stored);

    expect(await messagesIn(nats)).toBe(1);
    const reader = new JournalLog({ link: nats, runId: 'run-a', node: 'node-b', log: () => {} });
    expect(contents(await reader.read('agent-7'))).toEqual(['first of 7']);
    expect(await reader.read('agent-unknown')).toEqual([]);
  });

  it('reads the chain that wrote last, whole from call 1, and batches written since its last read', async () => {
    const nats = await link();
    const nodeA = new JournalLog({ link: nats, runId: 'run-b', node: 'node-a', log: () => {} });
    const nodeB = new JournalLog({ link: nats, runId: 'run-b', node: 'node-b', log: () => {} });
    // Another run's batches are not this run's.
    const other = new JournalLog({ link: nats, runId: 'run-c', node: 'node-a', log: () => {} });
    await other.write({ key: 'w', chain: 'x.1', from: 1, responses: [response('other run')] });
    await nodeA.write({ key: 'w', chain: 'a.1', from: 1, responses: [response('one')] });
    await nodeA.write({ key: 'w', chain: 'a.1', from: 2, responses: [response('two')] });

    expect(contents(await nodeB.read('w'))).toEqual(['one', 'two']);

    // node-b took w over (two replayed) and writes its third call with the two before it.
    await nodeB.write({
      key: 'w',
      chain: 'b.1',
      from: 1,
      responses: [response('one'), response('two'), response('three')],
    });
    // A chain whose first entry is missing is not trusted.
    await nodeA.write({ key: 'w', chain: 'a.9', from: 3, responses: [response('stray')] });
    const again = new JournalLog({ link: nats, runId: 'run-b', node: 'node-c', log: () => {} });

    expect(contents(await nodeB.read('w'))).toEqual(['one', 'two', 'three']);
    expect(contents(await again.read('w'))).toEqual(['one', 'two', 'three']);
  });

  it("keeps a chain's inbox records beside its responses, whole from its first write", async () => {
    const nats = await link();
    const nodeA = new JournalLog({ link: nats, runId: 'run-i', node: 'node-a', log: () => {} });
    const nodeB = new JournalLog({ link: nats, runId: 'run-i', node: 'node-b', log: () => {} });
    const inbox = (step: number, hash: string) => ({
      kind: 'inbox' as const,
      step,
      hashes: [hash],
    });
    await nodeA.write({ key: 'w', chain: 'a.1', from: 1, responses: [response('one')] });
    await nodeA.write({ key: 'w', chain: 'a.1', from: 2, responses: [], inbox: [inbox(1, 'x')] });
    await nodeA.write({ key: 'w', chain: 'a.1', from: 2, responses: [response('two')] });

    expect(contents(await nodeB.read('w'))).toEqual(['one', 'two']);
    expect(nodeB.inboxOf('w')).toEqual([inbox(1, 'x')]);

    // node-b took w over: its chain starts with everything it replayed, inbox records included.
    await nodeB.write({
      key: 'w',
      chain: 'b.1',
      from: 1,
      responses: [response('one'), response('two')],
      inbox: [inbox(1, 'x'), inbox(2, 'y')],
    });
    const again = new JournalLog({ link: nats, runId: 'run-i', node: 'node-c', log: () => {} });
    await again.read('w');
    expect(again.inboxOf('w')).toEqual([inbox(1, 'x'), inbox(2, 'y')]);
    expect(again.inboxOf('unknown')).toEqual([]);
  });
});
