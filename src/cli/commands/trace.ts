import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { followTrace } from '../../events/follow.js';
import { type AgentEvent, type AgentEventType, EVENT_TYPES } from '../../events/schema.js';
import { readTrace } from '../../events/trace.js';
import {
  type CliIo,
  chooseOutputMode,
  createRenderer,
  EXIT,
  exitWith,
  usageError,
} from '../context.js';
import { createPriceFunction, loadPriceTable } from '../prices.js';
import { OTEL_FLAG_HELP, observeTrace } from './observe.js';

interface TraceFlags {
  out: string;
  follow?: boolean | undefined;
  agent?: string[] | undefined;
  type?: string[] | undefined;
  json?: boolean | undefined;
  quiet?: boolean | undefined;
  prices?: string | undefined;
  html?: string | boolean | undefined;
  otel?: boolean | undefined;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [
    ...(previous ?? []),
    ...value
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean),
  ];
}

function collectTypes(value: string, previous: string[] | undefined): string[] {
  const types = collect(value, undefined);
  for (const type of types) {
    const prefix = type.endsWith('.*') ? type.slice(0, -1) : undefined;
    const known =
      prefix === undefined
        ? (EVENT_TYPES as readonly string[]).includes(type)
        : EVENT_TYPES.some((name) => name.startsWith(prefix));
    if (!known) {
      throw new InvalidArgumentError(
        `unknown event type "${type}". Known types: ${EVENT_TYPES.join(', ')} (or a prefix such as tool.*).`,
      );
    }
  }
  return [...(previous ?? []), ...types];
}

/** Finds the trace for a file path, a run folder or a run id under `out`. */
export function locateTrace(cwd: string, target: string, out: string): string {
  const direct = resolve(cwd, target);
  if (existsSync(direct) && statSync(direct).isFile()) return direct;
  if (existsSync(direct) && statSync(direct).isDirectory()) return join(direct, 'trace.jsonl');
  return join(resolve(cwd, out), target, 'trace.jsonl');
}

/** A predicate for the --agent and --type filters. */
export function eventFilter(
  agents: readonly string[] = [],
  types: readonly string[] = [],
): (event: AgentEvent) => boolean {
  const matchesType = (type: AgentEventType): boolean =>
    types.length === 0 ||
    types.some((wanted) =>
      wanted.endsWith('.*') ? type.startsWith(wanted.slice(0, -1)) : type === wanted,
    );
  return (event) =>
    (agents.length === 0 || agents.includes(event.agentId)) && matchesType(event.type);
}

/** `troupe trace <file|runId>`: replays a saved trace through the same renderers as a live run. */
export function registerTraceCommand(program: Command, io: CliIo): void {
  program
    .command('trace')
    .description(
      'replay a saved trace (a trace.jsonl file, a run folder or a run id) through the same renderers as a run',
    )
    .argument('<file|runId>', 'a trace file, a run folder, or a run id under --out')
    .option('--out <dir>', 'where run folders are', 'troupe-runs')
    .option(
      '--follow',
      'tail a run in progress (from another terminal) until it finishes or Ctrl-C',
    )
    .option('--agent <id>', 'only this agent (repeat or comma-separate for more)', collect)
    .option(
      '--type <type>',
      'only this event type, or a prefix such as tool.* (repeatable)',
      collectTypes,
    )
    .option('--json', 'print the events as NDJSON')
    .option('--quiet', 'plain lines, no live view')
    .option(
      '--prices <file>',
      'JSON price table { "<model>": { "inputPerMTok": n, "outputPerMTok": n } } (US dollars per million tokens), so the replay shows cost',
    )
    .option(
      '--html [file]',
      'write the run as a one-file HTML timeline (default timeline.html beside the trace)',
    )
    .option('--otel', OTEL_FLAG_HELP)
    .action(async (target: string, flags: TraceFlags) => {
      exitWith(await replay(io, target, flags));
    });
}

async function replay(io: CliIo, target: string, flags: TraceFlags): Promise<number> {
  const cwd = io.cwd ?? process.cwd();
  const path = locateTrace(cwd, target, flags.out);
  const keep = eventFilter(flags.agent, flags.type);
  const price =
    flags.prices === undefined ? undefined : createPriceFunction(loadPriceTable(cwd, flags.prices));
  if (flags.follow !== true) {
    if (!existsSync(path)) {
      throw usageError(
        `No trace found for "${target}": there is no file ${path}. Pass a trace file, a run folder, or a run id under --out (${flags.out}).`,
      );
    }
    const { events, invalidLines } = readTrace(path);
    if (flags.html !== undefined || flags.otel === true) {
      await observeTrace(io, events.filter(keep), path, flags, {
        price,
        resolvePath: (file) => resolve(cwd, file),
      });
      return EXIT.ok;
    }
    const renderer = createRenderer(chooseOutputMode(io, { json: flags.json, quiet: true }), io, {
      price,
    });
    for (const event of events) if (keep(event)) renderer.handle(event);
    renderer.finish();
    if (invalidLines.length > 0) {
      io.stderr.write(
        `note: skipped ${invalidLines.length} unreadable line${invalidLines.length === 1 ? '' : 's'} (${invalidLines.slice(0, 5).join(', ')}${invalidLines.length > 5 ? ', …' : ''}), e.g. a line torn by a crash.\n`,
      );
    }
    return EXIT.ok;
  }
  const renderer = createRenderer(chooseOutputMode(io, flags), io, { price });
  renderer.start?.();
  if (!existsSync(path)) io.stderr.write(`waiting for ${path} …\n`);
  const options = io.signal === undefined ? {} : { signal: io.signal };
  try {
    for await (const event of followTrace(path, options)) if (keep(event)) renderer.handle(event);
  } finally {
    renderer.finish();
  }
  return io.signal?.aborted === true ? EXIT.interrupted : EXIT.ok;
}
