/**
 * The Node flags of troupe's worker threads. Piscina loads a worker file
 * with `require()` first and `import()` only when that throws. Since Node
 * 20.19, `require()` of an ES module works, and a `require()` that meets the
 * same module while an `import()` of it is still linking aborts the whole
 * process (`FATAL ERROR: v8::Module::IsGraphAsync ... must be used on an
 * instantiated module`, seen under load with two pools starting at once).
 * Our workers are ES modules, so turning require(esm) off in their threads
 * sends piscina straight to `import()`, which is safe to call concurrently.
 * The flag is passed only where this Node knows it.
 */
export function workerExecArgv(): string[] {
  const flag = '--no-experimental-require-module';
  const known =
    process.allowedNodeEnvironmentFlags.has('--experimental-require-module') ||
    process.allowedNodeEnvironmentFlags.has(flag);
  // V8 flags such as --expose-gc (npm run bench) are refused in a worker's explicit execArgv
  // (ERR_WORKER_INVALID_EXEC_ARGV); a worker inherits them from the process anyway.
  const inherited = process.execArgv.filter((arg) => !/^--expose[-_]gc$/.test(arg));
  return known ? [...inherited, flag] : inherited;
}
