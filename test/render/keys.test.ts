import { describe, expect, it } from 'vitest';
import { parseKeys } from '../../src/render/keys.js';

describe('parseKeys', () => {
  it('names arrows, pages, home and end in both cursor-key modes', () => {
    expect(parseKeys('\u001b[A\u001bOB\u001b[C\u001b[D\u001b[5~\u001b[6~\u001b[H\u001bOF')).toEqual(
      ['up', 'down', 'right', 'left', 'pageUp', 'pageDown', 'home', 'end'],
    );
  });

  it('tells a lone Escape from a sequence and skips unknown sequences whole', () => {
    expect(parseKeys('\u001b')).toEqual(['escape']);
    expect(parseKeys('\u001b[15~q')).toEqual(['char:q']);
    expect(parseKeys('\r\u0003\tf')).toEqual(['enter', 'ctrlC', 'tab', 'char:f']);
  });
});
