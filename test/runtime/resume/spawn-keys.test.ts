import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SpawnKeys } from '../../../src/runtime/resume/spawn-keys.js';

describe('SpawnKeys', () => {
  // Runs journaled by earlier versions hold these keys: a resume must find the same ones.
  it('gives the keys earlier versions gave, one per occurrence of (role, task, parent)', () => {
    const keys = new SpawnKeys();
    const earlierKey = (occurrence: number): string =>
      createHash('sha256')
        .update(`${JSON.stringify(['clerk', 'file it', 'root'])}#${occurrence}`)
        .digest('hex')
        .slice(0, 32);
    expect(keys.next('clerk', 'file it', 'root')).toBe(earlierKey(0));
    expect(keys.next('clerk', 'file it', 'root')).toBe(earlierKey(1));
    expect(keys.next('clerk', 'file it', 'other')).not.toBe(earlierKey(2));
  });

  it('counts long tasks by their digest and still gives the keys earlier versions gave', () => {
    const keys = new SpawnKeys();
    const task = 'summarize this report\n'.repeat(200);
    const earlierKey = (triple: unknown[], occurrence: number): string =>
      createHash('sha256')
        .update(`${JSON.stringify(triple)}#${occurrence}`)
        .digest('hex')
        .slice(0, 32);
    expect(keys.next('clerk', task, 'root')).toBe(earlierKey(['clerk', task, 'root'], 0));
    // Another triple in between (short, then long under another parent) does not disturb the count.
    expect(keys.next('clerk', 'short', 'root')).toBe(earlierKey(['clerk', 'short', 'root'], 0));
    expect(keys.next('clerk', task, 'other')).toBe(earlierKey(['clerk', task, 'other'], 0));
    expect(keys.next('clerk', task, 'root')).toBe(earlierKey(['clerk', task, 'root'], 1));
    expect(keys.next('clerk', task, 'root')).toBe(earlierKey(['clerk', task, 'root'], 2));
    expect(keys.next('clerk', 'short', 'root')).toBe(earlierKey(['clerk', 'short', 'root'], 1));
  });
});
