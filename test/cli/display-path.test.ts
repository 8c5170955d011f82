import { describe, expect, it } from 'vitest';
import { displayPath } from '../../src/cli/display-path.js';

describe('displayPath', () => {
  const env = { HOME: '/home/ada' };

  it('is relative inside the working folder', () => {
    expect(displayPath('/work/p/runs/r1/trace.jsonl', '/work/p', env)).toBe('runs/r1/trace.jsonl');
  });

  it('uses ~ for the home folder outside the working folder', () => {
    expect(displayPath('/home/ada/.local/state/troupe/runs/r1/trace.jsonl', '/work/p', env)).toBe(
      '~/.local/state/troupe/runs/r1/trace.jsonl',
    );
    expect(displayPath('/home/ada', '/work/p', env)).toBe('~');
  });

  it('stays whole elsewhere, and for a home that only shares a prefix', () => {
    expect(displayPath('/var/runs/r1/trace.jsonl', '/work/p', env)).toBe(
      '/var/runs/r1/trace.jsonl',
    );
    expect(displayPath('/home/adam/runs', '/work/p', env)).toBe('/home/adam/runs');
    expect(displayPath('/runs/r1', '/work/p', { HOME: '/' })).toBe('/runs/r1');
  });
});
