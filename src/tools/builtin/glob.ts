import picomatch from 'picomatch';

/**
 * Compiles a file glob to a RegExp over `/`-separated relative paths, with
 * picomatch's rules: `*` within one segment, `**` across segments, `?`,
 * `{a,b}`, `[...]` and `[!...]`, `(a|b)` groups (escape a literal paren as
 * `\(`); dotfiles match too (an agent searching a
 * workspace means them). A glob without `/` is matched against the file name
 * alone by the caller.
 *
 * @example
 * globToRegExp('**\/*.{ts,md}').test('src/a.ts'); // true
 */
export function globToRegExp(glob: string): RegExp {
  // posix: POSIX bracket rules (`[!ab]` negates); noextglob: `+(…)` and the
  // like are not patterns an agent means; strictBrackets: an unclosed `[` is an
  // error the agent can fix rather than a pattern that silently matches nothing.
  return picomatch.makeRe(glob, { dot: true, posix: true, noextglob: true, strictBrackets: true });
}
