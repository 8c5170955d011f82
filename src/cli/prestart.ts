/**
 * Starting a run's agent threads while the CLI still loads (`troupe run`,
 * `troupe demo`): `main()` calls this with the command line before it
 * loads the command's modules. The threads load troupe's host modules in
 * parallel with the main thread, and the run's pool adopts them when it has
 * the same shape (thread count and limits; see runtime/wire/thread-start.ts).
 * When it does not (a usage error, `--help`), the idle threads cost nothing
 * at exit.
 */

/** The commands whose runs start local agent threads. */
const THREADED_COMMANDS = new Set(['run', 'demo']);

/**
 * The agent thread count `args` (the command line after node and the
 * script, command included) ask for:
 * `--threads <n>` or `--threads=<n>`; undefined for the default; null when
 * the command will not start local threads (help, `--nats`, an invalid count
 * that commander will refuse).
 */
export function requestedThreads(args: readonly string[]): number | undefined | null {
  if (args[0] === 'help') return null;
  let threads: number | undefined;
  for (let index = 0; index < args.length; index += 1) {
    const word = args[index] ?? '';
    if (word === '--') break;
    if (word === '-h' || word === '--help' || word === '--nats' || word.startsWith('--nats=')) {
      return null;
    }
    let value: string | undefined;
    if (word === '--threads') value = args[index + 1];
    else if (word.startsWith('--threads=')) value = word.slice('--threads='.length);
    else continue;
    if (value === undefined || !/^[1-9]\d*$/.test(value)) return null;
    threads = Number(value);
  }
  return threads;
}

/**
 * Starts the agent pool's threads for `command` when it runs agents locally;
 * never throws (the run itself reports what is wrong).
 */
export function prestartAgentThreads(command: string | undefined, args: readonly string[]): void {
  if (command === undefined || !THREADED_COMMANDS.has(command)) return;
  const threads = requestedThreads(args);
  if (threads === null) return;
  // Loaded here, not at the top: `troupe --help` never loads piscina.
  import('../runtime/wire/thread-start.js')
    .then((start) =>
      start.prestartAgentPool({
        filename: start.agentWorkerUrl().href,
        threads: threads ?? start.defaultAgentThreads(),
        resourceLimits: start.DEFAULT_AGENT_THREAD_LIMITS,
      }),
    )
    .catch(() => undefined);
}
