/**
 * Compiles a file glob to a RegExp over `/`-separated relative paths:
 * `*` matches within one segment, `**` across segments, `?` one character,
 * `{a,b}` alternatives and `[...]` a character class. Everything else is
 * literal. A glob without `/` matches the file name alone.
 *
 * @example
 * globToRegExp('**\/*.{ts,md}').test('src/a.ts'); // true
 */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  let braces = 0;
  for (let index = 0; index < glob.length; index += 1) {
    const char = glob.charAt(index);
    if (char === '*') {
      if (glob.charAt(index + 1) === '*') {
        const slash = glob.charAt(index + 2) === '/';
        source += slash ? '(?:.*/)?' : '.*';
        index += slash ? 2 : 1;
      } else {
        source += '[^/]*';
      }
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '{') {
      braces += 1;
      source += '(?:';
    } else if (char === '}' && braces > 0) {
      braces -= 1;
      source += ')';
    } else if (char === ',' && braces > 0) {
      source += '|';
    } else if (char === '[') {
      const close = glob.indexOf(']', index + 2);
      if (close === -1) {
        source += '\\[';
      } else {
        const body = glob
          .slice(index + 1, close)
          .replace(/^!/, '^')
          .replaceAll('\\', '\\\\');
        source += `[${body}]`;
        index = close;
      }
    } else {
      source += char.replace(/[.+^${}()|\\\]]/g, '\\$&');
    }
  }
  source += ')'.repeat(braces);
  return new RegExp(`^${source}$`);
}

/** True when `relativePath` matches `glob` (the file name alone when the glob has no `/`). */
export function matchesGlob(pattern: RegExp, glob: string, relativePath: string): boolean {
  const subject = glob.includes('/')
    ? relativePath
    : (relativePath.split('/').pop() ?? relativePath);
  return pattern.test(subject);
}
