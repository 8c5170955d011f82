import { describe, expect, it } from 'vitest';
import { requestedThreads } from '../../src/cli/prestart.js';

describe('requestedThreads', () => {
  it('reads --threads in both spellings, the last one winning', () => {
    expect(requestedThreads(['run', 'a task', '--threads', '3'])).toBe(3);
    expect(requestedThreads(['run', '--threads=2', 'a task'])).toBe(2);
    expect(requestedThreads(['demo', '--threads', '1', '--threads', '4'])).toBe(4);
  });

  it('is undefined (the default count) when no --threads is given', () => {
    expect(requestedThreads(['run', 'a task', '--json'])).toBeUndefined();
    // After --, words are the task's, not options.
    expect(requestedThreads(['run', '--', '--threads', '3'])).toBeUndefined();
  });

  it('is null when the command will start no local threads', () => {
    expect(requestedThreads(['run', '--help'])).toBeNull();
    expect(requestedThreads(['run', '-h'])).toBeNull();
    expect(requestedThreads(['help', 'run'])).toBeNull();
    expect(requestedThreads(['run', 'a task', '--nats', 'nats://localhost:4222'])).toBeNull();
    expect(requestedThreads(['run', 'a task', '--nats=nats://localhost:4222'])).toBeNull();
    // Commander refuses these; no threads for a run that will not start.
    expect(requestedThreads(['run', 'a task', '--threads', '0'])).toBeNull();
    expect(requestedThreads(['run', 'a task', '--threads', 'many'])).toBeNull();
    expect(requestedThreads(['run', 'a task', '--threads'])).toBeNull();
  });
});
