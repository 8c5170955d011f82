import stringWidth from 'string-width';
import { describe, expect, it } from 'vitest';
import {
  agentColour,
  createPalette,
  cutToWidth,
  displayWidth,
  FrameWriter,
  stripAnsi,
  supportsColor,
} from '../../src/render/terminal.js';
import { VirtualScreen } from '../helpers/screen.js';
import { FakeTerminal } from './fake-terminal.js';

// The colour code a line starts with (ESC [ n m).
const ESCAPE_CODE = new RegExp(`^${String.fromCharCode(27)}\\[(\\d+)m`);

describe('displayWidth', () => {
  it('counts emoji as two columns and ignores ANSI', () => {
    expect(displayWidth('ab')).toBe(2);
    expect(displayWidth('✅ ok')).toBe(5);
    expect(displayWidth(createPalette(true).red('red'))).toBe(3);
  });

  it('agrees with string-width on text mixing ASCII, ANSI, symbols, CJK, emoji and combining marks', () => {
    // The plain-text path sums characters; anything that may join its neighbours goes to string-width.
    const p = createPalette(true);
    const pieces = [
      'a',
      'Z',
      '7',
      ' ',
      '~',
      '·',
      '…',
      '›',
      '↑',
      '↓',
      'Σ',
      'é',
      '×',
      '─',
      '├',
      '└',
      '│',
      '█',
      '░',
      '◌',
      '▸',
      '⊘',
      '✔',
      '✖',
      '⏱',
      '⠋',
      '⠏',
      '©',
      '®',
      '\u00ad',
      '↔',
      '◾',
      '漢',
      '字',
      '😀',
      '👍🏽',
      '👨‍👩‍👧',
      '\u0301',
      '\ufe0f',
      '\u200d',
      '\u200b',
      '\t',
      '\n',
      '\u0007',
      p.red('x'),
      p.dim('sk'),
      '\u001b[0m',
      '\u009b31m',
    ];
    let seed = 12345;
    const next = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let round = 0; round < 3000; round += 1) {
      let text = '';
      const length = Math.floor(next() * 12);
      for (let index = 0; index < length; index += 1)
        text += pieces[Math.floor(next() * pieces.length)];
      expect(displayWidth(text), JSON.stringify(text)).toBe(stringWidth(text));
    }
  });
});

describe('cutToWidth', () => {
  it('cuts to the width with an ellipsis and resets styles when the text is coloured', () => {
    expect(cutToWidth('abcdef', 4)).toBe('abc…');
    const cut = cutToWidth(createPalette(true).green('abcdef'), 4);
    expect(stripAnsi(cut)).toBe('abc…');
    expect(cut.endsWith('\u001b[0m')).toBe(true);
    expect(cutToWidth('short', 10)).toBe('short');
  });
});

describe('supportsColor', () => {
  it('is off when NO_COLOR is set or the output is not a TTY', () => {
    const tty = new FakeTerminal({ isTTY: true });
    expect(supportsColor(tty, {})).toBe(true);
    expect(supportsColor(tty, { NO_COLOR: '1' })).toBe(false);
    expect(supportsColor(new FakeTerminal(), {})).toBe(false);
  });

  it('colours a pipe when FORCE_COLOR asks, but never against NO_COLOR', () => {
    const pipe = new FakeTerminal();
    expect(supportsColor(pipe, { FORCE_COLOR: '1' })).toBe(true);
    expect(supportsColor(pipe, { FORCE_COLOR: '0' })).toBe(false);
    expect(supportsColor(pipe, { FORCE_COLOR: 'false' })).toBe(false);
    expect(supportsColor(pipe, { FORCE_COLOR: '1', NO_COLOR: '1' })).toBe(false);
    expect(
      supportsColor(new FakeTerminal({ isTTY: true }), { TERM: 'dumb', FORCE_COLOR: '3' }),
    ).toBe(true);
  });
});

describe('agentColour', () => {
  it('gives each id one colour, the same every time, and spreads ids over several', () => {
    const colourOf = (id: string): string | undefined =>
      ESCAPE_CODE.exec(agentColour(id, id, true))?.[1];
    expect(colourOf('researcher-1')).toBe(colourOf('researcher-1'));
    const ids = Array.from({ length: 12 }, (_, index) => `researcher-${index + 1}`);
    expect(new Set(ids.map(colourOf)).size).toBeGreaterThanOrEqual(5);
    // Red is for failures, never an agent's colour.
    expect(ids.map(colourOf)).not.toContain('31');
    expect(stripAnsi(agentColour('a', 'a   ', true))).toBe('a   ');
    expect(agentColour('a', 'a   ', false)).toBe('a   ');
  });
});

describe('FrameWriter', () => {
  it('moves the cursor back over the previous frame when it redraws', () => {
    const output = new FakeTerminal({ isTTY: true, columns: 20 });
    const frames = new FrameWriter(output);
    frames.render(['one', 'two']);
    frames.render(['three']);
    frames.done();
    expect(output.writes[0]).toBe(
      '\u001b[?2026h\u001b[?25lone\u001b[K\ntwo\u001b[K\n\u001b[J\u001b[?2026l',
    );
    expect(output.writes[1]).toBe('\u001b[?2026h\u001b[2Fthree\u001b[K\n\u001b[J\u001b[?2026l');
    expect(output.writes[2]).toBe('\u001b[?25h');
  });

  it('draws each frame as one synchronized update, so a terminal never shows half of one', () => {
    const output = new FakeTerminal({ isTTY: true, columns: 20 });
    const frames = new FrameWriter(output);
    frames.render(['header one', 'footer one']);
    frames.render(['header two', 'footer two']);
    const screen = new VirtualScreen(20, 5);
    // A pty turns each newline into CR LF.
    const tty = (text: string | undefined): string => (text ?? '').replaceAll('\n', '\r\n');
    screen.write(tty(output.writes[0]));
    // The second frame arrives in two reads, cut between its header and its footer.
    const second = tty(output.writes[1]);
    const cut = second.indexOf('footer two');
    screen.write(second.slice(0, cut));
    expect(screen.updating).toBe(true);
    expect(screen.lines().slice(0, 2)).toEqual(['header one', 'footer one']);
    screen.write(second.slice(cut));
    expect(screen.updating).toBe(false);
    expect(screen.lines().slice(0, 2)).toEqual(['header two', 'footer two']);
  });

  it('cuts lines so that none wraps', () => {
    const output = new FakeTerminal({ isTTY: true, columns: 10 });
    new FrameWriter(output).render(['x'.repeat(50)]);
    expect(stripAnsi(output.text).split('\n')[0]).toBe(`${'x'.repeat(8)}…`);
  });
});
