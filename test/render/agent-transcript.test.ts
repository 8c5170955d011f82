import { describe, expect, it } from 'vitest';
import { TranscriptStore } from '../../src/render/agent-transcript.js';
import { createPalette, stripAnsi } from '../../src/render/terminal.js';
import { EventFactory } from '../cli/events.js';

const palette = createPalette(false);

describe('TranscriptStore within its bound', () => {
  it('lets the first finished transcripts go, keeps the running ones, and says where the rest is', () => {
    const store = new TranscriptStore({ maxKeptEvents: 50 });
    const f = new EventFactory('run-big');
    const envelope = { parentId: 'coordinator', role: 'researcher', advanceMs: 1 };
    // 20 agents of 4 events each (80 > 50): the first ten finish, the last ten keep running.
    for (let i = 1; i <= 20; i += 1) {
      const id = `researcher-${i}`;
      store.record(f.make(id, { type: 'agent.spawned', task: `part ${i}` }, envelope));
      store.record(f.make(id, { type: 'model.request', step: 0, messages: 1, tools: 0 }, envelope));
      store.record(
        f.make(
          id,
          {
            type: 'model.response',
            content: `answer ${i}`,
            toolCalls: [],
            usage: { inputTokens: 1, outputTokens: 1 },
          },
          envelope,
        ),
      );
      if (i <= 10)
        store.record(f.make(id, { type: 'agent.finished', status: 'completed' }, envelope));
      else store.record(f.make(id, { type: 'agent.progress', note: 'still going' }, envelope));
      expect(store.kept).toBeLessThanOrEqual(50);
    }
    const text = (id: string): string => stripAnsi(store.lines(id, 200, palette).join('\n'));
    // Every running agent's story is whole.
    for (let i = 11; i <= 20; i += 1) {
      expect(text(`researcher-${i}`)).toContain(`answer ${i}`);
      expect(text(`researcher-${i}`)).not.toContain('not kept');
    }
    // The first to finish went first, and say where their events are.
    expect(text('researcher-1')).toContain(
      '(4 earlier events not kept in memory: this run has too many to keep; `troupe trace run-big --agent researcher-1` shows them all)',
    );
    expect(text('researcher-1')).not.toContain('answer 1');
    // The last to finish was still kept.
    expect(text('researcher-10')).toContain('answer 10');
  });

  it('keeps the last events of each running agent when only running agents are left', () => {
    const store = new TranscriptStore({ maxKeptEvents: 30 });
    const f = new EventFactory();
    const envelope = { parentId: 'coordinator', role: 'researcher', advanceMs: 1 };
    for (let round = 0; round < 10; round += 1) {
      for (let i = 1; i <= 5; i += 1) {
        store.record(
          f.make(`researcher-${i}`, { type: 'agent.progress', note: `note ${round}` }, envelope),
        );
      }
    }
    expect(store.kept).toBeLessThanOrEqual(30);
    for (let i = 1; i <= 5; i += 1) {
      const text = stripAnsi(store.lines(`researcher-${i}`, 200, palette).join('\n'));
      expect(text).toContain('note 9');
    }
  });
});
