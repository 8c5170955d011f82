/**
 * The file the agent pool's threads load: CommonJS on purpose. Piscina
 * loads a worker file with `require()` first and `import()` only when that
 * throws; on Node 20.19 and later `require()` of an ES module works, and a
 * `require()` that meets a module while an `import()` of it is still
 * linking aborts the whole process (`FATAL ERROR: v8::Module::IsGraphAsync`,
 * seen when a thread's first task arrives while piscina is still preloading
 * the file). Piscina's `require()` of this file is plain CommonJS, and the
 * one `import()` of the ES-module entry is made here, once per thread, as
 * soon as piscina loads this file.
 *
 * The entry it imports is the bundle of agent-worker.ts (dist/bundle, made
 * by scripts/bundle.mjs after tsc): the same modules in a few files, which a
 * new thread loads in less than half the time of the ~180 separate ones.
 */
// biome-ignore lint/suspicious/noExplicitAny: the task is checked by the entry it is handed to.
type HostActors = (task: any) => Promise<void>;
// Started when piscina loads this file, as the thread starts: the host's
// modules load while the thread waits for its task (a pool may start before
// its run is known, see thread-start.ts). A failed load rejects the task.
// The specifier is a variable: tsc resolves literal ones against workers/, where no bundle is.
const BUNDLE = '../bundle/agent-worker.js';
const entry: Promise<HostActors> = import(BUNDLE).then(
  (loaded: { default: HostActors }) => loaded.default,
);
entry.catch(() => undefined);

module.exports = function hostActors(task: unknown): Promise<void> {
  return entry.then((run) => run(task));
};
