import { afterEach, describe, expect, it } from 'vitest';
import { Agent } from '../../../src/agent/agent.js';
import type { AgentEvent } from '../../../src/events/schema.js';
import { ScriptedModel } from '../../../src/model/providers/scripted.js';
import { Runtime } from '../../../src/runtime/runtime.js';
import { ToolRegistry } from '../../../src/tools/registry.js';
import { answer, call, echoTool, summaryStep } from '../../helpers/scripts.js';

// The history summarizer is a model call: what it costs reaches the run's
// usage ledger (and so the tree budget), not only the agent's own count.

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

describe('history summarizer usage', () => {
  it("counts the summary call's tokens in the run's ledger and tree budget", async () => {
    runtime = new Runtime({
      model: { provider: 'scripted', script: { steps: [{ content: 'unused' }] } },
      workspace: '/tmp',
      grants: ['read'],
      budget: { tokens: 1_000_000 },
    });
    const events: AgentEvent[] = [];
    runtime.bus.onAny((event) => events.push(event));
    const usage = { inputTokens: 100, outputTokens: 10 };
    const summaryUsage = { inputTokens: 7_000, outputTokens: 300 };
    const long = 'x'.repeat(400);
    const model = new ScriptedModel({
      steps: [
        // Every summary request (whenever compression runs), then the loop's calls.
        { ...summaryStep('earlier: echoed x'), usage: summaryUsage },
        { ...call('echo', { text: long }), usage },
        { ...call('echo', { text: long }), usage },
        { ...call('echo', { text: long }), usage },
        { ...answer('done'), usage },
      ],
    });
    runtime.registerRoot('coordinator', { model: runtime.defaultModel, task: 'go' });
    const allowance = runtime.allowance('coordinator');
    const agent = new Agent({
      name: 'coordinator',
      agentId: 'coordinator',
      runId: runtime.runId,
      model,
      tools: new ToolRegistry([echoTool]),
      system: 'sys',
      events: runtime.events,
      allowance,
      compression: { maxTokens: 500, keepTurns: 1 },
    });

    const result = await agent.run('go');

    expect(result.final).toBe('done');
    const compressed = events.filter((event) => event.type === 'history.compressed');
    expect(compressed.length).toBeGreaterThan(0);
    for (const event of compressed) expect(event).toMatchObject({ usage: summaryUsage });
    // 4 loop calls of 110 tokens plus 7,300 for each summary.
    const expected = 4 * 110 + compressed.length * 7_300;
    expect(result.usage.inputTokens + result.usage.outputTokens).toBe(expected);
    expect(runtime.usage('coordinator').tokens).toBe(expected);
    expect(runtime.usage().tokens).toBe(expected);
  });
});
