import { describe, expect, it } from 'vitest';
import { RunState } from '../../src/render/run-state.js';
import { EventFactory } from '../cli/events.js';

describe('RunState', () => {
  it('shows a reused agent as completed when its first event is a replayed message.sent', () => {
    const factory = new EventFactory();
    const state = new RunState();
    const sub = { parentId: 'coordinator', role: 'researcher' };
    state.apply(factory.make('coordinator', { type: 'run.started', task: 't' }));
    state.apply(
      factory.make(
        'researcher-1',
        { type: 'message.sent', channel: 'findings', messageId: 'm1', payload: {} },
        sub,
      ),
    );
    state.apply(factory.make('researcher-2', { type: 'agent.spawned', task: 't' }, sub));
    state.apply(
      factory.make(
        'researcher-2',
        { type: 'message.sent', channel: 'findings', messageId: 'm2', payload: {} },
        sub,
      ),
    );

    expect(state.agents.get('researcher-1')).toMatchObject({
      status: 'completed',
      activity: 'reused: published on findings again',
    });
    expect(state.agents.get('researcher-2')).toMatchObject({
      status: 'running',
      activity: 'published on findings',
    });
    expect(state.agents.get('coordinator')?.children).toEqual(['researcher-1', 'researcher-2']);
    expect(state.countByStatus()).toMatchObject({ running: 2, completed: 1 });
  });
});
