import type { AgentEvent, EventPayload } from '../../src/events/schema.js';

/** Builds well-formed events with a running seq and clock, for renderer tests. */
export class EventFactory {
  #seq = 0;
  ts: number;
  readonly runId: string;

  constructor(runId = 'run-1', ts = 1_000_000) {
    this.runId = runId;
    this.ts = ts;
  }

  make(
    agentId: string,
    payload: EventPayload,
    envelope: { parentId?: string; role?: string; advanceMs?: number } = {},
  ): AgentEvent {
    this.ts += envelope.advanceMs ?? 100;
    return {
      v: 1,
      seq: this.#seq++,
      ts: this.ts,
      runId: this.runId,
      agentId,
      ...(envelope.parentId === undefined ? {} : { parentId: envelope.parentId }),
      ...(envelope.role === undefined ? {} : { role: envelope.role }),
      ...payload,
    } as AgentEvent;
  }
}

/** A small complete run: coordinator, two researchers (one fails), an analyst. */
export function sampleRun(): AgentEvent[] {
  const f = new EventFactory();
  const sub = (role: string) => ({ parentId: 'coordinator', role });
  return [
    f.make(
      'coordinator',
      { type: 'run.started', task: 'Compare the documents.' },
      { role: 'coordinator' },
    ),
    f.make(
      'coordinator',
      { type: 'model.request', step: 0, messages: 2, tools: 3 },
      { role: 'coordinator' },
    ),
    f.make(
      'coordinator',
      {
        type: 'model.response',
        content: '',
        thinking: 'List the workspace first.',
        toolCalls: [{ id: 'c1', name: 'list_dir', arguments: { path: '.' }, raw: '{"path":"."}' }],
        usage: { inputTokens: 900, outputTokens: 100 },
      },
      { role: 'coordinator' },
    ),
    f.make(
      'coordinator',
      { type: 'tool.call', callId: 'c1', name: 'list_dir', input: { path: '.' } },
      { role: 'coordinator' },
    ),
    f.make(
      'coordinator',
      { type: 'tool.result', callId: 'c1', name: 'list_dir', ok: true, content: 'a.md\nb.md' },
      { role: 'coordinator' },
    ),
    f.make(
      'researcher-1',
      { type: 'agent.spawned', task: 'Read "a.md".', model: 'offline' },
      sub('researcher'),
    ),
    f.make(
      'researcher-2',
      { type: 'agent.spawned', task: 'Read "b.md".', model: 'offline' },
      sub('researcher'),
    ),
    f.make(
      'analyst-1',
      { type: 'agent.spawned', task: 'Aggregate.', model: 'offline' },
      sub('analyst'),
    ),
    f.make(
      'researcher-1',
      { type: 'tool.call', callId: 'r1', name: 'read_file', input: { path: 'a.md' } },
      sub('researcher'),
    ),
    f.make(
      'researcher-1',
      {
        type: 'model.response',
        content: '',
        toolCalls: [],
        usage: { inputTokens: 2000, outputTokens: 500 },
      },
      sub('researcher'),
    ),
    f.make(
      'researcher-1',
      { type: 'agent.progress', note: 'read 1 of 1 documents' },
      sub('researcher'),
    ),
    f.make(
      'researcher-2',
      {
        type: 'tool.result',
        callId: 'r2',
        name: 'read_file',
        ok: false,
        content: 'Error: no such file',
        error: { code: 'tool.failed', message: 'ENOENT: b.md does not exist in the workspace' },
      },
      sub('researcher'),
    ),
    f.make(
      'researcher-2',
      {
        type: 'agent.finished',
        status: 'failed',
        error: { name: 'TroupeError', code: 'model.server', message: 'The model failed: HTTP 500' },
      },
      sub('researcher'),
    ),
    f.make(
      'analyst-1',
      { type: 'message.received', channel: 'findings', messageId: 'm1', from: 'researcher-1' },
      sub('analyst'),
    ),
    f.make(
      'researcher-1',
      {
        type: 'agent.finished',
        status: 'completed',
        final: 'Published findings for 1 document.',
        steps: 3,
        usage: { inputTokens: 2000, outputTokens: 500 },
      },
      sub('researcher'),
    ),
    f.make(
      'analyst-1',
      { type: 'agent.finished', status: 'completed', final: '## Analysis', steps: 2 },
      sub('analyst'),
    ),
    f.make(
      'coordinator',
      { type: 'run.finished', status: 'completed', final: 'Done.' },
      { role: 'coordinator' },
    ),
  ];
}
