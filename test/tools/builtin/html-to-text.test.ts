import { describe, expect, it } from 'vitest';
import { decodeEntities, htmlToText } from '../../../src/tools/builtin/html-to-text.js';

describe('htmlToText', () => {
  it('keeps headings, paragraphs, list items and links, and drops scripts and styles', () => {
    const html = `<!doctype html><html><head><title>The  Page</title><style>p{color:red}</style>
      <script>alert("x <p>")</script></head><body><h1>Hello</h1><p>First   para
      with <b>bold</b>.</p><!-- a comment --><ul><li>one</li><li>two</li></ul>
      <p>See <a href="/docs?a=1&amp;b=2">the docs</a> or <a href="#top">top</a>.</p></body></html>`;
    expect(htmlToText(html, 'https://example.com/x')).toBe(
      'Title: The Page\n\n# Hello\n\nFirst para with bold.\n\n- one\n- two\n\nSee the docs (https://example.com/docs?a=1&b=2) or top.',
    );
  });

  it('keeps whitespace inside pre', () => {
    expect(htmlToText('<pre>a\n    b</pre>')).toBe('a\n    b');
  });

  it('survives unclosed tags, comments and scripts', () => {
    expect(htmlToText('<p>ok<script>never closed')).toBe('ok');
    expect(htmlToText('<p>ok<!-- never closed')).toBe('ok');
    expect(htmlToText('a < b and <p')).toBe('a < b and <p');
  });

  it('handles hostile markup in linear time', () => {
    const hostile = `${'<'.repeat(200_000)}${'<script>'.repeat(50_000)}${'<a href='.repeat(50_000)}${' '.repeat(200_000)}x`;
    expect(typeof htmlToText(`<pre>${hostile}</pre>`)).toBe('string');
  });
});

describe('decodeEntities', () => {
  it('decodes named, decimal and hex references and leaves unknown ones', () => {
    expect(decodeEntities('&lt;a&gt; &amp; &#169; &#x1F600; &mdash; &bogus;')).toBe(
      '<a> & © 😀 — &bogus;',
    );
  });
});
