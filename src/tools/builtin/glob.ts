import type Picomatch from 'picomatch';

let picomatch: Promise<typeof Picomatch> | undefined;

/**
 * The glob compiler, with picomatch loaded on first use: every agent thread
 * imports the built-in tools, and picomatch (six CommonJS files) is only
 * needed when an agent passes `glob` to search_files.
 *
 * The compiler turns a file glob into a RegExp over `/`-separated relative
 * paths, with picomatch's rules: `*` within one segment, `**` across
 * segments, `?`, `{a,b}`, `[...]` and `[!...]`, `(a|b)` groups (escape a
 * literal paren as `\(`); dotfiles match too (an agent searching a
 * workspace means them). A glob without `/` is matched against the file name
 * alone by the caller. It throws on a glob picomatch refuses.
 *
 * @example
 * const globToRegExp = await loadGlobToRegExp();
 * globToRegExp('**\/*.{ts,md}').test('src/a.ts'); // true
 */
export async function loadGlobToRegExp(): Promise<(glob: string) => RegExp> {
  picomatch ??= import('picomatch').then((loaded) => loaded.default);
  const compiler = await picomatch;
  // posix: POSIX bracket rules (`[!ab]` negates); noextglob: `+(…)` and the
  // like are not patterns an agent means; strictBrackets: an unclosed `[` is an
  // error the agent can fix rather than a pattern that silently matches nothing.
  return (glob) =>
    compiler.makeRe(glob, { dot: true, posix: true, noextglob: true, strictBrackets: true });
}
