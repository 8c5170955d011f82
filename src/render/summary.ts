import { totalTokens } from '../model/types.js';
import {
  type AgentView,
  describeBudget,
  formatCost,
  formatDuration,
  formatTokens,
  type RunState,
} from './run-state.js';
import { type Palette, padToWidth, wrapText } from './terminal.js';

interface Row {
  cells: string[];
}

function table(header: string[], rows: readonly Row[]): string[] {
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => (row.cells[column] ?? '').length)),
  );
  const format = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => padToWidth(cell, widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [format(header), ...rows.map((row) => format(row.cells))];
}

/**
 * The end-of-run summary, computed from events alone (so a replay prints the
 * same): the outcome and wall time, then agents by role and status with their
 * tokens, cost and agent time.
 */
export function summaryLines(
  state: RunState,
  palette: Palette,
  width: number | undefined = undefined,
): string[] {
  const agents = [...state.agents.values()];
  const counts = state.countByStatus();
  const end = state.endTs ?? state.lastTs;
  const wall = formatDuration(end - (state.startTs ?? agents[0]?.startTs ?? end));
  const status = state.status ?? 'unfinished';
  const colour =
    status === 'completed'
      ? palette.green
      : status === 'unfinished' || status === 'partial'
        ? palette.yellow
        : palette.red;
  const statusParts = (['completed', 'failed', 'cancelled', 'timed_out', 'running'] as const)
    .filter((key) => counts[key] > 0)
    .map((key) => `${counts[key]} ${key.replace('_', ' ')}`);
  const cost = state.totalCost();
  const headline = [
    `Run ${state.runId ?? '?'} ${colour(status)} in ${wall}`,
    `${agents.length} agent${agents.length === 1 ? '' : 's'} (${statusParts.join(', ') || 'none'})`,
    `${formatTokens(totalTokens(state.totalUsage()))} tokens`,
    ...(cost > 0 ? [formatCost(cost)] : []),
  ].join(' · ');

  const showTimedOut = counts.timed_out > 0;
  const showCost = cost > 0;
  const roles = [...new Set(agents.map((agent) => agent.role ?? agent.id))];
  const rowFor = (label: string, group: typeof agents): Row => {
    const by = (value: string): number => group.filter((agent) => agent.status === value).length;
    const tokens = group.reduce((sum, agent) => sum + totalTokens(agent.usage), 0);
    const time = group.reduce((sum, agent) => sum + ((agent.endTs ?? end) - agent.startTs), 0);
    return {
      cells: [
        label,
        String(group.length),
        String(by('completed')),
        String(by('failed')),
        String(by('cancelled')),
        ...(showTimedOut ? [String(by('timed_out'))] : []),
        formatTokens(tokens),
        ...(showCost
          ? [formatCost(group.reduce((sum, agent) => sum + agent.costUsd, 0)) || '-']
          : []),
        formatDuration(time),
      ],
    };
  };
  const header = [
    'role',
    'agents',
    'completed',
    'failed',
    'cancelled',
    ...(showTimedOut ? ['timed out'] : []),
    'tokens',
    ...(showCost ? ['cost'] : []),
    'agent time',
  ];
  const resumed =
    state.replayedCalls > 0 || state.diverged > 0
      ? [
          `  resumed: ${state.replayedCalls} model call${state.replayedCalls === 1 ? '' : 's'} replayed from the journal, ${formatTokens(totalTokens(state.replayedUsage))} tokens saved${state.diverged > 0 ? ` · ${state.diverged} agent${state.diverged === 1 ? '' : 's'} diverged from the journal and went live` : ''}`,
        ]
      : [];
  const stop = state.budgetStop;
  // What stopped the run and how much of the budget it used, in the run's own totals.
  const budget =
    state.status === 'budget' && stop !== undefined && stop.metric !== 'time'
      ? [
          `  stopped by its ${stop.metric === 'cost' ? 'cost' : 'token'} budget: ${describeBudget(stop.metric, stop.metric === 'cost' ? cost : totalTokens(state.totalUsage()), stop.limit)} used`,
        ]
      : [];
  const rows = roles.map((role) =>
    rowFor(
      role,
      agents.filter((agent) => (agent.role ?? agent.id) === role),
    ),
  );
  rows.push(rowFor('total', agents));
  const lines = table(header, rows);
  return [
    palette.bold(headline),
    ...lines.map((line, index) => (index === 0 ? palette.dim(`  ${line}`) : `  ${line}`)),
    ...budget,
    ...failureLines(agents, palette, width),
    ...resumed,
    ...state.adaptations.map(
      (adaptation) =>
        `${palette.yellow('!')} ${adaptation.role} ran without ${adaptation.dropped.join(', ')}: the ${adaptation.tiers.join(', ')} permission${adaptation.tiers.length === 1 ? ' was' : 's were'} not granted`,
    ),
  ];
}

/**
 * Each agent that failed or timed out, with its whole reason (every line of
 * it, indented; the end of a reason often says how to fix it: "Rerun with
 * --allow …"), word-wrapped to `width` when given (a terminal).
 */
function failureLines(
  agents: readonly AgentView[],
  palette: Palette,
  width: number | undefined,
): string[] {
  const failed = agents.filter(
    (agent) => agent.status === 'failed' || agent.status === 'timed_out',
  );
  if (failed.length === 0) return [];
  const lines = [
    palette.bold(`${failed.length} agent${failed.length === 1 ? '' : 's'} did not complete:`),
  ];
  for (const agent of failed) {
    const [first = '', ...rest] = (agent.error ?? 'no reason was given').split('\n');
    const wrap = (text: string): string[] =>
      width === undefined ? [text] : wrapText(text, width, '    ');
    lines.push(...wrap(`  ${palette.red(agent.id)} ${agent.status.replace('_', ' ')}: ${first}`));
    for (const line of rest) lines.push(...wrap(`    ${line}`));
  }
  return lines;
}
