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
});
