import { describe, expect, it } from 'vitest';
import type { SerializedError } from '../../../src/errors.js';
import { isTransient, Supervisor } from '../../../src/runtime/actors/supervisor.js';

const crash: SerializedError = {
  name: 'TroupeError',
  code: 'runtime.worker_exit',
  message: 'crashed',
};
const bug: SerializedError = { name: 'TroupeError', code: 'tool.failed', message: 'bug' };
const policy = { maxRetries: 3, backoffMs: 100, maxBackoffMs: 250, maxRestarts: 2, periodMs: 1000 };

describe('Supervisor', () => {
  it('treats 429, 5xx and thread crashes as transient and the rest as not', () => {
    expect(isTransient(crash)).toBe(true);
    expect(isTransient({ ...bug, code: 'model.rate_limited' })).toBe(true);
    expect(isTransient({ ...bug, code: 'model.http', details: { status: 503 } })).toBe(true);
    expect(isTransient(bug)).toBe(false);
  });

  it('retries a transient failure with doubling backoff capped at maxBackoffMs', () => {
    const supervisor = new Supervisor(() => 0);
    expect(supervisor.decide({ ...policy, maxRestarts: 10 }, 'p', 1, crash)).toEqual({
      retry: true,
      delayMs: 100,
    });
    expect(supervisor.decide({ ...policy, maxRestarts: 10 }, 'p', 2, crash)).toEqual({
      retry: true,
      delayMs: 200,
    });
    expect(supervisor.decide({ ...policy, maxRestarts: 10 }, 'p', 3, crash)).toEqual({
      retry: true,
      delayMs: 250,
    });
  });

  it('fails fast when the failure is not transient or the policy has no retries', () => {
    const supervisor = new Supervisor(() => 0);
    expect(supervisor.decide(policy, 'p', 1, bug)).toEqual({ retry: false, escalated: false });
    expect(supervisor.decide({ ...policy, maxRetries: 0 }, 'p', 1, crash)).toEqual({
      retry: false,
      escalated: false,
    });
  });

  it('stops retrying after maxRetries attempts', () => {
    const supervisor = new Supervisor(() => 0);
    const decision = supervisor.decide({ ...policy, maxRestarts: 10 }, 'p', 4, crash);
    expect(decision.retry).toBe(false);
  });

  it('escalates when one parent sees more than maxRestarts restarts within the period', () => {
    let now = 0;
    const supervisor = new Supervisor(() => now);
    expect(supervisor.decide(policy, 'coordinator', 1, crash).retry).toBe(true);
    expect(supervisor.decide(policy, 'coordinator', 1, crash).retry).toBe(true);
    const third = supervisor.decide(policy, 'coordinator', 1, crash);
    expect(third).toMatchObject({ retry: false, escalated: true });
    expect(third.retry ? '' : third.reason).toContain('restart limit reached');
    // Another parent has its own window, and the window slides.
    expect(supervisor.decide(policy, 'other', 1, crash).retry).toBe(true);
    now = 1001;
    expect(supervisor.decide(policy, 'coordinator', 1, crash).retry).toBe(true);
  });

  it("keeps restart intensity per actor: a sibling crash loop never uses up another child's restarts", () => {
    const supervisor = new Supervisor(() => 0);
    const loose = { ...policy, maxRetries: 10 };
    expect(supervisor.decide(loose, 'coordinator', 1, crash, 'a-1').retry).toBe(true);
    expect(supervisor.decide(loose, 'coordinator', 2, crash, 'a-1').retry).toBe(true);
    const third = supervisor.decide(loose, 'coordinator', 3, crash, 'a-1');
    expect(third).toMatchObject({ retry: false, escalated: true });
    expect(third.retry ? '' : third.reason).toContain('restart limit reached (2 restarts of a-1');
    // Its siblings still have their own.
    for (let index = 2; index <= 20; index += 1)
      expect(supervisor.decide(loose, 'coordinator', 1, crash, `a-${index}`).retry).toBe(true);
  });

  it('escalates at the parent when more distinct children fail than maxFailingChildren', () => {
    let now = 0;
    const supervisor = new Supervisor(() => now);
    const few = { ...policy, maxFailingChildren: 3 };
    for (const child of ['a-1', 'a-2', 'a-3'])
      expect(supervisor.decide(few, 'p', 1, crash, child).retry).toBe(true);
    // The same child failing again is not a new failing child.
    expect(supervisor.decide(few, 'p', 2, crash, 'a-3').retry).toBe(true);
    const fourth = supervisor.decide(few, 'p', 1, crash, 'a-4');
    expect(fourth).toMatchObject({ retry: false, escalated: true });
    expect(fourth.retry ? '' : fourth.reason).toContain('4 children of p failed');
    now = 1001;
    expect(supervisor.decide(few, 'p', 1, crash, 'a-5').retry).toBe(true);
  });
});
