/**
 * Reduces HTML to readable text in one linear pass (no regex over the whole
 * document, so hostile markup cannot make it backtrack): scripts, styles and
 * other non-content elements dropped, block elements on their own lines,
 * headings marked with `#`, list items with `-`, links followed by their
 * URL, entities decoded, whitespace collapsed except inside `<pre>`.
 */

// Elements whose content is never text for a reader.
const SKIPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'iframe',
  'object',
  'canvas',
  'math',
]);
const BLOCKS = new Set([
  'p',
  'div',
  'br',
  'hr',
  'section',
  'article',
  'header',
  'footer',
  'main',
  'nav',
  'aside',
  'ul',
  'ol',
  'dl',
  'dt',
  'dd',
  'table',
  'tr',
  'blockquote',
  'pre',
  'form',
  'fieldset',
  'figure',
  'figcaption',
  'address',
  'details',
  'summary',
  'body',
  'html',
  'title',
]);
const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  copy: '©',
  reg: '®',
  trade: '™',
  laquo: '«',
  raquo: '»',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  middot: '·',
  bull: '•',
  times: '×',
  euro: '€',
};
const TAG_NAME = /^<\/?([a-zA-Z][a-zA-Z0-9-]*)/;
const HREF = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i;

/** Decodes the HTML character references a page commonly uses. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#\d{1,7}|#x[0-9a-f]{1,6}|[a-z]{2,8});/gi, (whole, body: string) => {
    if (body.startsWith('#')) {
      const code =
        body[1] === 'x' || body[1] === 'X'
          ? Number.parseInt(body.slice(2), 16)
          : Number(body.slice(1));
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[body.toLowerCase()] ?? whole;
  });
}

/** Readable text of an HTML document; `baseUrl` makes relative links absolute. */
export function htmlToText(html: string, baseUrl?: string): string {
  const lower = html.toLowerCase();
  const out: string[] = [];
  let title = '';
  let inTitle = false;
  let preDepth = 0;
  let href: string | undefined;
  let index = 0;
  let nextClose = html.indexOf('>');
  while (index < html.length) {
    const open = html.indexOf('<', index);
    const textEnd = open === -1 ? html.length : open;
    if (textEnd > index) {
      const raw = decodeEntities(html.slice(index, textEnd));
      if (inTitle) title += raw;
      else out.push(preDepth > 0 ? raw : raw.replace(/\s+/g, ' '));
    }
    if (open === -1) break;
    if (lower.startsWith('<!--', open)) {
      const close = lower.indexOf('-->', open + 4);
      index = close === -1 ? html.length : close + 3;
      continue;
    }
    const name = TAG_NAME.exec(html.slice(open, open + 80))?.[1]?.toLowerCase();
    const declaration = /^<[!?]/.test(html.slice(open, open + 2));
    // The first ">" after an earlier "<" is also the first after this one when it lies ahead,
    // so many "<" without ">" do not rescan the rest of the document each time.
    if (nextClose !== -1 && nextClose < open) nextClose = html.indexOf('>', open);
    const close = nextClose;
    if ((name === undefined && !declaration) || close === -1) {
      // Not markup ("a < b", or a tag never closed): the "<" is text.
      if (inTitle) title += '<';
      else out.push('<');
      index = open + 1;
      continue;
    }
    const tag = html.slice(open, close + 1);
    index = close + 1;
    if (name === undefined) continue;
    const closing = tag.startsWith('</');
    if (!closing && SKIPPED.has(name)) {
      const end = lower.indexOf(`</${name}`, index);
      index =
        end === -1 ? html.length : Math.max(index, lower.indexOf('>', end) + 1 || html.length);
      continue;
    }
    if (name === 'title') inTitle = !closing;
    if (name === 'pre') preDepth = Math.max(0, preDepth + (closing ? -1 : 1));
    if (/^h[1-6]$/.test(name)) {
      out.push(closing ? '\n\n' : `\n\n${'#'.repeat(Number(name[1]))} `);
    } else if (name === 'li') {
      if (!closing) out.push('\n- ');
    } else if (name === 'td' || name === 'th') {
      if (closing) out.push(' | ');
    } else if (name === 'a') {
      if (closing && href !== undefined) out.push(` (${href})`);
      href = closing ? undefined : linkTarget(tag, baseUrl);
    } else if (BLOCKS.has(name)) {
      out.push('\n');
    }
  }
  const body = tidy(out.join(''));
  const heading = title.replace(/\s+/g, ' ').trim();
  return heading === '' ? body : `Title: ${heading}\n\n${body}`;
}

function linkTarget(tag: string, baseUrl: string | undefined): string | undefined {
  const match = HREF.exec(tag);
  const raw = decodeEntities(match?.[1] ?? match?.[2] ?? match?.[3] ?? '').trim();
  if (raw === '' || raw.startsWith('#')) return undefined;
  try {
    const url = new URL(raw, baseUrl);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

function tidy(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      // trimEnd, not a regex: a long run of spaces in <pre> must not backtrack.
      const trimmed = line.trimEnd();
      return trimmed.startsWith(' ') && !trimmed.startsWith('  ') ? trimmed.slice(1) : trimmed;
    })
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
