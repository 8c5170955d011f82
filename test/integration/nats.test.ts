import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { findingsChannel } from '../../src/roles/builtin.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { createNatsTransport } from '../../src/runtime/nats-setup.js';
import { FileJournal } from '../../src/runtime/resume/journal.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import { STREAMS } from '../../src/runtime/wire/nats/nats-link.js';
import type { NatsTransport } from '../../src/runtime/wire/nats/nats-transport.js';
import { createRunId } from '../../src/util/ids.js';
import {
  type MockOpenAIServer,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';
import { expectWellFormed, FAULT_TOOLS, ofType } from './helpers.js';
import { type NodeProcess, startNode, stopNode } from './nats-helpers.js';

const worker = defineRole({ name: 'worker', description: 'w', system: 'w' });
// One answer and done: what starts a run's transport before a test needs the nodes known.
const quick = defineRole({
  name: 'quick',
  description: 'q',
  system: 'q',
  model: { provider: 'scripted', script: { steps: [{ content: 'done' }] } },
});

// A researcher the tests can hold at a gate (wait_for_file, from the fault tools module).
const scout = defineRole({
  name: 'scout',
  description: 's',
  system: 's',
  tools: [userTool('wait_for_file')],
  publishes: [findingsChannel],
});

const finding = (source: string) => ({
  source,
  title: `About ${source}`,
  summary: `What ${source} says.`,
  keyPoints: ['a point'],
  figures: ['42 GW in 2023'],
});

let server: NatsServer;
const nodes: NodeProcess[] = [];
const runtimes: Runtime[] = [];
const mocks: MockOpenAIServer[] = [];
const dirs: string[] = [];

beforeEach(async () => {
  server = await NatsServer.start();
});

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
  await Promise.all(nodes.splice(0).map((node) => stopNode(node)));
  await Promise.all(mocks.splice(0).map((mock) => mock.close()));
  await server.dispose();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function natsRuntime(
  options: Partial<RuntimeOptions> & Pick<RuntimeOptions, 'model'>,
  nats: { reconnectForMs?: number } = {},
): Promise<{ runtime: Runtime; events: AgentEvent[]; transport: NatsTransport }> {
  const runId = createRunId();
  const full: RuntimeOptions = {
    workspace: process.cwd(),
    grants: ['read'],
    runId,
    ...options,
  };
  const transport = await createNatsTransport(runId, full, {
    url: server.url,
    deadAfterMs: 5000,
    ...nats,
  });
  const runtime = new Runtime({ ...full, transport });
  runtimes.push(runtime);
  const events: AgentEvent[] = [];
  runtime.bus.onAny((event) => events.push(event));
  return { runtime, events, transport };
}

// Until the coordinator has heard from `count` nodes (they answer its ping as it starts).
async function heard(transport: NatsTransport, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (transport.nodes.length < count) {
    if (Date.now() > deadline) throw new Error(`heard only from ${transport.nodes.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
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

const KEY_ENV = 'TROUPE_TEST_MOCK_KEY';
const STEPS = 4;

/**
 * A model server whose every sub-agent makes STEPS calls: list_files until it
 * has STEPS - 1 results, then an answer. Answers take `delayMs`, so a run is
 * long enough to break something in the middle of it.
 */
async function stepModel(delayMs: number): Promise<MockOpenAIServer> {
  const mock = await startMockOpenAIServer({
    respond: (body) => {
      const messages = (body['messages'] as { role: string }[] | undefined) ?? [];
      const results = messages.filter((message) => message.role === 'tool').length;
      return results < STEPS - 1
        ? openaiReply({
            toolCalls: [{ name: 'list_files', arguments: { path: '.' } }],
            usage: { prompt: 10, completion: 5 },
            delayMs,
          })
        : openaiReply({ content: 'done', usage: { prompt: 10, completion: 5 }, delayMs });
    },
  });
  mocks.push(mock);
  return mock;
}

function completions(mock: MockOpenAIServer): number {
  return mock.requests.filter((request) => request.path === '/v1/chat/completions').length;
}

async function fanOut(
  mock: MockOpenAIServer,
  count: number,
  nats: { reconnectForMs?: number } = {},
): Promise<{
  runtime: Runtime;
  events: AgentEvent[];
  done: Promise<Awaited<ReturnType<Runtime['spawn']>['result']>[]>;
}> {
  const { runtime, events } = await natsRuntime(
    {
      roles: [worker],
      model: { provider: 'openai', model: 'mock', baseURL: mock.baseURL, apiKeyEnv: KEY_ENV },
    },
    nats,
  );
  runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'fan out' });
  const refs = Array.from({ length: count }, (_, index) =>
    runtime.spawn('worker', `task ${index}`, { parent: 'coordinator' }),
  );
  return { runtime, events, done: Promise.all(refs.map((ref) => ref.result)) };
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

  it("continues a killed node's actors on the other node, repeating no finished model call", async () => {
    const mock = await stepModel(300);
    const env = { [KEY_ENV]: mock.apiKey };
    nodes.push(
      ...(await Promise.all([
        startNode(server.url, 'node-a', [], env),
        startNode(server.url, 'node-b', [], env),
      ])),
    );
    const [nodeA] = nodes;
    const actors = 12;

    // The fault-free run: every actor makes STEPS calls.
    const clean = await fanOut(mock, actors);
    expect(
      (await clean.done)
        .filter((result) => result.status !== 'completed')
        .map((result) => result.error?.message),
    ).toEqual([]);
    const faultFree = completions(mock);
    expect(faultFree).toBe(actors * STEPS);

    // The same run again, with node-a killed while each of its actors is halfway: two responses
    // in its journal (a call returns only once it is journaled), two calls to go.
    const faulty = await fanOut(mock, actors);
    await new Promise<void>((resolve) => {
      const halfway = (): boolean => {
        const onA = [...nodeOf(faulty.events)].filter(([, node]) => node === 'node-a');
        return (
          onA.length > 0 &&
          onA.every(
            ([id]) =>
              faulty.events.filter(
                (event) => event.agentId === id && event.type === 'model.response',
              ).length >= 2,
          )
        );
      };
      const off = faulty.runtime.bus.onAny((event) => {
        if (event.type !== 'model.response' || !halfway()) return;
        off();
        resolve();
      });
    });
    // In flight at the kill: calls waiting for the model, and at most one per other actor
    // between its model's answer and its journal's.
    const inFlight = actors;
    if (nodeA !== undefined) await stopNode(nodeA, 'SIGKILL');
    const results = await faulty.done;

    expect(results.filter((result) => result.status !== 'completed')).toEqual([]);
    // node-a's actors moved to node-b, which took their journals over.
    const notes = ofType(faulty.events, 'agent.progress').map((event) => event.note);
    expect(notes, nodes.map((node) => node.log.join('\n')).join('\n')).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^continues on node node-b; [1-9]\d* model responses replayed/),
      ]),
    );
    const calls = completions(mock) - faultFree;
    expect(calls).toBeGreaterThanOrEqual(faultFree);
    expect(calls, nodes.map((node) => node.log.join('\n')).join('\n')).toBeLessThanOrEqual(
      faultFree + inFlight,
    );
    expectWellFormed(faulty.events, ['coordinator']);
  }, 120_000);

  it('recovers, or fails clearly, when the NATS server restarts mid-run', async () => {
    const mock = await stepModel(300);
    const env = { [KEY_ENV]: mock.apiKey };
    nodes.push(
      ...(await Promise.all([
        startNode(server.url, 'node-a', [], env),
        startNode(server.url, 'node-b', [], env),
      ])),
    );
    const actors = 12;
    const run = await fanOut(mock, actors);
    await mock.until(() => completions(mock) >= actors + 2);
    await server.restart();
    const results = await run.done;

    // Every actor ends (the run never hangs): it recovers, or fails saying what happened.
    const failed = results.filter((result) => result.status !== 'completed');
    for (const result of failed) expect(result.error?.message).toMatch(/NATS|node/);
    expect(failed.length, nodes.map((node) => node.log.join('\n')).join('\n')).toBeLessThan(actors);
    expectWellFormed(run.events, ['coordinator']);
  }, 120_000);

  it('fails every unfinished actor with an error naming NATS when the server stays down', async () => {
    const mock = await stepModel(300);
    const env = { [KEY_ENV]: mock.apiKey };
    nodes.push(
      ...(await Promise.all([
        startNode(server.url, 'node-a', [], env),
        startNode(server.url, 'node-b', [], env),
      ])),
    );
    const actors = 6;
    const run = await fanOut(mock, actors, { reconnectForMs: 3000 });
    await mock.until(() => completions(mock) >= actors);
    await server.stop();
    const results = await run.done;

    // The run never hangs: what could not finish before the server went away fails, saying why.
    const failed = results.filter((result) => result.status !== 'completed');
    expect(failed.length).toBeGreaterThan(0);
    for (const result of failed) {
      expect(result.error?.message).toMatch(
        /NATS at nats:\/\/127\.0\.0\.1:\d+ has been unreachable/,
      );
      expect(result.error?.message).toContain('troupe run --resume');
    }
    expectWellFormed(run.events, ['coordinator']);
  }, 120_000);

  it('drains a node on SIGTERM: it takes no more work, hands back what is unfinished, exits 0', async () => {
    // Calls of a second: an actor's four take longer than the node's one-second drain.
    const mock = await stepModel(1000);
    const env = { [KEY_ENV]: mock.apiKey };
    nodes.push(
      ...(await Promise.all([
        startNode(server.url, 'node-a', ['--drain', '1'], env),
        startNode(server.url, 'node-b', [], env),
      ])),
    );
    const [nodeA] = nodes;
    const first = await fanOut(mock, 8);
    // SIGTERM once node-a's actors have their first response: three calls to go.
    await new Promise<void>((resolve) => {
      const started = (): boolean => {
        const onA = [...nodeOf(first.events)].filter(([, node]) => node === 'node-a');
        return (
          onA.length > 0 &&
          onA.every(([id]) =>
            first.events.some((event) => event.agentId === id && event.type === 'model.response'),
          )
        );
      };
      const off = first.runtime.bus.onAny((event) => {
        if (event.type !== 'model.response' || !started()) return;
        off();
        resolve();
      });
    });
    const onA = [...nodeOf(first.events)].filter(([, node]) => node === 'node-a').map(([id]) => id);
    nodeA?.child.kill('SIGTERM');
    // Work queued while node-a drains goes to node-b.
    const late = Array.from({ length: 4 }, (_, index) =>
      first.runtime.spawn('worker', `late task ${index}`, { parent: 'coordinator' }),
    );
    const results = await Promise.all([first.done, ...late.map((ref) => ref.result)]);

    expect(await nodeA?.exited, nodeA?.log.join('\n')).toBe(0);
    expect(nodeA?.log.join('\n')).toMatch(/draining \(\d+ actors running\)[\s\S]*stopped/);
    const all = results.flat();
    expect(all.filter((result) => result.status !== 'completed')).toEqual([]);
    const placed = nodeOf(first.events);
    for (const ref of late) expect(placed.get(ref.id)).toBe('node-b');
    // node-a's actors were handed back unfinished and continued on node-b from their journals.
    const notes = ofType(first.events, 'agent.progress');
    for (const id of onA) {
      expect(
        notes.some(
          (event) =>
            event.agentId === id && /^continues on node node-b; [1-9]\d* model/.test(event.note),
        ),
        id,
      ).toBe(true);
    }
    expectWellFormed(first.events, ['coordinator']);
  }, 120_000);

  it("hands back the spawns of a message that do not fit, and a draining node's share of one, which continue from their journals", async () => {
    const mock = await stepModel(1000);
    const env = { [KEY_ENV]: mock.apiKey };
    nodes.push(
      ...(await Promise.all([
        startNode(server.url, 'node-a', ['--drain', '1', '--max-actors', '3'], env),
        startNode(server.url, 'node-b', [], env),
      ])),
    );
    const [nodeA] = nodes;
    const { runtime, events, transport } = await natsRuntime({
      roles: [worker, quick],
      model: { provider: 'openai', model: 'mock', baseURL: mock.baseURL, apiKeyEnv: KEY_ENV },
    });
    runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'fan out' });
    // The transport starts with the run's first spawn; then both nodes are known, and the burst
    // goes as two messages of four, one to each node's pull.
    expect((await runtime.spawn('quick', 'warm up', { parent: 'coordinator' }).result).status).toBe(
      'completed',
    );
    await heard(transport, 2);
    const refs = Array.from({ length: 8 }, (_, index) =>
      runtime.spawn('worker', `task ${index}`, { parent: 'coordinator' }),
    );
    // node-a has room for three of its four: the fourth goes back, and node-b takes it.
    await new Promise<void>((resolve) => {
      const started = (): boolean => {
        const onA = [...nodeOf(events)].filter(
          ([id, node]) => node === 'node-a' && id.startsWith('worker'),
        );
        return (
          onA.length > 0 &&
          onA.every(([id]) =>
            events.some((event) => event.agentId === id && event.type === 'model.response'),
          )
        );
      };
      const off = runtime.bus.onAny((event) => {
        if (event.type !== 'model.response' || !started()) return;
        off();
        resolve();
      });
    });
    const onA = [...nodeOf(events)]
      .filter(([id, node]) => node === 'node-a' && id.startsWith('worker'))
      .map(([id]) => id);
    expect(onA).toHaveLength(3);
    // Drained with three calls to go: node-a hands back its share of the message, not all of it.
    nodeA?.child.kill('SIGTERM');
    const results = await Promise.all(refs.map((ref) => ref.result));

    expect(await nodeA?.exited, nodeA?.log.join('\n')).toBe(0);
    expect(results.filter((result) => result.status !== 'completed')).toEqual([]);
    const notes = ofType(events, 'agent.progress');
    for (const id of onA) {
      expect(
        notes.some(
          (event) =>
            event.agentId === id && /^continues on node node-b; [1-9]\d* model/.test(event.note),
        ),
        `${id}: ${notes.filter((event) => event.agentId === id).map((event) => event.note)}`,
      ).toBe(true);
    }
    // Every actor paid once for each call, but for calls the drain cut (one per node-a actor).
    const calls = completions(mock);
    expect(calls).toBeGreaterThanOrEqual(8 * STEPS);
    expect(calls).toBeLessThanOrEqual(8 * STEPS + onA.length);
    // Eight spawns in two messages, and two hand-backs: not a write to the queue per spawn.
    const { connect } = await import('@nats-io/transport-node');
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const nc = await connect({ servers: server.url });
    try {
      const info = await (await jetstreamManager(nc)).streams.info(STREAMS.work);
      // The warm-up's spawn, the burst's two messages and the two hand-backs.
      expect(info.state.last_seq).toBe(5);
    } finally {
      await nc.close();
    }
    expectWellFormed(events, ['coordinator']);
  }, 120_000);

  it('streams typed channel messages from researchers on one node to the analyst on another', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-nats-pipeline-'));
    dirs.push(workspace);
    const gate = (agent: string, call: number, path: string) => ({
      match: { agent, call },
      toolCalls: [{ name: 'wait_for_file', arguments: { path } }],
    });
    // node-a hosts two actors at most: the two researchers fill it, so the analyst goes to node-b.
    nodes.push(await startNode(server.url, 'node-a', ['--max-actors', '2']));
    const { runtime, events } = await natsRuntime({
      roles: [scout],
      workspace,
      grants: ['read', 'write'],
      toolModules: [FAULT_TOOLS],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            // Both researchers wait until the analyst runs; scout-1 publishes, then stays until
            // the analyst has read its finding (the "read" gate), when scout-2 publishes.
            gate('scout-1', 1, 'start'),
            {
              match: { agent: 'scout-1', call: 2 },
              toolCalls: [{ name: 'publish_findings', arguments: finding('solar.md') }],
            },
            gate('scout-1', 3, 'read'),
            { match: { agent: 'scout-1' }, content: 'scout-1 done' },
            gate('scout-2', 1, 'start'),
            gate('scout-2', 2, 'read'),
            {
              match: { agent: 'scout-2', call: 3 },
              toolCalls: [{ name: 'publish_findings', arguments: finding('wind.md') }],
            },
            { match: { agent: 'scout-2' }, content: 'scout-2 done' },
            {
              match: { role: 'analyst', lastUserContains: 'closed' },
              content: 'analysis of solar.md and wind.md',
            },
            { match: { role: 'analyst' }, content: 'interim note', repeat: true },
            {
              match: { role: 'reporter', conversationContains: 'analysis of solar.md and wind.md' },
              content: 'report written',
            },
          ],
        },
      },
    });
    runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'pipeline' });
    runtime.bus.on('message.received', (event) => {
      if (event.role === 'analyst') writeFileSync(join(workspace, 'read'), 'open');
    });
    // Waits until every one of `ids` runs on `node` (judged after the event is recorded).
    const placedOn = (ids: readonly string[], node: string): Promise<void> =>
      new Promise<void>((resolve) => {
        const check = (): boolean => ids.every((id) => nodeOf(events).get(id) === node);
        if (check()) return resolve();
        const off = runtime.bus.on('agent.progress', () =>
          queueMicrotask(() => {
            if (!check()) return;
            off();
            resolve();
          }),
        );
      });

    // The researcher → analyst → reporter pipeline, its researchers placed first.
    const options = { parent: 'coordinator' };
    const researchers = ['solar.md', 'wind.md'].map((topic) =>
      runtime.spawn('scout', `Research ${topic} and publish findings.`, options),
    );
    await placedOn(['scout-1', 'scout-2'], 'node-a');
    nodes.push(await startNode(server.url, 'node-b'));
    const analyst = runtime.spawn('analyst', 'Analyse the findings as they arrive.', options);
    await placedOn(['analyst-1'], 'node-b');
    writeFileSync(join(workspace, 'start'), 'open');
    const research = await Promise.all(researchers.map((ref) => ref.result));
    const analysis = await analyst.result;
    const report = await runtime.spawn(
      'reporter',
      `Write the final report.\n\nAnalysis:\n${analysis.final}`,
      options,
    ).result;

    expect(research.map((entry) => entry.final)).toEqual(['scout-1 done', 'scout-2 done']);
    expect(analysis.final).toBe('analysis of solar.md and wind.md');
    expect(report.final).toBe('report written');
    // Both findings crossed from node-a to node-b, validated, in the order they were sent;
    // the analyst read the first while the second researcher still worked.
    const received = ofType(events, 'message.received').filter(
      (event) => event.agentId === 'analyst-1',
    );
    const sent = new Map(
      ofType(events, 'message.sent').map((event) => [event.messageId, event] as const),
    );
    expect(
      received.map((event) => [
        sent.get(event.messageId)?.agentId,
        sent.get(event.messageId)?.payload,
      ]),
    ).toEqual([
      ['scout-1', finding('solar.md')],
      ['scout-2', finding('wind.md')],
    ]);
    const scout2Finished = ofType(events, 'agent.finished').find(
      (event) => event.agentId === 'scout-2',
    );
    expect(received[0]?.seq).toBeLessThan(scout2Finished?.seq ?? -1);
    expectWellFormed(events, ['coordinator']);
  }, 120_000);

  it("replays the order a killed node's analyst took its findings in, on the node that takes it over", async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-nats-pipeline-kill-'));
    dirs.push(workspace);
    const gate = (agent: string, path: string) => ({
      match: { agent, call: 1 },
      toolCalls: [{ name: 'wait_for_file', arguments: { path } }],
    });
    // The analyst's node is killed; the other takes it over.
    nodes.push(
      ...(await Promise.all([startNode(server.url, 'node-a'), startNode(server.url, 'node-b')])),
    );
    const journal = new FileJournal(join(workspace, 'journal.jsonl'), {
      runId: 'run-nats-order',
      task: 'Compare.',
    });
    const { runtime, events } = await natsRuntime({
      roles: [scout],
      workspace,
      grants: ['read', 'write'],
      toolModules: [FAULT_TOOLS],
      journal,
      model: {
        provider: 'scripted',
        script: {
          steps: [
            // scout-1 publishes once the analyst's first call is over, scout-2 once the analyst
            // has taken scout-1's finding: the analyst takes one finding before call 1, the other
            // before call 2, which is still under way (slow) when its node is killed.
            gate('scout-1', 'start'),
            {
              match: { agent: 'scout-1', call: 2 },
              toolCalls: [{ name: 'publish_findings', arguments: finding('solar.md') }],
            },
            { match: { agent: 'scout-1' }, content: 'scout-1 done' },
            gate('scout-2', 'second'),
            {
              match: { agent: 'scout-2', call: 2 },
              toolCalls: [{ name: 'publish_findings', arguments: finding('wind.md') }],
            },
            { match: { agent: 'scout-2' }, content: 'scout-2 done' },
            {
              match: { role: 'analyst', lastUserContains: 'closed' },
              content: 'analysis of solar.md and wind.md',
              latencyMs: 3000,
            },
            { match: { role: 'analyst' }, content: 'interim note', repeat: true, latencyMs: 1500 },
          ],
        },
      },
    });
    runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'pipeline' });
    const analystEvents = (): AgentEvent[] =>
      events.filter((event) => event.agentId === 'analyst-1');
    runtime.bus.on('model.response', (event) => {
      if (event.agentId === 'analyst-1') writeFileSync(join(workspace, 'start'), 'open');
    });
    runtime.bus.on('message.received', (event) => {
      if (event.agentId === 'analyst-1') writeFileSync(join(workspace, 'second'), 'open');
    });
    // The analyst's third model call started (both findings taken): its node dies with it in flight.
    const third = new Promise<void>((resolve) => {
      let calls = 0;
      const off = runtime.bus.on('model.request', (event) => {
        if (event.agentId !== 'analyst-1') return;
        calls += 1;
        if (calls < 3) return;
        off();
        resolve();
      });
    });
    const options = { parent: 'coordinator' };
    const researchers = ['solar.md', 'wind.md'].map((topic) =>
      runtime.spawn('scout', `Research ${topic} and publish findings.`, options),
    );
    const analyst = runtime.spawn('analyst', 'Analyse the findings as they arrive.', options);
    await third;
    const placed = nodeOf(events);
    const killed = nodes.find((node) => node.name === placed.get('analyst-1'));
    const survivor = nodes.find((node) => node !== killed);
    if (killed !== undefined) await stopNode(killed, 'SIGKILL');
    const results = await Promise.all([...researchers, analyst].map((ref) => ref.result));
    const logs = nodes.map((node) => node.log.join('\n')).join('\n');
    expect(
      results.map((result) => result.status),
      logs,
    ).toEqual(['completed', 'completed', 'completed']);

    // Which finding the analyst took before which of its model calls (0, 1, 2 … counted over its
    // runs: a subscriber's `step` starts again with each message), before the kill and after it.
    const sent = new Map(
      ofType(events, 'message.sent').map((event) => [event.messageId, event] as const),
    );
    const taken = (list: readonly AgentEvent[]): [string, number][] => {
      const pairs: [string, number][] = [];
      let calls = 0;
      for (const event of list) {
        if (event.type === 'model.request') calls += 1;
        if (event.type !== 'message.received') continue;
        const payload = sent.get(event.messageId)?.payload as { source?: string } | undefined;
        pairs.push([payload?.source ?? '?', calls]);
      }
      return pairs;
    };
    const all = analystEvents();
    const takeover = all.findIndex(
      (event) =>
        event.type === 'agent.progress' &&
        event.note.startsWith(`continues on node ${survivor?.name}; 2 model responses replayed`),
    );
    expect(takeover, logs).toBeGreaterThan(0);
    expect(taken(all.slice(0, takeover))).toEqual([
      ['solar.md', 1],
      ['wind.md', 2],
    ]);
    // The survivor replayed calls 0 and 1 from the killed node's journal, giving them the same
    // findings in the same order; call 2 went live with the finding it had then.
    expect(taken(all.slice(takeover))).toEqual([
      ['solar.md', 1],
      ['wind.md', 2],
    ]);
    // So each call saw the history it saw the first time (the third one's request is live).
    const sizes = (list: readonly AgentEvent[]): number[] =>
      ofType(list, 'model.request').map((event) => event.messages);
    expect(sizes(all.slice(takeover))).toEqual(sizes(all.slice(0, takeover)));
    expect(analystEvents().at(-1)).toMatchObject({ type: 'agent.finished', status: 'completed' });
    expectWellFormed(events, ['coordinator']);
  }, 120_000);
});
