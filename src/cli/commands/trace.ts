import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { followTrace } from '../../events/follow.js';
import { type AgentEvent, type AgentEventType, EVENT_TYPES } from '../../events/schema.js';
import { readTrace } from '../../events/trace.js';
import { listRunIds, writerGone } from '../../job/run-folder.js';
import {
  type CliIo,
  chooseOutputMode,
  createRenderer,
  EXIT,
  exitWith,
  usageError,
} from '../context.js';
import { defaultOutDir, OUT_READ_FLAG_HELP } from '../default-out.js';
import { createPriceFunction, loadPriceTable } from '../prices.js';

/** How often `--follow` checks that the run's writer still lives. */
const WRITER_CHECK_MS = 1000;

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

/** Finds the trace for a file path, a run folder, a run id under `out`, or `latest`. */
export function locateTrace(cwd: string, target: string, out: string): string {
  if (target === 'latest') {
    const newest = listRunIds(resolve(cwd, out))[0];
    if (newest === undefined) {
      throw usageError(
        `There is no run under ${resolve(cwd, out)} yet, so no latest one. Start one with troupe run, or pass --out <dir>.`,
      );
    }
    return join(resolve(cwd, out), newest, 'trace.jsonl');
  }
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
    .argument('<file|runId>', 'a trace file, a run folder, a run id under --out, or latest')
    .option('--out <dir>', OUT_READ_FLAG_HELP, defaultOutDir(io.env))
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
    const present = new Set(events.map((event) => event.agentId));
    const unknown = (flags.agent ?? []).filter((id) => !present.has(id));
    if (unknown.length > 0) {
      throw usageError(
        `No agent ${unknown.map((id) => `"${id}"`).join(', ')} in this run. Its agents: ${[...present].join(', ')}.`,
      );
    }
    const mode = chooseOutputMode(io, { json: flags.json, quiet: true });
    const renderer = await createRenderer(mode, io, { price });
    // Filtered out events still count in the summary: it tells the whole run.
    for (const event of events) {
      if (keep(event)) renderer.handle(event);
      else renderer.observe?.(event);
    }
    renderer.finish();
    if (invalidLines.length > 0) {
      io.stderr.write(
        `note: skipped ${invalidLines.length} unreadable line${invalidLines.length === 1 ? '' : 's'} (${invalidLines.slice(0, 5).join(', ')}${invalidLines.length > 5 ? ', …' : ''}), e.g. a line torn by a crash.\n`,
      );
    }
    return EXIT.ok;
  }
  const runDir = dirname(path);
  if (!existsSync(runDir)) {
    const recent = listRunIds(resolve(cwd, flags.out)).slice(0, 5);
    throw usageError(
      `No run "${target}": there is no folder ${runDir}.${recent.length > 0 ? ` Recent runs: ${recent.join(', ')} (troupe runs lists them all).` : ''}`,
    );
  }
  const renderer = await createRenderer(chooseOutputMode(io, flags), io, { price });
  renderer.start?.();
  if (!existsSync(path)) io.stderr.write(`waiting for ${path} …\n`);
  // Stop following when the run's writer is gone (killed or crashed): no run.finished will come.
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  io.signal?.addEventListener('abort', onAbort, { once: true });
  let gone: string | undefined;
  const watchdog = setInterval(() => {
    gone = writerGone(runDir);
    if (gone !== undefined) stop.abort();
  }, WRITER_CHECK_MS);
  let seen = -1;
  let finished = false;
  const take = (event: AgentEvent): void => {
    seen = Math.max(seen, event.seq);
    if (event.type === 'run.finished') finished = true;
    if (keep(event)) renderer.handle(event);
    else renderer.observe?.(event);
  };
  try {
    for await (const event of followTrace(path, { signal: stop.signal })) take(event);
    if (gone !== undefined && !finished && existsSync(path)) {
      // What the writer flushed before it went: read the rest of the file once.
      for (const event of readTrace(path).events) if (event.seq > seen) take(event);
    }
  } finally {
    clearInterval(watchdog);
    io.signal?.removeEventListener('abort', onAbort);
    renderer.finish();
  }
  if (io.signal?.aborted === true) return EXIT.interrupted;
  if (gone !== undefined && !finished) {
    io.stderr.write(
      `troupe: stopped following: ${gone}, and the trace ends without run.finished. Resume the run with: troupe run --resume ${basename(runDir)}\n`,
    );
    return EXIT.failed;
  }
  return EXIT.ok;
}
