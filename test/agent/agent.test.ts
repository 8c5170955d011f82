import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/agent/agent.js';
import { EventBus } from '../../src/events/bus.js';
import { type AgentEvent, AgentEventSchema } from '../../src/events/schema.js';
import { ScriptedModel } from '../../src/model/providers/scripted.js';
import type { Message } from '../../src/model/types.js';
import { ToolRegistry } from '../../src/tools/registry.js';
import { answer, call, echoTool, failingReadTool } from '../helpers/scripts.js';

function collect(bus: EventBus): AgentEvent[] {
  const events: AgentEvent[] = [];
  bus.onAny((event) => events.push(event));
  return events;
}

describe('Agent', () => {
  it('leaves 7 messages after two tool steps and a final answer, then 9 after a second plain run', async () => {
    const model = new ScriptedModel({
      steps: [
        call('echo', { text: 'a' }),
        call('echo', { text: 'b' }),
        answer('done'),
        answer('again'),
      ],
    });
    const agent = new Agent({
      name: 'worker',
      model,
      tools: new ToolRegistry([echoTool]),
      system: 'You are terse.',
    });

    const first = await agent.run('go');

    expect(first.stopReason).toBe('final');
    expect(first.final).toBe('done');
    expect(agent.history.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(first.steps.map((s) => s.kind)).toEqual(['tool_call', 'tool_call', 'final']);

    const second = await agent.run('once more');

    expect(second.final).toBe('again');
    expect(agent.history).toHaveLength(9);
    expect(agent.history.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(model.calls[3]?.request.messages.at(-1)).toEqual({ role: 'user', content: 'once more' });
    model.assertComplete();
  });

  it('feeds a failed tool result back to the model when the tool throws', async () => {
    const model = new ScriptedModel({
      steps: [call('read_file', { path: 'missing.txt' }), answer('File is missing.')],
    });
    const agent = new Agent({ name: 'reader', model, tools: new ToolRegistry([failingReadTool]) });

    const result = await agent.run('read missing.txt');

    expect(result.final).toBe('File is missing.');
    expect(model.calls[1]?.request.messages.at(-1)).toMatchObject({
      role: 'tool',
      isError: true,
      content: 'Error: File not found: missing.txt. Use list_dir to see what exists.',
    });
    model.assertComplete();
  });

  it('leaves history exactly as it was when the model fails mid-run after a throwing tool', async () => {
    const model = new ScriptedModel({
      steps: [
        answer('first'),
        call('read_file', { path: 'x' }),
        { error: { code: 'model.server', message: 'upstream exploded' } },
      ],
    });
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([failingReadTool]) });
    await agent.run('one');
    const before = agent.history;

    const result = await agent.run('two');

    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ code: 'model.server', message: 'upstream exploded' });
    expect(result.steps.at(-1)).toMatchObject({ kind: 'error', detail: 'upstream exploded' });
    expect(agent.history).toEqual(before);
  });

  it('keeps running when a callback throws and reports it as callback.error', async () => {
    const bus = new EventBus();
    const events = collect(bus);
    const model = new ScriptedModel({ steps: [call('echo', { text: 'x' }), answer('ok')] });
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([echoTool]), events: bus });
    agent.onStep = () => {
      throw new Error('hook broke');
    };
    agent.onThink = () => {
      throw new Error('think hook broke');
    };

    const result = await agent.run('go');

    expect(result.final).toBe('ok');
    const errors = events.filter((e) => e.type === 'callback.error');
    expect(errors.map((e) => (e.type === 'callback.error' ? e.callback : ''))).toEqual([
      'onThink',
      'onStep',
      'onThink',
      'onStep',
    ]);
  });

  it('calls every hook with the documented arguments', async () => {
    const model = new ScriptedModel({
      steps: [{ ...call('echo', { text: 'hi' }), thinking: 'I should echo' }, answer('bye')],
    });
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([echoTool]) });
    const seen: string[] = [];
    agent.onThink = (content, toolCalls, thinking) =>
      seen.push(`think:${content}:${toolCalls.length}:${thinking ?? '-'}`);
    agent.onToolResult = (name, args, result) =>
      seen.push(`result:${name}:${JSON.stringify(args)}:${result.ok}`);
    agent.onToolCall = (toolCall, result) => seen.push(`call:${toolCall.id}:${result.content}`);
    agent.onStep = (step) => seen.push(`step:${step.index}:${step.kind}`);

    await agent.run('go');

    expect(seen).toEqual([
      'think::1:I should echo',
      'result:echo:{"text":"hi"}:true',
      'call:call_1_0:echo: hi',
      'step:0:tool_call',
      'think:bye:0:-',
      'step:1:final',
    ]);
    agent.onStep = undefined;
    expect(agent.onStep).toBeUndefined();
  });

  it('stops with max_steps and an error step instead of throwing when the step limit is reached', async () => {
    const model = new ScriptedModel({
      steps: [{ ...call('echo', { text: 'loop' }), repeat: true }],
    });
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([echoTool]), maxSteps: 3 });

    const result = await agent.run('go');

    expect(result.stopReason).toBe('max_steps');
    expect(model.calls).toHaveLength(3);
    expect(result.steps.at(-1)).toMatchObject({ kind: 'error' });
    expect(result.steps.at(-1)?.detail).toContain('step limit of 3');
    // The history stays a valid conversation: every tool call answered.
    expect(agent.history.at(-1)?.role).toBe('tool');
  });

  it('nudges once when a reply is a tool call written as text, and runs the real call', async () => {
    const bus = new EventBus();
    const events = collect(bus);
    const fake = '<tool_call>\n{"name": "echo", "arguments": {"text": "hi"}}\n</tool_call>';
    const model = new ScriptedModel({
      steps: [answer(fake), call('echo', { text: 'hi' }), answer(fake)],
    });
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([echoTool]), events: bus });

    const result = await agent.run('go');

    const note = model.calls[1]?.request.messages.at(-1);
    expect(note).toMatchObject({ role: 'user' });
    expect(note?.content).toContain('wrote a call to echo as text');
    // Second fake call in the same run is not nudged again: it is the final answer.
    expect(result.final).toBe(fake);
    expect(events.filter((e) => e.type === 'agent.nudged')).toHaveLength(1);
    expect(events.find((e) => e.type === 'agent.nudged')).toMatchObject({
      reason: expect.stringContaining('echo as text (tag)'),
    });
    // Once answered with a real call, the fake reply and the note leave the history.
    expect(model.calls[2]?.request.messages.map((m) => m.content)).not.toContain(fake);
    expect(result.messages.filter((m) => m.role === 'user')).toEqual([
      { role: 'user', content: 'go' },
    ]);
  });

  it.each([
    'Done. I used echo (twice) and found the answer: 42.',
    'The answer is 42. I will not need echo again.',
    'Summary: echo (error) said the file is missing.',
    'Let me call echo with "hi" now.',
  ])('does not nudge prose that mentions a tool: %s', async (text) => {
    const model = new ScriptedModel({ steps: [answer(text)] });
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([echoTool]) });

    const result = await agent.run('go');

    expect(result.final).toBe(text);
    expect(model.calls).toHaveLength(1);
  });

  it('keeps the nudged answer when the reply to the nudge is text again, unless nudgeAnswer is reply', async () => {
    const fake = '{"name": "echo", "arguments": {"text": "42"}}';
    const steps = [answer(fake), answer('Sorry, the answer is 42.')];
    const original = new Agent({
      name: 'a',
      model: new ScriptedModel({ steps }),
      tools: new ToolRegistry([echoTool]),
    });
    const kept = await original.run('go');
    expect(kept.stopReason).toBe('final');
    expect(kept.final).toBe(fake);
    // One answer in the history, and no note.
    expect(original.history.map((m) => m.role)).toEqual(['user', 'assistant']);

    const reply = new Agent({
      name: 'b',
      model: new ScriptedModel({ steps }),
      tools: new ToolRegistry([echoTool]),
      nudgeAnswer: 'reply',
    });
    const replaced = await reply.run('go');
    expect(replaced.final).toBe('Sorry, the answer is 42.');
    expect(reply.history.map((m) => m.content)).toEqual(['go', 'Sorry, the answer is 42.']);

    const empty = new Agent({
      name: 'c',
      model: new ScriptedModel({ steps: [answer(fake), answer('')] }),
      tools: new ToolRegistry([echoTool]),
      nudgeAnswer: 'reply',
    });
    expect((await empty.run('go')).final).toBe(fake);
  });

  it('refuses a tool call that passes the nudge on (as a task), without running it', async () => {
    const bus = new EventBus();
    const events = collect(bus);
    const ran: string[] = [];
    const { defineTool } = await import('../../src/tools/tool.js');
    const { z } = await import('zod');
    const spawn = defineTool({
      name: 'spawn_agent',
      description: 'Starts a sub-agent.',
      parameters: z.object({ role: z.string(), task: z.string() }),
      execute: ({ task }) => {
        ran.push(task);
        return 'started';
      },
    });
    const fake = 'spawn_agent(role="researcher", task="Find the price")';
    const model = new ScriptedModel({
      steps: [
        answer(fake),
        {
          match: { lastUserContains: 'wrote a call' },
          toolCalls: [
            {
              name: 'spawn_agent',
              arguments: {
                role: 'researcher',
                task: 'Your last reply wrote a call to spawn_agent as text, so nothing ran.',
              },
            },
          ],
        },
        call('spawn_agent', { role: 'researcher', task: 'Find the price' }),
        answer('started one researcher'),
      ],
    });
    const agent = new Agent({
      name: 'a',
      model,
      tools: new ToolRegistry([spawn]),
      events: bus,
    });

    const result = await agent.run('go');

    expect(result.final).toBe('started one researcher');
    expect(ran).toEqual(['Find the price']);
    const refused = events.find((e) => e.type === 'tool.result' && !e.ok);
    expect(refused).toMatchObject({ error: { code: 'tool.refused' } });
    expect(refused?.type === 'tool.result' && refused.content).toContain("repeat troupe's note");
  });

  it('does not nudge at the last step, so the answer stands as final', async () => {
    const fake = 'echo(text="hi")';
    const model = new ScriptedModel({ steps: [call('echo', { text: 'a' }), answer(fake)] });
    const agent = new Agent({
      name: 'a',
      model,
      tools: new ToolRegistry([echoTool]),
      maxSteps: 2,
    });

    const result = await agent.run('go');

    expect(result.stopReason).toBe('final');
    expect(result.final).toBe(fake);
  });

  it('does not nudge when the guard is disabled', async () => {
    const model = new ScriptedModel({ steps: [answer('echo(text="now")')] });
    const agent = new Agent({
      name: 'a',
      model,
      tools: new ToolRegistry([echoTool]),
      nudge: false,
    });

    expect((await agent.run('go')).final).toBe('echo(text="now")');
  });

  it('emits budget.warning at the soft limit and stops cleanly at the hard limit', async () => {
    const bus = new EventBus();
    const events = collect(bus);
    const usage = { inputTokens: 400, outputTokens: 100 };
    const model = new ScriptedModel({
      steps: [{ ...call('echo', { text: 'x' }), usage, repeat: true }],
    });
    const agent = new Agent({
      name: 'a',
      model,
      tools: new ToolRegistry([echoTool]),
      budget: { softTokens: 1000, hardTokens: 1500 },
      events: bus,
    });

    const result = await agent.run('go');

    expect(result.stopReason).toBe('budget');
    expect(result.usage).toEqual({ inputTokens: 1200, outputTokens: 300 });
    expect(events.filter((e) => e.type === 'budget.warning')).toMatchObject([
      { used: 1000, limit: 1000 },
    ]);
    expect(events.filter((e) => e.type === 'budget.exceeded')).toMatchObject([
      { used: 1500, limit: 1500 },
    ]);
    // The tool calls of the turn that crossed the limit were not run, and the history is still valid.
    expect(events.filter((e) => e.type === 'tool.call')).toHaveLength(2);
    const last = agent.history.at(-1);
    expect(last?.role).toBe('tool');
    expect(last?.content).toContain('budget');
  });

  it("caps each call's max_tokens by what its own hard limit leaves, and sends none past it", async () => {
    const usage = { inputTokens: 500, outputTokens: 400 };
    const model = new ScriptedModel({
      steps: [{ ...call('echo', { text: 'x' }), usage, repeat: true }],
    });
    const agent = new Agent({
      name: 'a',
      model,
      tools: new ToolRegistry([echoTool]),
      budget: { hardTokens: 2_000 },
    });

    const result = await agent.run('go');

    // Call 1: 2,000 minus its small prompt; call 2: 1,100 minus the prompt; then 200 left is under 256: not sent.
    expect(model.calls).toHaveLength(2);
    const [first, second] = model.calls.map((entry) => entry.request.maxTokens ?? 0);
    expect(first).toBeLessThan(2_000);
    expect(first).toBeGreaterThan(1_800);
    expect(second).toBeLessThan(1_100);
    expect(second).toBeGreaterThan(900);
    expect(result.stopReason).toBe('budget');
    expect(result.steps.at(-1)?.detail).toContain("The agent's own token budget is used up");
    expect(result.usage).toEqual({ inputTokens: 1_000, outputTokens: 800 });
  });

  it('compresses the middle of a long history and keeps tool calls with their results', async () => {
    const bus = new EventBus();
    const events = collect(bus);
    const long = 'x'.repeat(400);
    const model = new ScriptedModel({
      steps: [
        call('echo', { text: long }),
        call('echo', { text: long }),
        call('echo', { text: long }),
        answer('done'),
      ],
    });
    const summarized: Message[][] = [];
    const agent = new Agent({
      name: 'a',
      model,
      system: 'sys',
      tools: new ToolRegistry([echoTool]),
      events: bus,
      compression: {
        maxTokens: 300,
        keepTurns: 1,
        summarize: async (messages) => {
          summarized.push(messages);
          return 'earlier: echoed x three times';
        },
      },
    });

    const result = await agent.run('go');

    expect(result.final).toBe('done');
    const compressed = events.filter((e) => e.type === 'history.compressed');
    expect(compressed.length).toBeGreaterThan(0);
    for (const event of compressed) {
      if (event.type !== 'history.compressed') continue;
      expect(event.afterTokens).toBeLessThan(event.beforeTokens);
    }
    for (const request of model.calls.map((c) => c.request.messages)) {
      expect(request[0]).toEqual({ role: 'system', content: 'sys' });
      assertToolPairsIntact(request);
    }
    for (const middle of summarized) assertToolPairsIntact(middle);
    expect(model.calls.at(-1)?.request.messages[1]).toEqual({ role: 'user', content: 'go' });
    expect(model.calls.at(-1)?.request.messages[2]?.content).toContain('earlier: echoed x');
  });

  it('ends with stopReason cancelled and a valid history when the signal aborts during a tool', async () => {
    const controller = new AbortController();
    const { defineTool } = await import('../../src/tools/tool.js');
    const { z } = await import('zod');
    const blocking = defineTool({
      name: 'block',
      description: 'Waits until cancelled.',
      parameters: z.object({}),
      execute: (_input, context) =>
        new Promise((_resolve, reject) => {
          context.signal.addEventListener('abort', () => reject(new Error('aborted')));
          controller.abort();
        }),
    });
    const model = new ScriptedModel({ steps: [call('block'), answer('never')] });
    const agent = new Agent({ name: 'a', model, tools: new ToolRegistry([blocking]) });

    const result = await agent.run('go', { signal: controller.signal });

    expect(result.stopReason).toBe('cancelled');
    expect(model.calls).toHaveLength(1);
    expect(agent.history.at(-1)).toMatchObject({ role: 'tool', isError: true });
    assertToolPairsIntact(agent.history);
  });

  it('ends with stopReason cancelled when the signal aborts during a model call', async () => {
    const controller = new AbortController();
    const model = new ScriptedModel({ steps: [{ content: 'slow', latencyMs: 60_000 }] });
    const agent = new Agent({ name: 'a', model });
    const running = agent.run('go', { signal: controller.signal });
    controller.abort();

    const result = await running;

    expect(result.stopReason).toBe('cancelled');
  });

  it('emits valid events with a gap-free seq and the agent envelope', async () => {
    const bus = new EventBus();
    const events = collect(bus);
    const model = new ScriptedModel({ steps: [call('echo', { text: 'hi' }), answer('done')] });
    const agent = new Agent({
      name: 'worker',
      model,
      tools: new ToolRegistry([echoTool]),
      events: bus,
      runId: 'run-1',
      agentId: 'researcher-1',
      parentId: 'coordinator',
      role: 'researcher',
    });

    await agent.run('go');

    expect(events.map((e) => e.seq)).toEqual(events.map((_, index) => index));
    for (const event of events) {
      expect(AgentEventSchema.parse(event)).toEqual(event);
      expect(event).toMatchObject({
        v: 1,
        runId: 'run-1',
        agentId: 'researcher-1',
        parentId: 'coordinator',
        role: 'researcher',
      });
    }
    const types = events.map((e) => e.type).filter((t) => t !== 'model.delta');
    expect(types).toEqual([
      'model.request',
      'model.response',
      'tool.call',
      'tool.result',
      'step',
      'model.request',
      'model.response',
      'step',
    ]);
    expect(events.some((e) => e.type === 'model.delta' && e.kind === 'text')).toBe(true);
  });

  it('serves many conversations from one instance with chat()', async () => {
    const model = new ScriptedModel({
      steps: [
        { match: { lastUserContains: 'A' }, content: 'for A' },
        { match: { lastUserContains: 'B' }, content: 'for B' },
        { match: { lastUserContains: 'again' }, content: 'A continued' },
      ],
    });
    const agent = new Agent({ name: 'a', model, system: 'sys' });

    const a1 = await agent.chat('hello A');
    const b1 = await agent.chat('hello B');
    const a2 = await agent.chat('again', a1.messages);

    expect(b1.messages).toHaveLength(3);
    expect(a2.final).toBe('A continued');
    expect(a2.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(agent.history).toHaveLength(0);
  });

  it('adds inbox messages before each model call', async () => {
    const inbox: Message[] = [{ role: 'user', content: 'steer: focus on costs' }];
    const model = new ScriptedModel({ steps: [answer('ok')] });
    const agent = new Agent({ name: 'a', model, inbox: () => inbox.splice(0) });

    await agent.run('go');

    expect(model.calls[0]?.request.messages.at(-1)).toEqual({
      role: 'user',
      content: 'steer: focus on costs',
    });
  });

  it('refuses a second concurrent run on the same history', async () => {
    const model = new ScriptedModel({ steps: [{ content: 'x', latencyMs: 5, repeat: true }] });
    const agent = new Agent({ name: 'a', model });
    const first = agent.run('one');

    await expect(agent.run('two')).rejects.toThrow(/already running/);
    await first;
  });

  it('rejects invalid configuration at construction', () => {
    const model = new ScriptedModel({ steps: [] });
    expect(() => new Agent({ name: 'a', model, maxSteps: 0 })).toThrow(/maxSteps/);
    expect(() => new Agent({ name: 'a', model, budget: { hardTokens: -1 } })).toThrow(/hardTokens/);
  });
});

function assertToolPairsIntact(messages: readonly Message[]): void {
  messages.forEach((message, index) => {
    if (message.role !== 'assistant' || message.toolCalls === undefined) return;
    const following = messages.slice(index + 1, index + 1 + message.toolCalls.length);
    expect(following.map((m) => (m.role === 'tool' ? m.toolCallId : m.role))).toEqual(
      message.toolCalls.map((c) => c.id),
    );
  });
  const first = messages.find((m) => m.role !== 'system');
  expect(first?.role).not.toBe('tool');
}
