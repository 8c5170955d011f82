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
export function workerExecArgv(): string[] | undefined {
  const flag = '--no-experimental-require-module';
  const known =
    process.allowedNodeEnvironmentFlags.has('--experimental-require-module') ||
    process.allowedNodeEnvironmentFlags.has(flag);
  if (!known) return undefined;
  // An explicit execArgv replaces what a worker inherits, and Node refuses V8
  // and per-process flags in it (--expose-gc, --max-old-space-size=…:
  // ERR_WORKER_INVALID_EXEC_ARGV). So the flag is added only when every flag
  // the process has is one a worker takes; otherwise workers inherit as before.
  const inherited: string[] = [];
  for (let index = 0; index < process.execArgv.length; index += 1) {
    const arg = process.execArgv[index] ?? '';
    if (!WORKER_SAFE.test(arg)) return undefined;
    inherited.push(arg);
    // A flag given as two words (--import x) brings its value along.
    if (!arg.includes('=') && TAKES_VALUE.test(arg) && index + 1 < process.execArgv.length) {
      inherited.push(process.execArgv[index + 1] ?? '');
      index += 1;
    }
  }
  return [...inherited, flag];
}

/** Flags a worker thread accepts in its execArgv (module loading, warnings, source maps). */
const WORKER_SAFE =
  /^(--conditions|-C|--import|--require|-r|--loader|--experimental-loader|--no-warnings|--no-deprecation|--enable-source-maps|--experimental-vm-modules|--input-type|--experimental-strip-types|--experimental-transform-types|--disable-warning)(=.*)?$/;
/** Of those, the ones whose value may follow as the next argument. */
const TAKES_VALUE =
  /^(--conditions|-C|--import|--require|-r|--loader|--experimental-loader|--input-type|--disable-warning)$/;

/** The execArgv option of a pool's workers, or none (inherit) where the flag cannot be added. */
export function workerExecOptions(): { execArgv?: string[] } {
  const execArgv = workerExecArgv();
  return execArgv === undefined ? {} : { execArgv };
}
