import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasPython, ptyEnv, runInPty } from '../helpers/pty.js';

const ESC = String.fromCharCode(27);

// Issue 13, problem 8 (the parts done): NO_COLOR takes only the colour away,
// and a --base-url without a scheme is a usage error before anything runs.
describe.runIf(hasPython())('flags on a terminal (pty)', () => {
  it('keeps the live view under NO_COLOR, without a single colour escape', async () => {
    const out = mkdtempSync(join(tmpdir(), 'troupe-pty-nocolor-'));
    const session = runInPty(['demo', '--out', out], {
      cols: 100,
      rows: 30,
      env: ptyEnv({ NO_COLOR: '1' }),
    });
    expect(await session.exited).toBe(0);
    // The live view: a frame redrawn in place (cursor hidden, moved up), not plain lines.
    expect(session.raw).toContain('\u001b[?25l');
    expect(session.raw).toMatch(new RegExp(`${ESC}\\[\\d+F`));
    expect(session.screen.transcript()).toContain('── recent ──');
    // No colour: no SGR sequence at all.
    expect(session.raw).not.toMatch(new RegExp(`${ESC}\\[[0-9;]*m`));
  }, 120_000);

  it('refuses a --base-url without a scheme at once, with the URL to write instead', async () => {
    const session = runInPty(
      ['run', 'a task', '--provider', 'openai', '--base-url', 'localhost:11434'],
      { cols: 200, rows: 30, env: ptyEnv() },
    );
    expect(await session.exited).toBe(2);
    expect(session.screen.transcript().replace(/\s+/g, ' ')).toContain(
      '--base-url localhost:11434 is not an http(s) URL. Write it whole, e.g. --base-url http://localhost:11434/v1',
    );
  }, 60_000);
});
