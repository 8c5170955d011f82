/**
 * The file the tool pool's threads load: CommonJS on purpose, so piscina's
 * `require()` never meets an ES module it is also importing (see
 * agent-entry.cts). The one `import()` of the ES-module entry, the bundle of
 * tool-worker.ts (dist/bundle, see agent-entry.cts), is made here.
 */
// biome-ignore lint/suspicious/noExplicitAny: the task is checked by the entry it is handed to.
type HostTools = (task: any) => Promise<void>;
let entry: Promise<HostTools> | undefined;
// A variable: tsc resolves literal specifiers against workers/, where no bundle is.
const BUNDLE = '../bundle/tool-worker.js';

module.exports = function hostTools(task: unknown): Promise<void> {
  entry ??= import(BUNDLE).then((loaded: { default: HostTools }) => loaded.default);
  return entry.then((run) => run(task));
};
