import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Repl } from '../../src/cli/repl.js';

function terminal() {
  const input = new PassThrough() as PassThrough & { isTTY?: boolean; setRawMode?: () => void };
  input.isTTY = true;
  input.setRawMode = () => undefined;
  const output = new PassThrough();
  let shown = '';
  output.on('data', (chunk: Buffer) => {
    shown += chunk.toString('utf8');
  });
  const repl = new Repl({ input, output, historyFile: undefined });
  return { input, repl, shown: () => shown };
}

describe('Repl', () => {
  it('cancels the turn when Enter and Ctrl-C arrive in one read', async () => {
    const { input, repl, shown } = terminal();
    const signals: AbortSignal[] = [];
    const done = repl.run({
      turn: async (_line, signal) => {
        // The Ctrl-C read with the Enter must reach the turn it meant: aborted from the start.
        signals.push(signal);
      },
      command: () => 'exit',
      status: () => '',
    });
    input.write('please be slow\r\u0003');
    await new Promise((resolve) => setImmediate(resolve));
    input.write('/exit\r');
    await done;
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(true);
    expect(shown()).toContain('turn cancelled');
    expect(shown()).not.toContain('^C\n(Ctrl-C again');
  });

  it('edits at the cursor when several keys arrive in one read, or a read ends inside a key', async () => {
    const { input, repl } = terminal();
    const lines: string[] = [];
    const done = repl.run({
      turn: async (line) => {
        lines.push(line);
      },
      command: () => 'exit',
      status: () => '',
    });
    const left = '\u001b[D';
    // Typed faster than read: Node's readline took such a read for a paste and appended "e" at the end.
    input.write(`hllo${left}${left}${left}e\r`);
    input.write('wrld\u001b[');
    input.write(`D${left}${left}o\u001b[C\u001b[C\u001b[C!\r`);
    // A character split across reads stays one character.
    const accented = Buffer.from('café\r', 'utf8');
    input.write(accented.subarray(0, 4));
    input.write(accented.subarray(4));
    await new Promise((resolve) => setImmediate(resolve));
    input.write('/exit\r');
    await done;
    expect(lines).toEqual(['hello', 'world!', 'café']);
  });

  it('a Ctrl-C at an idle prompt warns, a second one leaves', async () => {
    const { input, repl, shown } = terminal();
    let turns = 0;
    const done = repl.run({
      turn: async () => {
        turns += 1;
      },
      command: () => undefined,
      status: () => '',
    });
    input.write('\u0003');
    await new Promise((resolve) => setImmediate(resolve));
    expect(shown()).toContain('(Ctrl-C again or Ctrl-D to leave)');
    input.write('\u0003');
    await done;
    expect(turns).toBe(0);
  });
});
