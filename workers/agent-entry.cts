/**
 * The file the agent pool's threads load: CommonJS on purpose. Piscina
 * loads a worker file with `require()` first and `import()` only when that
 * throws; on Node 20.19 and later `require()` of an ES module works, and a
 * `require()` that meets a module while an `import()` of it is still
 * linking aborts the whole process (`FATAL ERROR: v8::Module::IsGraphAsync`,
 * seen when a thread's first task arrives while piscina is still preloading
 * the file). Piscina's `require()` of this file is plain CommonJS, and the
 * one `import()` of the ES-module entry is made here, once per thread.
 */
// biome-ignore lint/suspicious/noExplicitAny: the task is checked by the entry it is handed to.
type HostActors = (task: any) => Promise<void>;
let entry: Promise<HostActors> | undefined;

module.exports = function hostActors(task: unknown): Promise<void> {
  entry ??= import('./agent-worker.js').then((loaded: { default: HostActors }) => loaded.default);
  return entry.then((run) => run(task));
};
