/**
 * The file the tool pool's threads load: CommonJS on purpose, so piscina's
 * `require()` never meets an ES module it is also importing (see
 * agent-entry.cts). The one `import()` of the ES-module entry is made here.
 */
// biome-ignore lint/suspicious/noExplicitAny: the task is checked by the entry it is handed to.
type HostTools = (task: any) => Promise<void>;
let entry: Promise<HostTools> | undefined;

module.exports = function hostTools(task: unknown): Promise<void> {
  entry ??= import('./tool-worker.js').then((loaded: { default: HostTools }) => loaded.default);
  return entry.then((run) => run(task));
};
