import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitForEvent } from '../../src/events/bus.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const lead = defineRole({
  name: 'lead',
  description: 'l',
  system: 'l',
  canDelegate: true,
  retry: 'fail_fast',
});
// Held at a gate the test opens once the lead has steered it.
const helper = defineRole({
  name: 'helper',
  description: 'h',
  system: 'h',
  tools: [userTool('wait_for_file')],
  retry: 'fail_fast',
});

describe('Worker actors that delegate', () => {
  it('start, steer and wait for sub-agents with spawn_agent, send_message and wait_agents', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-children-'));
    dirs.push(workspace);
    const { runtime, events } = makeRuntime({
      roles: [lead, helper],
      workspace,
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'lead', call: 1 },
              toolCalls: [
                { name: 'spawn_agent', arguments: { role: 'helper', task: 'wait, then answer' } },
              ],
            },
            {
              match: { role: 'lead', call: 2 },
              toolCalls: [
                {
                  name: 'send_message',
                  arguments: { agentId: 'helper-1', message: 'STEER: say steered' },
                },
                { name: 'wait_agents', arguments: { ids: ['helper-1', 'helper-9'] } },
                { name: 'spawn_agent', arguments: { role: 'poet', task: 'x' } },
              ],
            },
            {
              match: { role: 'lead', call: 3 },
              toolCalls: [{ name: 'wait_agents', arguments: { ids: ['helper-1'] } }],
            },
            {
              match: { role: 'lead', lastToolResultContains: 'steered' },
              content: 'lead saw steered',
            },
            { match: { role: 'lead' }, content: 'lead missed it' },
            {
              match: { role: 'helper', call: 1 },
              toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate' } }],
            },
            { match: { role: 'helper', conversationContains: 'STEER' }, content: 'steered' },
            { match: { role: 'helper' }, content: 'not steered' },
          ],
        },
      },
    });
    // The helper's gate opens once the lead's message is on its way to it.
    runtime.bus.on('message.sent', (event) => {
      if (event.to === 'helper-1') writeFileSync(join(workspace, 'gate'), 'open');
    });

    const result = await runtime.spawn('lead', 'run a helper').result;

    expect(result).toMatchObject({ status: 'completed', final: 'lead saw steered' });
    const toolResults = ofType(events, 'tool.result').filter((event) => event.role === 'lead');
    // Tools of one step run concurrently: their results come in the order they finish.
    const outcome = (name: string, ok: boolean) =>
      toolResults.filter((event) => event.name === name && event.ok === ok);
    expect(toolResults).toHaveLength(5);
    expect(outcome('spawn_agent', true).map((event) => event.content)).toEqual([
      'Started helper-1.',
    ]);
    expect(outcome('send_message', true).map((event) => event.content)).toEqual([
      'Delivered to helper-1.',
    ]);
    expect(outcome('wait_agents', false).map((event) => event.error?.message)).toEqual([
      'Unknown agent id: helper-9. Started so far: helper-1.',
    ]);
    expect(outcome('spawn_agent', false)[0]?.error?.message).toContain('Unknown role "poet"');
    expect(toolResults.at(-1)).toMatchObject({ name: 'wait_agents', ok: true });
    expect(toolResults.at(-1)?.content).toContain('[helper-1] steered');
    const spawned = ofType(events, 'agent.spawned').find((event) => event.agentId === 'helper-1');
    expect(spawned).toMatchObject({ parentId: result.agentId, depth: 2 });
    expectWellFormed(events);
  });

  it('cancels the sub-agents it started with spawn_agent when it finishes without waiting', async () => {
    const { runtime } = makeRuntime({
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { role: 'lead', call: 1 },
              toolCalls: [{ name: 'spawn_agent', arguments: { role: 'waiter', task: 'wait' } }],
            },
            { match: { role: 'lead' }, content: 'lead done' },
            { match: { role: 'waiter' }, toolCalls: [{ name: 'wait_for_cancel' }] },
          ],
        },
      },
      roles: [
        lead,
        defineRole({
          name: 'waiter',
          description: 'w',
          system: 'w',
          tools: [userTool('wait_for_cancel')],
        }),
      ],
    });
    const waiterFinished = waitForEvent(
      runtime.bus,
      'agent.finished',
      (event) => event.role === 'waiter',
    );
    const result = await runtime.spawn('lead', 'start and leave').result;
    expect(result.status).toBe('completed');
    const waiter = await waiterFinished;
    expect(waiter.status).toBe('cancelled');
    expect(waiter.error?.message).toContain(`its parent ${result.agentId} finished`);
  });
});
