/**
 * What `--help` shows after the options: examples for each command and the
 * exit codes, as git and cargo do. A module of its own with no imports, so
 * `troupe --help` stays fast.
 */

/** The exit codes, as a help section. */
export const EXIT_CODES_HELP = `
Exit codes:
  0    completed: a final answer, and every sub-agent it needed completed
  1    failed, or stopped at its --budget or --timeout
  2    usage error: a bad option or argument, no API key, a missing file or run
  3    partial: an answer, but some sub-agents failed (the summary says why)
  4    the run's files could not be written (disk full, I/O error); resume it once there is room
  130  interrupted: Ctrl-C, q in the live view, or SIGTERM (resume with --resume)`;

/** Examples by command name (and '' for `troupe` itself). */
const EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  '': [
    'troupe demo                                  # no key, no network: watch it work',
    'troupe run "Compare the notes in ./docs and list open questions"',
    'troupe runs                                  # the runs so far, newest first',
    'troupe trace latest                          # replay the last one',
    'troupe chat --allow read                     # one agent, a REPL',
    'troupe help run                              # every option of a command',
  ],
  run: [
    'troupe run "Compare the design notes in ./docs and list open questions"',
    'troupe run "Summarise the incident logs" --workspace ./logs --allow read --budget 200k',
    'troupe run "…" --provider openai --base-url http://localhost:11434/v1 --model qwen3:8b',
    'troupe run "…" --provider anthropic --thinking 8k     # extended thinking, 8,000 tokens',
    'troupe run "…" --roles ./roles.mjs --tools ./tools.mjs # your roles and tools',
    'troupe run "…" --json > events.ndjson                  # every event, one JSON line each',
    'troupe run --resume 20261202-050450-e044               # continue an interrupted run',
  ],
  chat: [
    'troupe chat --allow read',
    'troupe chat --provider anthropic --thinking 4k --workspace ./src',
    'troupe chat --provider openai --base-url http://localhost:11434/v1 --model qwen3:8b',
    'troupe chat --tools ./tools.mjs --allow read                # your tools, on a tool thread',
  ],
  trace: [
    'troupe trace latest',
    'troupe trace 20261202-050450-e044 --agent researcher-3',
    'troupe trace latest --type tool.* --quiet',
    'troupe trace latest --follow                 # from another terminal, while it runs',
    'troupe trace latest --html                   # a one-file HTML timeline',
  ],
  runs: ['troupe runs', 'troupe runs --limit 5 --json'],
  demo: [
    'troupe demo',
    'troupe demo --fast --quiet                   # plain lines, no pauses',
    'troupe demo --json | jq .type',
  ],
  worker: ['troupe worker --nats nats://localhost:4222 --threads 4'],
  nodes: ['troupe nodes --nats nats://localhost:4222'],
  mcp: [
    'troupe mcp --allow read                      # stdio, for Claude Code or Cursor',
    'troupe mcp --port 8765',
  ],
};

/** Keys of the interactive live view, for run and demo. */
const LIVE_KEYS_HELP = `
Live view keys (stdin is a terminal; --no-interactive turns them off):
  ↑↓ select an agent · Enter its transcript · Esc back · f filter · c cancel it · q stop
`;

/** The text `--help` of `command` ('' for `troupe`) shows after its options. */
export function helpAfter(command: string): string {
  const examples = EXAMPLES[command] ?? [];
  const keys = command === 'run' || command === 'demo' ? LIVE_KEYS_HELP : '';
  const exitCodes =
    command === 'worker' || command === 'nodes' || command === 'mcp' ? '' : EXIT_CODES_HELP;
  return `${examples.length === 0 ? '' : `\nExamples:\n${examples.map((line) => `  $ ${line}`).join('\n')}\n`}${keys}${exitCodes}\n`;
}
