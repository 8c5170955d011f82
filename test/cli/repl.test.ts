import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Repl } from '../../src/cli/repl.js';

function terminal(history?: readonly string[]) {
  const input = new PassThrough() as PassThrough & { isTTY?: boolean; setRawMode?: () => void };
  input.isTTY = true;
  input.setRawMode = () => undefined;
  const output = new PassThrough();
  let shown = '';
  output.on('data', (chunk: Buffer) => {
    shown += chunk.toString('utf8');
  });
  let historyFile: string | undefined;
  if (history !== undefined) {
    historyFile = join(mkdtempSync(join(tmpdir(), 'troupe-repl-')), 'chat_history');
    // Oldest first, as the file keeps it.
    writeFileSync(historyFile, `${history.join('\n')}\n`);
  }
  const repl = new Repl({ input, output, historyFile });
  return { input, repl, shown: () => shown };
}

// Runs the REPL over `keys` (each write one read) and returns the lines it took and what it showed.
async function linesOf(history: readonly string[], keys: ReadonlyArray<string | Buffer>) {
  const { input, repl, shown } = terminal(history);
  const lines: string[] = [];
  const done = repl.run({
    turn: async (line) => {
      lines.push(line);
    },
    command: () => 'exit',
    status: () => '',
  });
  for (const key of keys) {
    input.write(key);
    await new Promise((resolve) => setImmediate(resolve));
  }
  input.write('/exit\r');
  await done;
  return { lines, shown: shown() };
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
    const left = '\u001b[D';
    const accented = Buffer.from('café\r', 'utf8');
    const { lines } = await linesOf(
      [],
      [
        // Typed faster than read: Node's readline took such a read for a paste and appended "e" at the end.
        `hllo${left}${left}${left}e\r`,
        'wrld\u001b[',
        `D${left}${left}o\u001b[C\u001b[C\u001b[C!\r`,
        // A character split across reads stays one character.
        accented.subarray(0, 4),
        accented.subarray(4),
      ],
    );
    expect(lines).toEqual(['hello', 'world!', 'café']);
  });

  it('inserts pasted text at the cursor, whole, and a read cut inside an escape sequence still ends it', async () => {
    const left = '\u001b[D';
    const long = 'lorem ipsum dolor sit amet '.repeat(800).trim();
    const { lines } = await linesOf(
      [],
      [
        // A paste into the middle of a line.
        'hello d',
        left,
        'worl',
        '\r',
        // A long paste (21 KB) in one read.
        `${long}\r`,
        // Ctrl-Left cut after its parameters' start, the rest read with text behind it.
        'ab',
        '\u001b[1',
        ';5Dxy\r',
      ],
    );
    expect(lines).toEqual(['hello world', long, 'xyab']);
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

  describe('Ctrl-R searches the history, newest first', () => {
    const history = ['read the notes', 'compare the notes', 'summarise the report', 'list files'];
    const ctrlR = '\u0012';

    it('narrows as you type, and Enter runs the line found', async () => {
      const { lines, shown } = await linesOf(history, [ctrlR, 'n', 'o', 't', '\r']);
      expect(lines).toEqual(['compare the notes']);
      expect(shown).toContain("(reverse-i-search)`not': compare the notes");
    });

    it('goes to older matches with Ctrl-R again, and Backspace widens the search', async () => {
      const older = await linesOf(history, [ctrlR, 'notes', ctrlR, '\r']);
      expect(older.lines).toEqual(['read the notes']);
      // "rep" finds "summarise the report"; Backspace leaves "re", whose newest match is that line too.
      const widened = await linesOf(history, [ctrlR, 'r', 'e', 'p', '\u007f', '\r']);
      expect(widened.lines).toEqual(['summarise the report']);
    });

    it('Ctrl-G gives the typed line back; an arrow keeps the line found, to edit', async () => {
      const cancelled = await linesOf(history, ['draft', ctrlR, 'read', '\u0007', ' two', '\r']);
      expect(cancelled.lines).toEqual(['draft two']);
      const edited = await linesOf(history, [
        ctrlR,
        'list',
        '\u001b[D',
        '\u001b[C',
        ' again',
        '\r',
      ]);
      expect(edited.lines).toEqual(['list files again']);
    });

    it('says when nothing matches, and keeps what it had found', async () => {
      const { lines, shown } = await linesOf(history, [ctrlR, 'sum', 'z', '\r']);
      expect(shown).toContain("(failed reverse-i-search)`sumz': summarise the report");
      expect(lines).toEqual(['summarise the report']);
    });

    it('Ctrl-R at once looks for the last search again', async () => {
      const { lines } = await linesOf(history, [ctrlR, 'notes', '\r', ctrlR, ctrlR, ctrlR, '\r']);
      // "compare the notes" ran first and is now the newest entry: the repeat goes past it.
      expect(lines).toEqual(['compare the notes', 'read the notes']);
    });

    it('a Ctrl-C in a search ends the search, not the chat', async () => {
      const { lines } = await linesOf(history, ['x', ctrlR, 'list', '\u0003', 'y', '\r']);
      expect(lines).toEqual(['xy']);
    });
  });
});
