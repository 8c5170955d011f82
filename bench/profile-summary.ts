import { readdirSync, readFileSync, statSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the time goes, per layer, from V8 CPU profiles (`node --cpu-prof
 * --cpu-prof-dir <dir> …` writes one per thread):
 *
 *   node dist/bench/profile-summary.js <dir or .cpuprofile files> [--from <ms>] [--until <ms>]
 *     [--between <µs>,<µs>] [--top <k>]
 *
 * Each sample's own (self) time goes to the layer of the function it was in:
 * troupe's src folder (`troupe:runtime`, `troupe:agent` …), a package
 * (`zod`, `piscina`), Node's own JavaScript (`node`), and V8's pseudo-frames
 * (`(garbage collector)`, `(program)`: compiling, bootstrap and native work
 * not attributed to JavaScript, `(idle)`). `--until` keeps only the first
 * milliseconds of each profile (e.g. the start until the first model call),
 * `--from` drops the first ones (e.g. a process's start and its cold run);
 * `--between <start>,<end>` keeps a window of the monotonic clock in µs
 * (`process.hrtime.bigint() / 1000n`), the same one in every process.
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function layerOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : `native ${functionName}`;
  if (url.startsWith('node:')) return 'node';
  return layerOfFile(url.includes('/dist/bundle/') ? (sourceInBundle(frame) ?? url) : url);
}

function layerOfFile(url: string): string {
  const troupe = /\/dist\/(src|workers|bench)\/(?:([a-z-]+)\/)?/.exec(url);
  if (troupe !== null && !url.includes('/node_modules/'))
    return `troupe:${troupe[1] === 'src' ? (troupe[2] ?? 'root') : troupe[1]}`;
  const nodeModules = url.lastIndexOf('/node_modules/');
  if (nodeModules !== -1) {
    const parts = url.slice(nodeModules + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') === true ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  return 'other';
}

// The binary and the pool threads run bundles (dist/bundle, scripts/bundle.mjs): a frame there is
// attributed to the module it came from through the bundle's source map (dist/src/… or zod's file).
const bundleMaps = new Map<string, SourceMap | undefined>();

function sourceInBundle(frame: ProfileNode['callFrame']): string | undefined {
  let map = bundleMaps.get(frame.url);
  if (!bundleMaps.has(frame.url)) {
    try {
      const file = fileURLToPath(frame.url);
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as SourceMapPayload);
    } catch {
      map = undefined;
    }
    bundleMaps.set(frame.url, map);
  }
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry === undefined || !('originalSource' in entry)) return undefined;
  return new URL(entry.originalSource, frame.url).href;
}

function summarize(file: string, fromMs: number, untilMs: number, top: number): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  // A window on the monotonic clock (µs, as process.hrtime.bigint() / 1000n gives) is the same in
  // every process of the machine: the cluster's processes measured over one run.
  if (between !== undefined) {
    fromMs = (between[0] - profile.startTime) / 1000;
    untilMs = (between[1] - profile.startTime) / 1000;
  }
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const layers = new Map<string, number>();
  const functions = new Map<string, number>();
  let elapsedUs = 0;
  let totalUs = 0;
  for (let index = 0; index < profile.samples.length; index += 1) {
    const deltaUs = profile.timeDeltas[index] ?? 0;
    elapsedUs += deltaUs;
    if (elapsedUs > untilMs * 1000) break;
    if (elapsedUs < fromMs * 1000) continue;
    const node = byId.get(profile.samples[index] ?? -1);
    if (node === undefined) continue;
    const layer = layerOf(node.callFrame);
    layers.set(layer, (layers.get(layer) ?? 0) + deltaUs);
    const name = `${node.callFrame.functionName || '(anonymous)'} ${basename(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + deltaUs);
    totalUs += deltaUs;
  }
  const idleUs = layers.get('(idle)') ?? 0;
  console.log(
    `\n${basename(file)}: ${(totalUs / 1000).toFixed(0)} ms sampled, ${((totalUs - idleUs) / 1000).toFixed(0)} ms busy`,
  );
  const rows = [...layers.entries()].sort((a, b) => b[1] - a[1]);
  for (const [layer, us] of rows)
    console.log(
      `  ${layer.padEnd(28)} ${(us / 1000).toFixed(1).padStart(8)} ms  ${((100 * us) / Math.max(1, totalUs - idleUs)).toFixed(1).padStart(5)}% of busy`,
    );
  console.log('  top functions (self):');
  for (const [name, us] of [...functions.entries()].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`    ${(us / 1000).toFixed(1).padStart(8)} ms  ${name}`);
}

const argValue = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(name);
  return index === -1 ? fallback : Number(process.argv[index + 1]);
};
const fromMs = argValue('--from', 0);
const untilMs = argValue('--until', Number.POSITIVE_INFINITY);
const top = argValue('--top', 10);
const betweenIndex = process.argv.indexOf('--between');
const between =
  betweenIndex === -1
    ? undefined
    : ((process.argv[betweenIndex + 1] ?? '').split(',').map(Number) as [number, number]);
const inputs = process.argv
  .slice(2)
  .filter((arg, index, all) => !arg.startsWith('--') && !all[index - 1]?.startsWith('--'));
if (inputs.length === 0)
  throw new Error(
    'name a folder of .cpuprofile files or the files: node dist/bench/profile-summary.js /tmp/prof',
  );
for (const input of inputs) {
  const files = statSync(input).isDirectory()
    ? readdirSync(input)
        .filter((name) => name.endsWith('.cpuprofile'))
        .sort()
        .map((name) => join(input, name))
    : [input];
  for (const file of files) summarize(file, fromMs, untilMs, top);
}
