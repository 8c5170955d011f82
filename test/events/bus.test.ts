import { describe, expect, it } from 'vitest';
import { EventBus, waitForEvent } from '../../src/events/bus.js';
import type { AgentEvent, UnsequencedEvent } from '../../src/events/schema.js';

function progress(note: string, agentId = 'a'): UnsequencedEvent {
  return { v: 1, ts: 1, runId: 'r', agentId, type: 'agent.progress', note };
}

describe('EventBus', () => {
  it('stamps a gap-free seq starting at zero', () => {
    const bus = new EventBus();
    const seqs = ['a', 'b', 'c'].map((note) => bus.publish(progress(note)).seq);
    expect(seqs).toEqual([0, 1, 2]);
    expect(bus.nextSeq).toBe(3);
  });

  it('rejects an invalid event without consuming a seq', () => {
    const bus = new EventBus();
    expect(() =>
      bus.publish({ ...progress('x'), note: 5 } as unknown as UnsequencedEvent),
    ).toThrow();
    expect(bus.publish(progress('ok')).seq).toBe(0);
  });

  it('delivers typed events to on() and everything to onAny() until unsubscribed', () => {
    const bus = new EventBus();
    const notes: string[] = [];
    const all: string[] = [];
    const off = bus.on('agent.progress', (event) => notes.push(event.note));
    bus.onAny((event) => all.push(event.type));
    bus.publish(progress('one'));
    off();
    bus.publish(progress('two'));
    expect(notes).toEqual(['one']);
    expect(all).toEqual(['agent.progress', 'agent.progress']);
  });

  it('turns a throwing listener into a callback.error event and still calls the others', () => {
    const bus = new EventBus();
    const seen: string[] = [];
    bus.on('agent.progress', () => {
      throw new Error('listener broke');
    });
    bus.on('agent.progress', (event) => seen.push(event.note));
    bus.on('callback.error', (event) => seen.push(`error: ${event.error.message}`));

    expect(() => bus.publish(progress('x'))).not.toThrow();
    expect(seen).toEqual(['x', 'error: listener broke']);
  });

  it('does not recurse when a callback.error listener throws too', () => {
    const bus = new EventBus();
    bus.on('agent.progress', () => {
      throw new Error('first');
    });
    bus.on('callback.error', () => {
      throw new Error('second');
    });
    expect(() => bus.publish(progress('x'))).not.toThrow();
    expect(bus.nextSeq).toBe(2);
  });
});

describe('waitForEvent', () => {
  it('resolves with the first event matching the predicate', async () => {
    const bus = new EventBus();
    const waiting = waitForEvent(bus, 'agent.progress', (event) => event.agentId === 'b');
    bus.publish(progress('from a', 'a'));
    bus.publish(progress('from b', 'b'));
    await expect(waiting).resolves.toMatchObject({ note: 'from b', seq: 1 });
  });

  it('rejects when the signal aborts', async () => {
    const bus = new EventBus();
    const controller = new AbortController();
    const waiting = waitForEvent(bus, 'agent.progress', undefined, { signal: controller.signal });
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
  });
});

describe('EventBus ordering', () => {
  it('delivers events published from inside a listener after the current one, in seq order', () => {
    const bus = new EventBus();
    const seen: number[] = [];
    bus.on('agent.progress', (event) => {
      if (event.note === 'first') bus.publish(progress('nested'));
    });
    bus.onAny((event) => seen.push(event.seq));
    bus.publish(progress('first'));
    expect(seen).toEqual([0, 1]);
  });

  it('stamps an adopted event itself, in the same seq order as published ones', () => {
    const bus = new EventBus({ validate: false });
    const seen: AgentEvent[] = [];
    bus.onAny((event) => seen.push(event));
    const handedOver = progress('adopted');
    bus.publish(progress('published'));
    const stamped = bus.adopt(handedOver);
    expect(stamped).toBe(handedOver);
    expect(seen.map((event) => [event.seq, event.type === 'agent.progress' && event.note])).toEqual(
      [
        [0, 'published'],
        [1, 'adopted'],
      ],
    );
    expect(Object.keys(stamped).at(-1)).toBe('seq');
  });

  it('adopts an event its producer validated: no second check, stamped in place', () => {
    const bus = new EventBus();
    const handedOver = progress('checked');
    const stamped = bus.adopt(handedOver);
    expect(stamped).toBe(handedOver);
    expect(stamped).toMatchObject({ seq: 0, note: 'checked' });
    // publish() checks; adopt() trusts the producer's checkEvent.
    expect(() =>
      bus.publish({ ...progress('x'), note: 5 } as unknown as UnsequencedEvent),
    ).toThrow();
    expect(bus.nextSeq).toBe(1);
  });

  it('stamps ts itself, monotonic in seq, whatever the producers said', () => {
    const bus = new EventBus();
    const late = { ...progress('late'), ts: Date.now() + 60_000 };
    const early = { ...progress('early'), ts: 1 };
    const a = bus.publish(late);
    const b = bus.adopt(early);
    expect(b.seq).toBe(a.seq + 1);
    expect(b.ts).toBeGreaterThanOrEqual(a.ts);
    expect(a.ts).toBeLessThan(late.ts);
  });
});

describe('EventBus.json', () => {
  it("gives an adopted event's producer text with the bus's ts and seq spliced in, byte for byte what JSON.stringify writes", () => {
    const bus = new EventBus();
    const lines: string[] = [];
    bus.onAny((event) => lines.push(bus.json(event)));
    bus.publish(progress('first'));
    const text = JSON.stringify({ ...progress('with "quotes", commas, {braces}'), ts: 42 });
    const stamped = bus.adopt(JSON.parse(text), text);
    expect(lines[1]).toBe(JSON.stringify(stamped));
    expect(JSON.parse(lines[1] as string)).toMatchObject({ seq: 1, ts: stamped.ts });
    expect(stamped.ts).not.toBe(42);
  });

  it("uses the producer's text, not a second serialization, while the event is delivered", () => {
    const bus = new EventBus();
    const lines: string[] = [];
    bus.onAny((event) => lines.push(bus.json(event)));
    const event = progress('as made');
    // A text that says something else than the object shows which one json() read.
    const text = JSON.stringify({ ...event, note: 'from the text' });
    bus.adopt(event, text);
    expect(JSON.parse(lines[0] as string).note).toBe('from the text');
    // After delivery, or for an event never adopted with text: its own serialization.
    expect(JSON.parse(bus.json(bus.publish(progress('published')))).note).toBe('published');
  });

  it('serializes the event itself when the text has another shape or already has a seq', () => {
    const bus = new EventBus();
    const lines: string[] = [];
    bus.onAny((event) => lines.push(bus.json(event)));
    const reordered = progress('reordered');
    bus.adopt(reordered, JSON.stringify({ type: 'agent.progress', note: 'other order' }));
    const sequenced = { ...progress('sequenced'), seq: 99 } as unknown as UnsequencedEvent;
    bus.adopt(sequenced, JSON.stringify({ ...progress('stale text'), seq: 99 }));
    expect(lines.map((line) => JSON.parse(line).note)).toEqual(['reordered', 'sequenced']);
    expect(lines[1]).toBe(JSON.stringify(sequenced));
  });
});

describe('EventBus.off', () => {
  it('stops a listener added with on', () => {
    const bus = new EventBus();
    const notes: string[] = [];
    const listener = (event: { note: string }) => notes.push(event.note);
    bus.on('agent.progress', listener);
    bus.publish(progress('one'));
    bus.off('agent.progress', listener);
    bus.publish(progress('two'));
    expect(notes).toEqual(['one']);
  });
});
