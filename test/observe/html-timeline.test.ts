import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { renderTimelineHtml } from '../../src/observe/html-timeline.js';
import { closeRuntimes, ofType } from '../integration/helpers.js';
import { readerRun, SECRET } from './scripted-runs.js';
import { timelineData } from './timeline-data.js';

afterEach(closeRuntimes);

// A synthetic run: `agents` agents under one coordinator, each with `steps`
// model calls streamed as many deltas, a tool call with a long result, and a
// channel message to the coordinator.
function syntheticRun(agents: number, steps: number): AgentEvent[] {
  const events: AgentEvent[] = [];
  const base = { v: 1 as const, runId: 'synthetic', role: 'worker' };
  let ts = 1_700_000_000_000;
  const push = (event: Record<string, unknown>) => {
    ts += 1;
    events.push({ ...base, seq: events.length, ts, ...event } as AgentEvent);
  };
  push({ type: 'run.started', agentId: 'coordinator', role: 'coordinator', task: 'synthetic' });
  push({
    type: 'agent.spawned',
    agentId: 'coordinator',
    role: 'coordinator',
    task: 'lead',
    model: 'scripted',
  });
  for (let index = 0; index < agents; index += 1) {
    const agentId = `worker-${index}`;
    const envelope = { agentId, parentId: 'coordinator' };
    push({
      ...envelope,
      type: 'agent.spawned',
      task: `task ${index} ${'x'.repeat(400)}`,
      model: 'scripted',
    });
    for (let step = 0; step < steps; step += 1) {
      push({ ...envelope, type: 'model.request', step, messages: 2 + step, tools: 1 });
      for (let delta = 0; delta < 6; delta += 1) {
        push({ ...envelope, type: 'model.delta', kind: 'text', text: 'some streamed words ' });
      }
      push({
        ...envelope,
        type: 'model.response',
        content: 'thinking out loud '.repeat(40),
        toolCalls: [],
        usage: { inputTokens: 100, outputTokens: 10 },
        stopReason: 'tool_use',
      });
      push({
        ...envelope,
        type: 'tool.call',
        callId: `c${step}`,
        name: 'read_file',
        input: { path: 'a.md' },
      });
      push({
        ...envelope,
        type: 'tool.result',
        callId: `c${step}`,
        name: 'read_file',
        ok: step % 3 !== 2,
        content: 'file text '.repeat(300),
      });
    }
    push({
      ...envelope,
      type: 'message.sent',
      channel: 'notes',
      messageId: `m${index}`,
      payload: { n: index },
    });
    push({
      agentId: 'coordinator',
      role: 'coordinator',
      type: 'message.received',
      channel: 'notes',
      messageId: `m${index}`,
      from: agentId,
    });
    push({
      ...envelope,
      type: 'agent.finished',
      status: index % 100 === 7 ? 'failed' : 'completed',
      final: 'ok',
    });
  }
  push({
    type: 'agent.finished',
    agentId: 'coordinator',
    role: 'coordinator',
    status: 'completed',
    final: 'all done',
  });
  push({
    type: 'run.finished',
    agentId: 'coordinator',
    role: 'coordinator',
    status: 'completed',
    final: 'all done',
  });
  return events;
}

describe('the HTML timeline', () => {
  it('is one self-contained file: no scripts, styles or images from anywhere else', async () => {
    const { events } = await readerRun();

    const html = renderTimelineHtml(events, { env: { MY_API_KEY: SECRET } });

    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain("default-src 'none'");
    expect(html).not.toMatch(/\ssrc\s*=/i);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/@import/i);
    expect(html.match(/url\(([^)]*)\)/g) ?? []).toEqual(['url(#head)']);
    // The one absolute URL is the SVG namespace, which is a name and is never fetched.
    expect(html.match(/https?:\/\/[^\s"')]+/g)).toEqual([
      'http://www.w3.org/2000/svg',
      'http://www.w3.org/2000/svg',
    ]);
    expect(html).not.toContain(SECRET);
  });

  it('draws every agent as a row under its parent, with model, tool and wait segments, tokens and failures', async () => {
    const { job, events } = await readerRun();

    const data = timelineData(renderTimelineHtml(events));

    expect(data.runId).toBe(job.runId);
    // One reader broke: an answer, but not every sub-agent completed.
    expect(data.status).toBe('partial');
    expect(data.final).toBe('two read, one broke');
    expect(data.agents.map((agent) => agent.id)).toEqual([
      'coordinator',
      ...ofType(events, 'agent.spawned')
        .filter((event) => event.parentId === 'coordinator')
        .map((event) => event.agentId),
    ]);
    expect(data.agents.slice(1).every((agent) => agent.parent === 0)).toBe(true);
    const segments = data.agents.flatMap((agent) => agent.segments);
    expect(segments.filter(([kind]) => kind === 'model')).toHaveLength(
      ofType(events, 'model.request').length,
    );
    expect(segments.filter(([kind]) => kind === 'tool')).toHaveLength(
      ofType(events, 'tool.result').filter((event) => event.name === 'read_file').length,
    );
    const [wait] = data.agents[0]!.segments.filter(([kind]) => kind === 'wait');
    expect(wait?.[3]).toMatch(/^delegate: waited on reader-\d, reader-\d, reader-\d$/);
    expect(segments.some(([kind, , , , failed]) => kind === 'tool' && failed === 1)).toBe(true);
    const broken = data.agents.find((agent) => agent.status === 'failed');
    expect(broken?.error).toContain('broke down');
    expect(broken?.segments.some(([kind, , , , failed]) => kind === 'model' && failed === 1)).toBe(
      true,
    );
    expect(data.inputTokens).toBe(job.usage.inputTokens);
    expect(data.outputTokens).toBe(job.usage.outputTokens);
    expect(data.agents[0]?.subtree).toMatchObject({
      agents: 4,
      inputTokens: job.usage.inputTokens,
    });
    expect(data.roles.map((role) => [role.role, role.agents, role.failed])).toEqual([
      ['coordinator', 1, 0],
      ['reader', 3, 1],
    ]);
    const transcript = data.agents.find((agent) => agent.task.includes('missing'))?.transcript;
    expect(transcript?.map(([kind]) => kind)).toEqual(['task', 'call', 'error', 'text', 'final']);
  });

  it('prices tokens per agent, role and subtree when given prices', async () => {
    const { events } = await readerRun();

    const data = timelineData(
      renderTimelineHtml(events, {
        price: (_model, usage) => (usage.inputTokens + usage.outputTokens) / 1_000,
      }),
    );

    const total = data.agents.reduce((sum, agent) => sum + (agent.costUsd ?? 0), 0);
    expect(data.costUsd).toBeCloseTo((data.inputTokens + data.outputTokens) / 1_000);
    expect(data.agents[0]?.subtree.costUsd).toBeCloseTo(total);
  });

  it('stays a few MiB for 1,000 agents and 100,000 events, with channel messages as arrows', () => {
    const events = syntheticRun(1_000, 12);
    expect(events.length).toBeGreaterThanOrEqual(100_000);

    const html = renderTimelineHtml(events);
    const data = timelineData(html);

    expect(Buffer.byteLength(html)).toBeLessThan(5 * 1024 * 1024);
    expect(data.agents).toHaveLength(1_001);
    expect(data.eventCount).toBe(events.length);
    expect(data.messages).toHaveLength(1_000);
    expect(data.messages[0]).toEqual([1, 0, expect.any(Number), expect.any(Number), 'notes']);
    expect(data.shortened).toBe(true);
    expect(data.agents.filter((agent) => agent.status === 'failed')).toHaveLength(10);
    expect(data.agents[1]?.segments).toHaveLength(24);
  });
});
