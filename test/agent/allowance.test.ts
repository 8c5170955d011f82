import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import {
  type CallAllowance,
  type CallAsk,
  type CallOutcome,
  estimatePromptTokens,
} from '../../src/agent/allowance.js';
import { EventBus } from '../../src/events/bus.js';
import type { AgentEvent } from '../../src/events/schema.js';
import { ScriptedModel } from '../../src/model/providers/scripted.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { answer, call, echoTool } from '../helpers/scripts.js';

/** A budget double that grants `grants` in turn (a number is the max_tokens given, a string refuses). */
function allowanceOf(grants: Array<number | string>): {
  allowance: CallAllowance;
  asks: CallAsk[];
  settled: CallOutcome[];
} {
  const asks: CallAsk[] = [];
  const settled: CallOutcome[] = [];
  const allowance: CallAllowance = {
    reserve: async (ask) => {
      asks.push(ask);
      const grant = grants.shift();
      if (grant === undefined || typeof grant === 'string')
        return { ok: false, reason: grant ?? 'no room' };
      return { ok: true, maxTokens: grant, settle: (outcome) => settled.push(outcome) };
    },
  };
  return { allowance, asks, settled };
}

describe('Agent with a call allowance (the tree budget)', () => {
  it('sends each call with the max_tokens it was granted and settles it with the usage', async () => {
    const model = new ScriptedModel({ steps: [call('echo', { text: 'a' }), answer('done')] });
    const { allowance, asks, settled } = allowanceOf([1500, 700]);
    const bus = new EventBus();
    const events: AgentEvent[] = [];
    bus.onAny((event) => events.push(event));
    const agent = new Agent({
      name: 'worker',
      model,
      tools: new ToolRegistry([echoTool]),
      events: bus,
      allowance,
    });

    const result = await agent.run('go');

    expect(result.stopReason).toBe('final');
    expect(model.calls.map((entry) => entry.request.maxTokens)).toEqual([1500, 700]);
    expect(
      events.filter((event) => event.type === 'model.request').map((event) => event.maxTokens),
    ).toEqual([1500, 700]);
    // The prompt estimate covers the messages and the tool schemas; the scripted spec wants 4,096.
    expect(asks[0]).toEqual({
      promptTokens: estimatePromptTokens(model.calls[0]?.request.messages ?? [], [
        ...(model.calls[0]?.request.tools ?? []),
      ]),
      maxTokens: 4096,
      minTokens: 256,
    });
    expect(settled).toEqual(model.calls.map(() => expect.objectContaining({ inputTokens: 10 })));
  });

  it('does not send a call the budget refuses: the run stops with budget and the reason', async () => {
    const model = new ScriptedModel({ steps: [call('echo', { text: 'a' }), answer('done')] });
    const { allowance } = allowanceOf([1500, 'The run has no room for this call.']);
    const agent = new Agent({
      name: 'worker',
      model,
      tools: new ToolRegistry([echoTool]),
      allowance,
    });

    const result = await agent.run('go');

    expect(model.calls).toHaveLength(1);
    expect(result.stopReason).toBe('budget');
    expect(result.error).toMatchObject({
      code: 'budget.exceeded',
      message: 'The run has no room for this call.',
    });
    expect(result.steps.at(-1)).toMatchObject({
      kind: 'error',
      detail: 'The run has no room for this call.',
    });
  });

  it('settles a call cancelled in flight as aborted (its prompt may be billed)', async () => {
    const model = new ScriptedModel({ steps: [{ ...answer('late'), latencyMs: 60_000 }] });
    const { allowance, settled } = allowanceOf([1000]);
    const controller = new AbortController();
    const agent = new Agent({ name: 'worker', model, allowance, stream: false });
    const running = agent.run('go', { signal: controller.signal });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const result = await running;
    expect(result.stopReason).toBe('cancelled');
    expect(settled).toEqual(['aborted']);
  });
});
