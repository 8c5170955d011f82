import { describe, expect, it } from 'vitest';
import { answerLines, finalAnswerBlock } from '../../src/render/answer.js';
import { createPalette, displayWidth } from '../../src/render/terminal.js';

const plain = createPalette(false);

describe('answerLines', () => {
  const answer = [
    '# Findings',
    '',
    `A paragraph that is long enough to wrap: ${'word '.repeat(30).trim()}.`,
    '',
    `- a list item that also wraps over the width of the terminal, ${'again '.repeat(12).trim()}`,
    '> a quoted line long enough to wrap over the width of this narrow terminal window here',
    '',
    '```',
    `const code = "${'x'.repeat(120)}";`,
    '```',
    'https://example.com/a/very/long/url/that/must/never/be/cut/or/broken/across/lines/at/all/ok',
  ].join('\n');

  it('keeps every word and wraps to the width with hanging indents', () => {
    const lines = answerLines(answer, { width: 60, palette: plain });
    // Every word, in order (a wrapped quote repeats its marker).
    const words = (text: string): string => text.replace(/>/g, ' ').replace(/\s+/g, ' ');
    expect(words(lines.join(' '))).toBe(words(answer));
    const outsideCode = lines.filter(
      (line) => !line.includes('x'.repeat(50)) && !line.startsWith('https'),
    );
    expect(Math.max(...outsideCode.map(displayWidth))).toBeLessThanOrEqual(60);
    const item = lines.findIndex((line) => line.startsWith('- a list item'));
    expect(lines[item + 1]).toMatch(/^ {2}\S/);
    const quote = lines.findIndex((line) => line.startsWith('> a quoted'));
    expect(lines[quote + 1]).toMatch(/^> \S/);
  });

  it('never wraps code blocks or cuts a long word', () => {
    const lines = answerLines(answer, { width: 60, palette: plain });
    expect(lines).toContain(`const code = "${'x'.repeat(120)}";`);
    expect(lines).toContain(
      'https://example.com/a/very/long/url/that/must/never/be/cut/or/broken/across/lines/at/all/ok',
    );
  });

  it('leaves lines alone without a width (a pipe or a file)', () => {
    expect(answerLines(answer, { width: undefined, palette: plain })).toEqual(answer.split('\n'));
  });

  it('prints nothing when there is no answer', () => {
    expect(finalAnswerBlock(undefined, 80, plain)).toEqual([]);
    expect(finalAnswerBlock('  \n', 80, plain)).toEqual([]);
    expect(finalAnswerBlock('Done.', 80, plain)).toEqual(['', '── answer ──', 'Done.']);
  });
});
