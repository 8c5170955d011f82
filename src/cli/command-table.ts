import type { Command } from 'commander';
import type { CliIo } from './context.js';

/** Adds a command to the program. */
export type Register = (program: Command, io: CliIo) => void;

/**
 * The subcommands, loaded on demand: a command's module (and what it imports:
 * the runtime, zod schemas, renderers, SDKs) is only loaded when that command
 * runs or shows its help, so `troupe --help` loads none of them. `term` and
 * `description` are what the top-level help lists (a test compares them with
 * the commands' own).
 */
export const COMMANDS: Readonly<
  Record<string, { term: string; description: string; load: () => Promise<Register> }>
> = {
  run: {
    term: 'run [options] [task]',
    description: 'run a task: a coordinator splits it among sub-agents that work in parallel',
    load: async () => (await import('./commands/run.js')).registerRunCommand,
  },
  chat: {
    term: 'chat [options]',
    description:
      'talk to one agent with the built-in tools the granted tiers allow; exit, quit, end of input or Ctrl-C leave',
    load: async () => (await import('./commands/chat.js')).registerChatCommand,
  },
  trace: {
    term: 'trace [options] <file|runId>',
    description:
      'replay a saved trace (a trace.jsonl file, a run folder or a run id) through the same renderers as a run',
    load: async () => (await import('./commands/trace.js')).registerTraceCommand,
  },
  runs: {
    term: 'runs [options]',
    description:
      'list the runs in the output folder, newest first (replay one with troupe trace <id>)',
    load: async () => (await import('./commands/runs.js')).registerRunsCommand,
  },
  demo: {
    term: 'demo [options]',
    description:
      'research → analysis → report over the bundled example corpus on the offline heuristic model (no key, no network)',
    load: async () => (await import('./commands/demo.js')).registerDemoCommand,
  },
  worker: {
    term: 'worker [options]',
    description: 'run a worker node: host sub-agents of runs started with troupe run --nats',
    load: async () => (await import('./commands/worker.js')).registerWorkerCommand,
  },
  nodes: {
    term: 'nodes [options]',
    description: 'list the live worker nodes on a NATS server',
    load: async () => (await import('./commands/nodes.js')).registerNodesCommand,
  },
  mcp: {
    term: 'mcp [options]',
    description:
      'serve troupe to MCP clients (Claude Code, Cursor, …) over stdio, or Streamable HTTP with --port: run_job, run_status, cancel_run, list_roles',
    load: async () => (await import('./commands/mcp.js')).registerMcpCommand,
  },
};

/** The subcommand `argv` (node, script, args…) names, if any: `troupe run …`, `troupe help run`. */
export function requestedCommand(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((word) => !word.startsWith('-'));
  const name = words[0] === 'help' ? words[1] : words[0];
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? name : undefined;
}
