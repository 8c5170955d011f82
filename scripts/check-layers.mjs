#!/usr/bin/env node
// The import-layer check `npm test` runs (docs/ARCHITECTURE.md, "Layers").
// It fails on any import that points up the layer order, on any cycle
// between folders (type-only imports count: a type cycle is still a cycle
// in the design), and on thread-side code importing main-side code.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

// `--root <dir>` checks another tree (the test of this script uses it).
const rootFlag = process.argv.indexOf('--root');
const root =
  rootFlag > 0 ? process.argv[rootFlag + 1] : join(dirname(fileURLToPath(import.meta.url)), '..');

/** Lowest first: a file may import its own layer and the layers before it. */
const LAYERS = [
  'src/errors.ts',
  'src/util',
  'src/model',
  'src/events',
  'src/tools',
  'src/mcp',
  'src/agent',
  'src/roles',
  'src/runtime',
  'src/job',
  'src/observe',
  'src/render',
  'src/cli',
  'src/index.ts',
  'src/entries',
  'workers',
];

/**
 * Folders with a narrower rule than their layer's: the thread side of the
 * runtime runs inside a worker (or, later, on a remote node), so it sees only
 * the wire protocol and the layers below the runtime, never main-side code.
 */
const NARROW = {
  'src/runtime/host': ['src/runtime/host', 'src/runtime/wire'],
  'src/runtime/wire': ['src/runtime/wire'],
  workers: ['workers', 'src/runtime/host', 'src/runtime/wire'],
};

function layerOf(file) {
  const index = LAYERS.findIndex((layer) => file === layer || file.startsWith(`${layer}/`));
  return index;
}

function listFiles(dir) {
  const out = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path));
    else if (/\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file) {
  const text = readFileSync(join(root, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  const out = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2];
    if (spec === undefined || !spec.startsWith('.')) continue;
    out.push(posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.js$/, '.ts'));
  }
  return out;
}

// The nodes of the cycle check: each layer folder (with its subfolders, which
// it aggregates), each corridor of the runtime (its subfolders are walls of
// their own), and each file directly under src/.
function nodeOf(file) {
  const parts = file.split('/');
  if (parts[0] !== 'src') return parts[0];
  if (parts.length === 2) return file;
  if (parts[1] === 'runtime' && parts.length > 3) return parts.slice(0, 3).join('/');
  return parts.slice(0, 2).join('/');
}

const files = [...listFiles('src'), ...listFiles('workers')];
const problems = [];
const folderEdges = new Map();

for (const file of files) {
  const from = layerOf(file);
  if (from < 0)
    problems.push(
      `${file}: not in any layer; add its folder to LAYERS in scripts/check-layers.mjs`,
    );
  const narrow = Object.entries(NARROW).find(([folder]) => file.startsWith(`${folder}/`));
  for (const target of importsOf(file)) {
    const to = layerOf(target);
    if (to > from) {
      problems.push(`${file} imports ${target}: ${LAYERS[to]} sits above ${LAYERS[from]}`);
    }
    if (
      narrow !== undefined &&
      to === layerOf(narrow[0]) &&
      !narrow[1].some((ok) => target.startsWith(`${ok}/`))
    ) {
      problems.push(
        `${file} imports ${target}: ${narrow[0]} may import only ${narrow[1].join(', ')} and the layers below`,
      );
    }
    const a = nodeOf(file);
    const b = nodeOf(target);
    if (a !== b) {
      if (!folderEdges.has(a)) folderEdges.set(a, new Map());
      if (!folderEdges.get(a).has(b)) folderEdges.get(a).set(b, `${file} -> ${target}`);
    }
  }
}

// Cycles between folders: Tarjan's strongly connected components.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
function visit(node) {
  index.set(node, counter);
  low.set(node, counter);
  counter += 1;
  stack.push(node);
  onStack.add(node);
  for (const next of folderEdges.get(node)?.keys() ?? []) {
    if (!index.has(next)) {
      visit(next);
      low.set(node, Math.min(low.get(node), low.get(next)));
    } else if (onStack.has(next)) low.set(node, Math.min(low.get(node), index.get(next)));
  }
  if (low.get(node) === index.get(node)) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) {
      const inside = new Set(component);
      const edges = component.flatMap((folder) =>
        [...(folderEdges.get(folder) ?? new Map())]
          .filter(([to]) => inside.has(to))
          .map(([, why]) => `    ${why}`),
      );
      problems.push(
        `folders import each other: ${component.sort().join(', ')}\n${edges.join('\n')}`,
      );
    }
  }
}
for (const node of folderEdges.keys()) if (!index.has(node)) visit(node);

if (problems.length > 0) {
  console.error(
    `Import layers: ${problems.length} problem${problems.length === 1 ? '' : 's'} (order: ${LAYERS.join(' → ')})`,
  );
  for (const problem of problems) console.error(`- ${problem}`);
  process.exit(1);
}
console.log(
  `Import layers: ${files.length} files, no import against the order, no cycle between folders.`,
);
