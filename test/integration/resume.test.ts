import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelSpec } from '../../src/model/model.js';
import { findingsChannel } from '../../src/roles/builtin.js';
import { defineRole } from '../../src/roles/role.js';
import { closeRuntimes, makeRuntime, ofType } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const worker = defineRole({ name: 'worker', description: 'w', system: 'w', retry: 'fail_fast' });
const model = {
  provider: 'scripted' as const,
  script: {
    steps: [
      {
        match: { lastUserContains: 'fail' },
        error: { code: 'tool.failed' as const, message: 'no' },
        repeat: true,
      },
      { content: 'done', repeat: true },
    ],
  },
};

describe('Runtime results and resume', () => {
  it('reuses completed results without spawning them again, and re-runs the rest', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-resume-'));
    dirs.push(dir);
    const first = makeRuntime({ roles: [worker], model, results: { dir, reuse: false } });
    first.runtime.registerRoot('coordinator', { model, task: 'job' });
    const firstResults = await Promise.all(
      ['a', 'b', 'fail c'].map(
        (task) => first.runtime.spawn('worker', task, { parent: 'coordinator' }).result,
      ),
    );
    expect(firstResults.map((result) => result.status)).toEqual([
      'completed',
      'completed',
      'failed',
    ]);
    expect(readdirSync(dir)).toHaveLength(2);
    await first.runtime.close();

    const second = makeRuntime({ roles: [worker], model, results: { dir, reuse: true } });
    second.runtime.registerRoot('coordinator', { model, task: 'job' });
    const secondResults = await Promise.all(
      ['a', 'b', 'fail c'].map(
        (task) => second.runtime.spawn('worker', task, { parent: 'coordinator' }).result,
      ),
    );
    expect(secondResults.map((result) => result.reused ?? false)).toEqual([true, true, false]);
    expect(secondResults[0]).toMatchObject({ status: 'completed', final: 'done' });
    expect(ofType(second.events, 'agent.spawned').map((event) => event.task)).toEqual(['fail c']);
  });

  it("publishes a reused researcher's findings again to a fresh analyst, before its close notice", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-resume-'));
    dirs.push(dir);
    const finding = (source: string) => ({
      source,
      title: `About ${source}`,
      summary: `What ${source} says.`,
      keyPoints: ['a point'],
      figures: ['42 GW in 2023'],
    });
    const scouts = (analystOnClose: Record<string, unknown>): ModelSpec => ({
      provider: 'scripted',
      script: {
        steps: [
          {
            match: { agent: 'scout-1', call: 1 },
            toolCalls: [{ name: 'publish_findings', arguments: finding('solar.md') }],
          },
          {
            match: { agent: 'scout-1', call: 2 },
            toolCalls: [{ name: 'publish_findings', arguments: finding('hydro.md') }],
          },
          { match: { agent: 'scout-1' }, content: 'scout-1 done' },
          {
            match: { agent: 'scout-2', call: 1 },
            toolCalls: [{ name: 'publish_findings', arguments: finding('wind.md') }],
          },
          { match: { agent: 'scout-2' }, content: 'scout-2 done' },
          { match: { role: 'analyst', lastUserContains: 'closed' }, ...analystOnClose },
          { match: { role: 'analyst' }, content: 'interim note', repeat: true },
        ],
      },
    });
    const scout = defineRole({
      name: 'scout',
      description: 's',
      system: 's',
      tools: [],
      publishes: [findingsChannel],
    });
    const job = async (model: ModelSpec, reuse: boolean) => {
      const run = makeRuntime({ roles: [scout], model, results: { dir, reuse } });
      run.runtime.registerRoot('coordinator', { model, task: 'job' });
      const results = await Promise.all(
        run.runtime
          .spawnBatch('coordinator', [
            { role: 'scout', task: 'solar and hydro' },
            { role: 'analyst', task: 'analyse the findings' },
            { role: 'scout', task: 'wind' },
          ])
          .map((ref) => ref.result),
      );
      await run.runtime.close();
      return { ...run, results };
    };

    // The first run is interrupted before the analyst finishes: it fails on the close notice.
    const first = await job(
      scouts({ error: { code: 'model.bad_request', message: 'interrupted' } }),
      false,
    );
    expect(first.results.map((result) => result.status)).toEqual([
      'completed',
      'failed',
      'completed',
    ]);

    const second = await job(scouts({ content: 'analysis of solar, hydro and wind' }), true);
    expect(second.results.map((result) => [result.status, result.reused ?? false])).toEqual([
      ['completed', true],
      ['completed', false],
      ['completed', true],
    ]);
    expect(second.results[1]?.final).toBe('analysis of solar, hydro and wind');
    expect(ofType(second.events, 'agent.spawned').map((event) => event.agentId)).toEqual([
      'analyst-1',
    ]);
    // Every finding went out again, from the reused researcher's id, as live traffic does.
    const sent = ofType(second.events, 'message.sent');
    expect(
      sent.map((event) => [event.agentId, (event.payload as { source: string }).source]),
    ).toEqual(
      expect.arrayContaining([
        ['scout-1', 'solar.md'],
        ['scout-1', 'hydro.md'],
        ['scout-2', 'wind.md'],
      ]),
    );
    expect(sent).toHaveLength(3);
    expect(sent.every((event) => event.role === 'scout' && event.parentId === 'coordinator')).toBe(
      true,
    );
    const solar = sent.findIndex(
      (event) => (event.payload as { source: string }).source === 'solar.md',
    );
    const hydro = sent.findIndex(
      (event) => (event.payload as { source: string }).source === 'hydro.md',
    );
    expect(solar).toBeLessThan(hydro);
    // The analyst read all three before the close notice made it answer.
    const received = ofType(second.events, 'message.received').filter(
      (event) => event.agentId === 'analyst-1',
    );
    expect(received.map((event) => event.messageId).sort()).toEqual(
      sent.map((event) => event.messageId).sort(),
    );
    const lastRequest = ofType(second.events, 'model.request')
      .filter((event) => event.agentId === 'analyst-1')
      .at(-1);
    const finalResponse = ofType(second.events, 'model.response')
      .filter((event) => event.agentId === 'analyst-1')
      .at(-1);
    expect(finalResponse?.content).toBe('analysis of solar, hydro and wind');
    for (const event of received) expect(event.seq).toBeLessThan(lastRequest?.seq ?? -1);
  });

  it('finishes when reused publishers have no subscriber left to replay to', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-resume-'));
    dirs.push(dir);
    const scout = defineRole({
      name: 'scout',
      description: 's',
      system: 's',
      tools: [],
      publishes: [findingsChannel],
    });
    const publishing: ModelSpec = {
      provider: 'scripted',
      script: {
        steps: [
          {
            match: { call: 1 },
            toolCalls: [
              {
                name: 'publish_findings',
                arguments: { source: 'a.md', title: 'A', summary: 's', keyPoints: [], figures: [] },
              },
            ],
          },
          { content: 'done', repeat: true },
        ],
      },
    };
    for (const reuse of [false, true]) {
      const run = makeRuntime({ roles: [scout], model: publishing, results: { dir, reuse } });
      run.runtime.registerRoot('coordinator', { model: publishing, task: 'job' });
      const result = await run.runtime.spawn('scout', 'a', { parent: 'coordinator' }).result;
      expect(result).toMatchObject({ status: 'completed', final: 'done' });
      expect(result.reused ?? false).toBe(reuse);
      expect(ofType(run.events, 'message.sent')).toHaveLength(1);
      await run.runtime.close();
    }
  });
});
