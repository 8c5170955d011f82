import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineRole } from '../../src/roles/role.js';
import { createNatsTransport } from '../../src/runtime/nats-setup.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.js';
import { createRunId } from '../../src/util/ids.js';
import {
  type MockOpenAIServer,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { NatsServer, natsServerBinary } from '../helpers/nats-server.js';
import { type NodeProcess, startNode, stopNode } from './nats-helpers.js';

const worker = defineRole({ name: 'worker', description: 'w', system: 'w' });
const KEY_ENV = 'TROUPE_TEST_MOCK_KEY';

let server: NatsServer;
let mock: MockOpenAIServer;
const nodes: NodeProcess[] = [];
const runtimes: Runtime[] = [];
const dirs: string[] = [];

beforeEach(async () => {
  server = await NatsServer.start();
  // Every sub-agent: one list_files call, then its answer naming its task.
  mock = await startMockOpenAIServer({
    respond: (body) => {
      const messages = (body['messages'] as { role: string; content?: unknown }[]) ?? [];
      if (!messages.some((message) => message.role === 'tool')) {
        return openaiReply({
          toolCalls: [{ name: 'list_files', arguments: { path: '.' } }],
          usage: { prompt: 10, completion: 5 },
        });
      }
      const task = messages.find((message) => message.role === 'user')?.content;
      return openaiReply({
        content: `done: ${String(task)}`,
        usage: { prompt: 10, completion: 5 },
      });
    },
  });
});

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
  await Promise.all(nodes.splice(0).map((node) => stopNode(node)));
  await mock.close();
  await server.dispose();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

// A coordinator session of run `runId` whose results folder is `resultsDir` (one per "machine").
async function session(
  runId: string,
  resultsDir: string,
  resume: boolean,
): Promise<{ runtime: Runtime }> {
  const options: RuntimeOptions = {
    workspace: process.cwd(),
    grants: ['read'],
    runId,
    roles: [worker],
    model: { provider: 'openai', model: 'mock', baseURL: mock.baseURL, apiKeyEnv: KEY_ENV },
    results: { dir: resultsDir, reuse: resume },
  };
  const transport = await createNatsTransport(runId, options, {
    url: server.url,
    deadAfterMs: 5000,
    resume,
  });
  const runtime = new Runtime({ ...options, transport });
  runtimes.push(runtime);
  runtime.registerRoot('coordinator', { model: { provider: 'offline' }, task: 'fan out' });
  return { runtime };
}

function completions(): number {
  return mock.requests.filter((request) => request.path === '/v1/chat/completions').length;
}

describe.skipIf(natsServerBinary() === undefined)('NATS result store', () => {
  it("resumes on another machine with the finished sub-agents' results from JetStream, running none of them again", async () => {
    nodes.push(await startNode(server.url, 'node-a', [], { [KEY_ENV]: mock.apiKey }));
    const runId = createRunId();
    const tasks = ['task alpha', 'task beta', 'task gamma'];

    // The first coordinator finishes two sub-agents, then its session ends.
    const first = await session(runId, tempDir('troupe-results-a-'), false);
    const firstResults = await Promise.all(
      tasks
        .slice(0, 2)
        .map((task) => first.runtime.spawn('worker', task, { parent: 'coordinator' }).result),
    );
    expect(firstResults.map((result) => result.status)).toEqual(['completed', 'completed']);
    await first.runtime.close();
    const callsBefore = completions();
    expect(callsBefore).toBe(4);

    // Resumed with an empty results folder (another machine): the same spawns, and one more.
    const elsewhere = tempDir('troupe-results-b-');
    const second = await session(runId, elsewhere, true);
    const spawned: string[] = [];
    second.runtime.bus.on('agent.spawned', (event) => spawned.push(event.agentId));
    const secondResults = await Promise.all(
      tasks.map((task) => second.runtime.spawn('worker', task, { parent: 'coordinator' }).result),
    );

    expect(secondResults.map((result) => result.final)).toEqual(
      tasks.map((task) => `done: ${task}`),
    );
    expect(secondResults.map((result) => result.reused === true)).toEqual([true, true, false]);
    // Only the new sub-agent ran: one actor, its two model calls.
    expect(spawned).toHaveLength(1);
    expect(completions() - callsBefore).toBe(2);
    // The results came over from JetStream into this machine's run folder, and the new one joined them.
    expect(readdirSync(elsewhere).filter((name) => name.endsWith('.json'))).toHaveLength(3);
  }, 120_000);
});
