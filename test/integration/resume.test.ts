import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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
});
