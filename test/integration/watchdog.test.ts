import { afterEach, describe, expect, it } from 'vitest';
import { faultMixRoles, faultMixScript } from '../../bench/fault-mix.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from './helpers.js';

afterEach(async () => {
  await closeRuntimes();
});

describe('the actor-thread watchdog', () => {
  it('stops a thread that a tool blocks, names the actor and tool, and restarts the others uncharged', async () => {
    // Tools in the actor thread ('thread'): a spinning tool freezes every actor of the only thread.
    const { runtime, events } = makeRuntime({
      threads: 1,
      roles: faultMixRoles(),
      model: faultMixScript(200),
      toolIsolation: 'thread',
      blockedThreadMs: 2000,
    });
    const healthy = Array.from({ length: 5 }, (_, index) =>
      runtime.spawn('healthy', `task ${index}`),
    );
    const spinner = runtime.spawn('spin', 'spin');
    const results = await Promise.all(healthy.map((ref) => ref.result));
    const spun = await spinner.result;

    expect(spun.status).toBe('failed');
    expect(spun.error?.message).toMatch(
      new RegExp(
        `^stopped because ${spun.agentId}'s tool \`spin_forever\` blocked its thread for \\d+\\.\\d s`,
      ),
    );
    // Not retried: it would block the next thread too.
    const spinnerNotes = ofType(events, 'agent.progress').filter(
      (event) => event.agentId === spun.agentId,
    );
    expect(spinnerNotes).toEqual([]);
    for (const result of results)
      expect(result).toMatchObject({ status: 'completed', final: 'healthy done' });
    // Each neighbour that was on the frozen thread was told why, and restarted at once.
    const lost = ofType(events, 'agent.progress').filter((event) =>
      event.note.includes(
        `lost its thread (the worker thread was terminated: ${spun.agentId}'s tool \`spin_forever\` blocked it for`,
      ),
    );
    expect(lost.length).toBeGreaterThan(0);
    for (const note of lost) expect(note.note).toContain('not counted against its restart limit');
    const finished = ofType(events, 'agent.finished').find(
      (event) => event.agentId === spun.agentId,
    );
    expect(finished?.error?.message).toBe(spun.error?.message);
    expectWellFormed(events);
  });
});
