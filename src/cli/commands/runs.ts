import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { readTrace } from '../../events/trace.js';
import { listRunIds, writerGone } from '../../job/run-folder.js';
import { totalTokens } from '../../model/types.js';
import { formatCost, formatTokens, RunState } from '../../render/run-state.js';
import { cutToWidth, displayWidth, oneLine, padToWidth } from '../../render/terminal.js';
import { type CliIo, EXIT, exitWith } from '../context.js';
import { defaultOutDir, OUT_READ_FLAG_HELP } from '../default-out.js';
import { createPriceFunction, loadPriceTable } from '../prices.js';
import { parsePositiveInteger } from './options.js';

interface RunsFlags {
  out: string;
  limit: number;
  prices?: string | undefined;
  json?: boolean | undefined;
}

/** One row of `troupe runs`. */
export interface RunListing {
  id: string;
  startedAt: string | undefined;
  task: string;
  /** The run's status, or `running` (its writer lives) or `unfinished` (no run.finished, no writer). */
  status: string;
  agents: number;
  tokens: number;
  costUsd: number;
}

function localTime(ts: number | undefined): string | undefined {
  if (ts === undefined) return undefined;
  const date = new Date(ts);
  const two = (value: number): string => String(value).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}`;
}

/** `troupe runs`: the runs in the output folder, newest first. */
export function registerRunsCommand(program: Command, io: CliIo): void {
  program
    .command('runs')
    .description(
      'list the runs in the output folder, newest first (replay one with troupe trace <id>)',
    )
    .option('--out <dir>', OUT_READ_FLAG_HELP, defaultOutDir(io.env))
    .option('--limit <n>', 'at most this many runs', parsePositiveInteger, 20)
    .option('--prices <file>', 'a JSON price table, to show what each run cost')
    .option('--json', 'one JSON object per run')
    .action((flags: RunsFlags) => {
      exitWith(listRuns(io, flags));
    });
}

function listRuns(io: CliIo, flags: RunsFlags): number {
  const cwd = io.cwd ?? process.cwd();
  const out = resolve(cwd, flags.out);
  const ids = listRunIds(out);
  if (ids.length === 0) {
    io.stderr.write(
      `No runs in ${out} yet. Start one with troupe run "<task>" (or pass --out <dir>).\n`,
    );
    return EXIT.ok;
  }
  const price =
    flags.prices === undefined ? undefined : createPriceFunction(loadPriceTable(cwd, flags.prices));
  const rows: RunListing[] = ids.slice(0, flags.limit).map((id) => {
    const state = new RunState({ price });
    for (const event of readTrace(join(out, id, 'trace.jsonl')).events) state.apply(event);
    return {
      id,
      startedAt: localTime(state.startTs),
      task: oneLine(state.task ?? ''),
      status: state.status ?? (writerGone(join(out, id)) === undefined ? 'running' : 'unfinished'),
      agents: state.agents.size,
      tokens: totalTokens(state.totalUsage()),
      costUsd: state.totalCost(),
    };
  });
  if (flags.json === true) {
    for (const row of rows) io.stdout.write(`${JSON.stringify(row)}\n`);
    return EXIT.ok;
  }
  const showCost = rows.some((row) => row.costUsd > 0);
  const table = [
    ['run', 'started', 'status', 'agents', 'tokens', ...(showCost ? ['cost'] : []), 'task'],
    ...rows.map((row) => [
      row.id,
      row.startedAt ?? '-',
      row.status,
      String(row.agents),
      formatTokens(row.tokens),
      ...(showCost ? [formatCost(row.costUsd) || '-'] : []),
      row.task,
    ]),
  ];
  const widths = table[0]?.map((_, column) =>
    Math.max(...table.map((cells) => displayWidth(cells[column] ?? ''))),
  );
  const width = io.stdout.isTTY ? Math.max((io.stdout.columns || 80) - 1, 40) : undefined;
  for (const cells of table) {
    const line = cells
      .map((cell, column) =>
        column === cells.length - 1 ? cell : padToWidth(cell, widths?.[column] ?? 0),
      )
      .join('  ')
      .trimEnd();
    io.stdout.write(`${width === undefined ? line : cutToWidth(line, width)}\n`);
  }
  if (ids.length > rows.length) {
    io.stderr.write(
      `(${ids.length - rows.length} older runs not shown; --limit ${ids.length} shows all)\n`,
    );
  }
  return EXIT.ok;
}
