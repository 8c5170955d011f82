import { afterEach, describe, expect, it } from 'vitest';
import { waitForEvent } from '../../src/events/bus.js';
import { defineRole } from '../../src/roles/role.js';
import { closeRuntimes, expectWellFormed, makeRuntime } from './helpers.js';

afterEach(closeRuntimes);

describe('report_progress', () => {
  it('reaches the bus as agent.progress from a worker actor that goes on working', async () => {
    const worker = defineRole({
      name: 'worker',
      description: 'Works in two halves.',
      system: 'Report progress between the halves.',
      tools: ['report_progress'],
      maxSteps: 4,
    });
    const { runtime, events } = makeRuntime({
      roles: [worker],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              toolCalls: [
                { name: 'report_progress', arguments: { note: 'half way: 2 of 4 files' } },
              ],
            },
            { content: 'all done' },
          ],
        },
      },
    });
    const progress = waitForEvent(runtime.bus, 'agent.progress');

    const ref = runtime.spawn('worker', 'Do the work.');
    const result = await ref.result;

    expect(await progress).toMatchObject({
      agentId: ref.id,
      role: 'worker',
      note: 'half way: 2 of 4 files',
    });
    expect(result).toMatchObject({ status: 'completed', final: 'all done' });
    expectWellFormed(events);
  });
});
