import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineChannel } from '../../../src/roles/channel.js';
import { Mailbox } from '../../../src/runtime/messaging/mailbox.js';
import { Router } from '../../../src/runtime/messaging/router.js';

const notes = defineChannel('notes', z.object({ text: z.string() }));

function world(capacity = 4, overflow: 'block' | 'error' = 'block') {
  const log: string[] = [];
  const router = new Router({
    deliver: (actorId, message) => log.push(`deliver ${actorId} ${message.content}`),
    close: (actorId, channel) => log.push(`close ${actorId} ${channel}`),
    sent: (from, channel, messageId) => log.push(`sent ${from} ${channel} ${messageId}`),
  });
  const mailbox = (id: string) => new Mailbox(id, { capacity, overflow });
  return { log, router, mailbox };
}

describe('Router', () => {
  it('delivers a valid payload to every subscriber, formatted as a channel message', async () => {
    const { log, router, mailbox } = world();
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    router.addActor('reader-2', [], [notes], mailbox('reader-2'));

    const answer = await router.publish('writer-1', 'notes', { text: 'hi' });

    expect(answer).toMatchObject({ ok: true });
    expect(log).toEqual([
      'sent writer-1 notes writer-1/m1',
      'deliver reader-1 [message on channel "notes" from writer-1]\n{"text":"hi"}',
      'deliver reader-2 [message on channel "notes" from writer-1]\n{"text":"hi"}',
    ]);
  });

  it('does not deliver again what a restarted publisher publishes again, and answers it as the first time', async () => {
    const { log, router, mailbox } = world();
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    const first = await router.publish('writer-1', 'notes', { text: 'one' });
    const second = await router.publish('writer-1', 'notes', { text: 'two' });
    log.length = 0;

    router.restarted('writer-1');
    expect(await router.publish('writer-1', 'notes', { text: 'one' })).toEqual(first);
    expect(await router.publish('writer-1', 'notes', { text: 'two' })).toEqual(second);
    expect(log).toEqual([]);
    // Past what it published before: new, delivered.
    expect(await router.publish('writer-1', 'notes', { text: 'three' })).toMatchObject({
      ok: true,
      message: expect.stringContaining('writer-1/m3'),
    });
    expect(log).toEqual([
      'sent writer-1 notes writer-1/m3',
      'deliver reader-1 [message on channel "notes" from writer-1]\n{"text":"three"}',
    ]);
  });

  it("delivers as new a restarted publisher's publication that differs from its earlier one, and all after it", async () => {
    const { log, router, mailbox } = world();
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    await router.publish('writer-1', 'notes', { text: 'one' });
    await router.publish('writer-1', 'notes', { text: 'two' });
    log.length = 0;

    router.restarted('writer-1');
    await router.publish('writer-1', 'notes', { text: 'other' });
    await router.publish('writer-1', 'notes', { text: 'two' });
    expect(log).toEqual([
      'sent writer-1 notes writer-1/m3',
      'deliver reader-1 [message on channel "notes" from writer-1]\n{"text":"other"}',
      'sent writer-1 notes writer-1/m4',
      'deliver reader-1 [message on channel "notes" from writer-1]\n{"text":"two"}',
    ]);
  });

  it('refuses an invalid payload to the sender and delivers nothing', async () => {
    const { log, router, mailbox } = world();
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));

    const answer = await router.publish('writer-1', 'notes', { text: 42 });

    expect(answer).toMatchObject({ ok: false, code: 'channel.invalid_payload' });
    expect(answer.message).toContain('text');
    expect(log).toEqual([]);
  });

  it('refuses a publication on a channel the role does not publish on', async () => {
    const { router, mailbox } = world();
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    expect(await router.publish('reader-1', 'notes', { text: 'x' })).toMatchObject({
      ok: false,
      code: 'channel.unknown',
    });
  });

  it('closes a channel for its subscribers when its last publisher is removed', () => {
    const { log, router, mailbox } = world();
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    router.addActor('writer-2', [notes], [], mailbox('writer-2'));
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    router.removeActor('writer-1');
    expect(log).toEqual([]);
    router.removeActor('writer-2');
    expect(log).toEqual(['close reader-1 notes']);
    expect(router.closedFor('reader-1')).toEqual(['notes']);
  });

  it('closes a channel at once for a subscriber that has no publisher', () => {
    const { log, router, mailbox } = world();
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    expect(log).toEqual(['close reader-1 notes']);
  });

  it('makes the publisher wait while a subscriber mailbox is full under block', async () => {
    const { log, router, mailbox } = world(1, 'block');
    const box = mailbox('reader-1');
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    router.addActor('reader-1', [], [notes], box);
    await router.publish('writer-1', 'notes', { text: 'one' });
    let second = false;
    const pending = router.publish('writer-1', 'notes', { text: 'two' }).then(() => {
      second = true;
    });
    await Promise.resolve();
    expect(second).toBe(false);
    box.release(1);
    await pending;
    expect(log.filter((line) => line.startsWith('deliver'))).toHaveLength(2);
  });

  it('answers mailbox.full when a subscriber mailbox is full under error', async () => {
    const { router, mailbox } = world(1, 'error');
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    await router.publish('writer-1', 'notes', { text: 'one' });
    const answer = await router.publish('writer-1', 'notes', { text: 'two' });
    expect(answer).toMatchObject({ ok: false, code: 'mailbox.full' });
    expect(answer.message).toContain('reader-1');
  });

  it('returns the accepted publications of an actor, in order, when it is removed', async () => {
    const { router, mailbox } = world();
    router.addActor('writer-1', [notes], [], mailbox('writer-1'));
    await router.publish('writer-1', 'notes', { text: 'one' });
    await router.publish('writer-1', 'notes', { text: 42 });
    await router.publish('writer-1', 'notes', { text: 'two' });
    expect(router.removeActor('writer-1')).toEqual([
      { channel: 'notes', payload: { text: 'one' } },
      { channel: 'notes', payload: { text: 'two' } },
    ]);
    expect(router.removeActor('writer-1')).toEqual([]);
  });

  it('replays a reused publisher to the current subscribers, closing the channel only behind its messages', async () => {
    const { log, router, mailbox } = world();
    router.addPublisher('writer-1', [notes]);
    // The subscriber comes after the reused publisher: the channel is open for it.
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    expect(log).toEqual([]);

    const refused = await router.replay('writer-1', [
      { channel: 'notes', payload: { text: 'one' } },
      { channel: 'notes', payload: { text: 'two' } },
    ]);

    expect(refused).toEqual([]);
    expect(log).toEqual([
      'sent writer-1 notes writer-1/m1',
      'deliver reader-1 [message on channel "notes" from writer-1]\n{"text":"one"}',
      'sent writer-1 notes writer-1/m2',
      'deliver reader-1 [message on channel "notes" from writer-1]\n{"text":"two"}',
      'close reader-1 notes',
    ]);
  });

  it('keeps the channel open while a replay waits for room in a full mailbox', async () => {
    const { log, router, mailbox } = world(1, 'block');
    const box = mailbox('reader-1');
    router.addPublisher('writer-1', [notes]);
    router.addActor('reader-1', [], [notes], box);
    const replay = router.replay('writer-1', [
      { channel: 'notes', payload: { text: 'one' } },
      { channel: 'notes', payload: { text: 'two' } },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(log.filter((line) => line.startsWith('close'))).toEqual([]);
    box.release(1);
    await replay;
    expect(log.at(-1)).toBe('close reader-1 notes');
    expect(log.filter((line) => line.startsWith('deliver'))).toHaveLength(2);
  });

  it('reports a replayed payload that no longer fits the channel and delivers the rest', async () => {
    const { log, router, mailbox } = world();
    router.addPublisher('writer-1', [notes]);
    router.addActor('reader-1', [], [notes], mailbox('reader-1'));
    const refused = await router.replay('writer-1', [
      { channel: 'notes', payload: { text: 7 } },
      { channel: 'notes', payload: { text: 'ok' } },
    ]);
    expect(refused).toMatchObject([{ ok: false, code: 'channel.invalid_payload' }]);
    expect(log.filter((line) => line.startsWith('deliver'))).toHaveLength(1);
    expect(log.at(-1)).toBe('close reader-1 notes');
  });
});
