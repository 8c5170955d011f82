import { totalTokens } from '../model/types.js';
import { fitParts } from './columns.js';
import { type AgentView, formatDuration, formatTokens, type RunState } from './run-state.js';
import { cutToWidth, displayWidth, type Palette, padToWidth } from './terminal.js';

/** How far one role's sub-agents are. */
export interface RoleProgress {
  role: string;
  total: number;
  running: number;
  completed: number;
  failed: number;
  cancelled: number;
  tokens: number;
  /** Estimated time until every agent of the role has finished, in ms (undefined: no estimate yet). */
  etaMs: number | undefined;
}

/**
 * Estimates the time left for a fan-out, cargo-style: the agents finished
 * so far set the rate (finished per millisecond since the first started),
 * and the rest are assumed to finish at that rate. Undefined until one has
 * finished, and once all have.
 */
export function estimateRemainingMs(agents: readonly AgentView[], now: number): number | undefined {
  let finished = 0;
  let first = Number.POSITIVE_INFINITY;
  // One pass, no spread: a role may have 100,000 agents, past the arguments a call can take.
  for (const agent of agents) {
    if (agent.status !== 'running') finished += 1;
    if (agent.startTs < first) first = agent.startTs;
  }
  return etaOf(agents.length, finished, first, now);
}

function etaOf(total: number, finished: number, first: number, now: number): number | undefined {
  const remaining = total - finished;
  if (finished === 0 || remaining === 0) return undefined;
  const elapsed = now - first;
  if (elapsed <= 0) return undefined;
  return (remaining * elapsed) / finished;
}

/** Progress of each sub-agent role, in the order roles first appeared. */
export function roleProgress(state: RunState, now: number): RoleProgress[] {
  // One pass over the agents (a frame of the live view asks for this every time it draws).
  const byRole = new Map<string, RoleProgress & { first: number }>();
  for (const agent of state.agents.values()) {
    if (agent.parentId === undefined) continue;
    const role = agent.role ?? '?';
    let progress = byRole.get(role);
    if (progress === undefined) {
      progress = {
        role,
        total: 0,
        running: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        tokens: 0,
        etaMs: undefined,
        first: Number.POSITIVE_INFINITY,
      };
      byRole.set(role, progress);
    }
    progress.total += 1;
    if (agent.status === 'running') progress.running += 1;
    else if (agent.status === 'completed') progress.completed += 1;
    else if (agent.status === 'cancelled') progress.cancelled += 1;
    else progress.failed += 1;
    progress.tokens += totalTokens(agent.usage);
    if (agent.startTs < progress.first) progress.first = agent.startTs;
  }
  return [...byRole.values()].map(({ first, ...progress }) => ({
    ...progress,
    etaMs: etaOf(progress.total, progress.total - progress.running, first, now),
  }));
}

const BAR_WIDTH = 12;

/** A bar of `width` cells: done in full blocks, failed in red, the rest light shade. */
function bar(progress: RoleProgress, palette: Palette): string {
  const cells = (count: number): number => Math.round((count / progress.total) * BAR_WIDTH);
  const failed = cells(progress.failed);
  const done = Math.min(cells(progress.completed + progress.cancelled), BAR_WIDTH - failed);
  return `${palette.green('█'.repeat(done))}${palette.red('█'.repeat(failed))}${palette.dim('░'.repeat(BAR_WIDTH - done - failed))}`;
}

/**
 * One line per role, `researcher ████░░ 39/199 done · 3 failed · 12 running
 * · 1.2M tok · ETA 1m20s`, the least important parts dropped first at
 * narrow widths; at most `maxLines` (the last then counts the roles left out).
 */
export function roleLines(
  progress: readonly RoleProgress[],
  palette: Palette,
  width: number,
  maxLines: number,
): string[] {
  if (maxLines <= 0 || progress.length === 0) return [];
  const nameWidth = Math.min(Math.max(...progress.map((role) => role.role.length)), 16);
  // With room for one line only, the first role; else the last line counts the roles left out.
  const shown =
    progress.length > maxLines && maxLines > 1
      ? progress.slice(0, maxLines - 1)
      : progress.slice(0, maxLines);
  const lines = shown.map((role) => {
    const finished = role.completed + role.cancelled + role.failed;
    const name = palette.bold(padToWidth(cutToWidth(role.role, nameWidth), nameWidth));
    const parts = (withBar: boolean) => [
      {
        text: `${name} ${withBar ? `${bar(role, palette)} ` : ''}${finished}/${role.total} done`,
        drop: 0,
      },
      ...(role.failed > 0 ? [{ text: palette.red(`${role.failed} failed`), drop: 0 }] : []),
      ...(role.cancelled > 0 ? [{ text: `${role.cancelled} cancelled`, drop: 3 }] : []),
      ...(role.running > 0 ? [{ text: `${role.running} running`, drop: 2 }] : []),
      { text: `${formatTokens(role.tokens)} tok`, drop: 4 },
      ...(role.etaMs === undefined
        ? []
        : [{ text: `ETA ${formatDuration(Math.ceil(role.etaMs / 1000) * 1000)}`, drop: 1 }]),
    ];
    // The bar goes before the counts do.
    const kept = parts(true).filter((part) => part.drop === 0);
    const fits = displayWidth(kept.map((part) => part.text).join(' · ')) <= width;
    return fitParts(parts(fits), palette.dim(' · '), width);
  });
  if (shown.length < progress.length && maxLines > 1) {
    lines.push(palette.dim(cutToWidth(`… ${progress.length - shown.length} more roles`, width)));
  }
  return lines;
}
