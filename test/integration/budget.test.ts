import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { totalTokens } from '../../src/model/types.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from './helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const spender = defineRole({
  name: 'spender',
  description: 's',
  system: 's',
  tools: [userTool('wait_for_file')],
});

describe('Runtime tree budget', () => {
  it('stops a fan-out that would overspend, and subtree totals add up to the run total', async () => {
    // Each agent would spend 3 calls x 100 tokens (6,000 for 20), but waits at
    // a gate after its first call that nobody opens: only the tree budget
    // (1,000 tokens) can stop them; it does before any call spends past it.
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-budget-'));
    dirs.push(workspace);
    const { runtime, events } = makeRuntime({
      roles: [spender],
      workspace,
      budget: { tokens: 1000, softRatio: 0.5 },
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { call: 1 },
              toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate' } }],
              usage: { inputTokens: 100, outputTokens: 0 },
            },
            {
              match: { call: 2 },
              toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate' } }],
              usage: { inputTokens: 100, outputTokens: 0 },
            },
            { content: 'done', usage: { inputTokens: 100, outputTokens: 0 } },
          ],
        },
      },
    });
    runtime.registerRoot('coordinator', { model: runtime.defaultModel, task: 'spend' });
    const refs = Array.from({ length: 20 }, (_, index) =>
      runtime.spawn('spender', `spend ${index}`, { parent: 'coordinator' }),
    );
    const results = await Promise.all(refs.map((ref) => ref.result));

    expect(
      results.every(
        (result) => result.status === 'cancelled' && result.error?.code === 'budget.exceeded',
      ),
    ).toBe(true);
    expect(runtime.budgetExceeded).toMatchObject({ metric: 'tokens', limit: 1000 });
    expect(ofType(events, 'budget.warning').filter((event) => event.scope === 'tree')).toHaveLength(
      1,
    );
    expect(
      ofType(events, 'budget.exceeded').filter((event) => event.scope === 'tree'),
    ).toHaveLength(1);
    const late = await runtime.spawn('spender', 'too late', { parent: 'coordinator' }).result;
    expect(late).toMatchObject({ status: 'cancelled', error: { code: 'budget.exceeded' } });
    // Each call reserved its prompt and max_tokens first: the run never spent past the limit.
    expect(runtime.usage().tokens).toBeLessThanOrEqual(1000);

    const total = runtime.usage();
    const children = refs
      .map((ref) => runtime.subtreeUsage(ref.id).tokens)
      .reduce((a, b) => a + b, 0);
    expect(children + runtime.usage('coordinator').tokens).toBe(total.tokens);
    expect(runtime.subtreeUsage('coordinator').tokens).toBe(total.tokens);
    const fromEvents = ofType(events, 'model.response').reduce(
      (sum, event) => sum + totalTokens(event.usage),
      0,
    );
    expect(total.tokens).toBe(fromEvents);
    expectWellFormed(events, ['coordinator']);
  });

  it('attributes cost from the price table per model', async () => {
    const { runtime } = makeRuntime({
      roles: [spender],
      prices: { scripted: { inputPerMTok: 1_000_000, outputPerMTok: 0 } },
      model: {
        provider: 'scripted',
        script: { steps: [{ content: 'done', usage: { inputTokens: 3, outputTokens: 1 } }] },
      },
    });
    const ref = runtime.spawn('spender', 'once');
    await ref.result;
    expect(runtime.usage(ref.id)).toMatchObject({ tokens: 4, costUsd: 3 });
  });
});
