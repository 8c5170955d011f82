#!/usr/bin/env node
// Writes dist/bundle/: the `troupe` binary's entry and the two worker
// entries, each with the troupe modules and zod it loads folded into a few
// files (dist/bundle/<entry>.js and dist/bundle/chunks/<entry>/). `npm run build` runs it after tsc.
//
// Why: Node 20 has no compile cache for ES modules, and loading is paid per
// file. A `troupe run` loaded about 255 modules on the main thread (95 of
// them zod's, 45 of those its locales) and 183 on each agent thread before
// the first model request; the bundles load the same code from a handful of
// files, and zod's locales are left out (tree-shaken: troupe uses none).
//
// What stays outside: every package but zod (the SDKs, piscina, commander,
// the NATS client…) is imported from node_modules as before, so a user's
// code and troupe's share them. The library's own entry points (dist/src)
// are not bundled: library users import modules as before. Code in a bundle
// may meet objects made by another copy of troupe (a user's --roles or
// --tools module imports the package): every check on such objects is
// structural (isRole, isTool, isTroupeError), never `instanceof`.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

// Paths, not URL pathnames: a checkout under a folder with a space would be percent-encoded.
const root = fileURLToPath(new URL('../', import.meta.url));
const out = fileURLToPath(new URL('../dist/bundle/', import.meta.url));
rmSync(out, { recursive: true, force: true });

/** Bare package specifiers stay imports, except zod's; relative ones are bundled. */
function external(id) {
  if (id.startsWith('node:')) return true;
  if (id.startsWith('.') || id.startsWith('/') || id.startsWith('\0')) return false;
  return !(id === 'zod' || id.startsWith('zod/'));
}

// One build per entry, each with chunks of its own (only for what it imports
// lazily): a thread loads its own copy of every module anyway, so chunks
// shared between the entries saved nothing at run time and made an agent
// thread load 23 files instead of 6.
const entries = {
  cli: 'dist/src/cli/main.js',
  'agent-worker': 'dist/workers/agent-worker.js',
  'tool-worker': 'dist/workers/tool-worker.js',
};
for (const [name, input] of Object.entries(entries)) {
  await build({
    cwd: root,
    input: { [name]: input },
    platform: 'node',
    external,
    // Our own modules have no side effects on import, as package.json says; zod's
    // own package.json lists the files that have some.
    treeshake: true,
    output: {
      dir: out,
      format: 'esm',
      entryFileNames: '[name].js',
      chunkFileNames: `chunks/${name}/[name]-[hash].js`,
      sourcemap: true,
    },
    logLevel: 'warn',
  });
}
