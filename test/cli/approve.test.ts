import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createTerminalApprover } from '../../src/cli/approve.js';
import { fakeIo } from './io.js';

const request = { tool: 'shell', agentId: 'researcher-1', summary: 'run git status' };

function ttyInput(...lines: string[]): NodeJS.ReadableStream & { isTTY: boolean } {
  return Object.assign(Readable.from(lines.map((line) => `${line}\n`)), { isTTY: true });
}

describe('createTerminalApprover', () => {
  it('refuses and says why when there is no terminal to ask on', async () => {
    const io = fakeIo({ stdinLines: ['y'] });
    const approve = createTerminalApprover(io);
    expect(await approve(request)).toBe(false);
    expect(io.stderr.text).toContain(
      'refused (no terminal to ask on): researcher-1 shell: run git status',
    );
  });

  it('asks on stderr and approves on y, pausing the live view meanwhile', async () => {
    const io = { ...fakeIo(), stdin: ttyInput('y') };
    const calls: string[] = [];
    const approve = createTerminalApprover(io, {
      pause: () => calls.push('pause'),
      resume: () => calls.push('resume'),
    });
    expect(await approve(request)).toBe(true);
    expect(io.stderr.text).toContain('? researcher-1 wants to run shell: run git status');
    expect(calls).toEqual(['pause', 'resume']);
  });

  it('refuses on anything but y or yes', async () => {
    const io = { ...fakeIo(), stdin: ttyInput('sure') };
    expect(await createTerminalApprover(io)(request)).toBe(false);
  });
});
