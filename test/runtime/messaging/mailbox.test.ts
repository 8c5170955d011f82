import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../../src/errors.js';
import { Mailbox } from '../../../src/runtime/messaging/mailbox.js';

describe('Mailbox', () => {
  it('takes messages up to its capacity without waiting', async () => {
    const mailbox = new Mailbox('analyst-1', { capacity: 2 });
    await mailbox.reserve();
    await mailbox.reserve();
    expect(mailbox.size).toBe(2);
    expect(mailbox.tryReserve()).toBe(false);
  });

  it('makes a sender wait until a message is read when full under block', async () => {
    const mailbox = new Mailbox('analyst-1', { capacity: 1, overflow: 'block' });
    await mailbox.reserve();
    let admitted = false;
    const waiting = mailbox.reserve().then(() => {
      admitted = true;
    });
    await Promise.resolve();
    expect(admitted).toBe(false);
    expect(mailbox.waiting).toBe(1);
    mailbox.release(1);
    await waiting;
    expect(admitted).toBe(true);
    expect(mailbox.size).toBe(1);
  });

  it('refuses with mailbox.full when full under error', async () => {
    const mailbox = new Mailbox('analyst-1', { capacity: 1, overflow: 'error' });
    await mailbox.reserve();
    const refused = await mailbox.reserve().catch((error: unknown) => error);
    expect(isTroupeError(refused, 'mailbox.full')).toBe(true);
    expect((refused as Error).message).toContain('analyst-1');
  });

  it('bounds the senders waiting under block', async () => {
    const mailbox = new Mailbox('analyst-1', { capacity: 1, maxWaiting: 1 });
    await mailbox.reserve();
    void mailbox.reserve().catch(() => {});
    const refused = await mailbox.reserve().catch((error: unknown) => error);
    expect(isTroupeError(refused, 'mailbox.full')).toBe(true);
    mailbox.close();
  });

  it('rejects waiting and later senders with runtime.closed when closed', async () => {
    const mailbox = new Mailbox('analyst-1', { capacity: 1 });
    await mailbox.reserve();
    const waiting = mailbox.reserve().catch((error: unknown) => error);
    mailbox.close('analyst-1 has finished');
    expect(isTroupeError(await waiting, 'runtime.closed')).toBe(true);
    expect(
      isTroupeError(await mailbox.reserve().catch((error: unknown) => error), 'runtime.closed'),
    ).toBe(true);
  });

  it('lets waiting senders in when reset below capacity', async () => {
    const mailbox = new Mailbox('analyst-1', { capacity: 1 });
    await mailbox.reserve();
    const waiting = mailbox.reserve();
    mailbox.reset(0);
    await waiting;
    expect(mailbox.size).toBe(1);
  });
});
