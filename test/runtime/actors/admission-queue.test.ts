import { describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../../src/events/schema.js';
import { defineRole } from '../../../src/roles/role.js';
import { Runtime } from '../../../src/runtime/runtime.js';

// Past maxActorsPerThread on every thread an actor waits for a place; each
// actor that ends gives its place to the next one waiting. (Since the runtime
// was split into its parts the place was freed but never given: the waiting
// actors stayed queued for ever.)
describe('the admission queue', () => {
  it('starts the actors waiting past maxActorsPerThread as places free up, never more at once', async () => {
    const runtime = new Runtime({
      model: {
        provider: 'scripted',
        script: { defaultLatencyMs: 5, steps: [{ content: 'thinking' }, { content: 'done' }] },
      },
      workspace: process.cwd(),
      grants: ['read'],
      threads: 1,
      maxActorsPerThread: 2,
    });
    const running = new Set<string>();
    let most = 0;
    const order: string[] = [];
    runtime.bus.onAny((event: AgentEvent) => {
      if (event.type === 'model.request' && !running.has(event.agentId)) {
        running.add(event.agentId);
        order.push(event.agentId);
        most = Math.max(most, running.size);
      } else if (event.type === 'agent.finished') running.delete(event.agentId);
    });
    try {
      const role = defineRole({ name: 'w', description: 'w', system: 'w', tools: [] });
      const refs = Array.from({ length: 7 }, (_, index) => runtime.spawn(role, `task ${index}`));
      const results = await Promise.all(refs.map((ref) => ref.result));
      expect(results.map((result) => result.status)).toEqual(Array(7).fill('completed'));
      expect(most).toBe(2);
      // First come, first placed.
      expect(order).toEqual(refs.map((ref) => ref.id));
    } finally {
      await runtime.close();
    }
  });
});
