import { totalTokens } from '../model/types.js';
import { fitRow, planColumns, type RowCells } from './columns.js';
import {
  type AgentView,
  formatCost,
  formatDuration,
  formatTokens,
  type RunState,
} from './run-state.js';
import { cutToWidth, oneLine, type Palette } from './terminal.js';

/** One line of the agent list: an agent's row, or a fold/more line (agent undefined). */
export interface TreeLine {
  /** The line as shown; for an agent's line made with `layout: false`, empty until `layOutLines`. */
  text: string;
  agent: AgentView | undefined;
  /** Shown whatever the room: roots, fold counts, agents of rare roles. */
  keep: boolean;
  /** The tree guide before an agent's glyph, uncoloured (what `layOutLines` puts first, dimmed). */
  lead?: string | undefined;
  /** For a line that stands for agents left out of the list (see TreeOptions.limit): how many. */
  hidden?: { agents: number; running: number } | undefined;
}

/** What narrows the agent list (`f` in the interactive view). */
export type AgentFilter =
  | { kind: 'all' }
  | { kind: 'status'; status: 'running' | 'failed' | 'done' }
  | { kind: 'role'; role: string };

/** "running", "role analyst": a filter as the footer names it. */
export function describeFilter(filter: AgentFilter): string {
  if (filter.kind === 'all') return 'all agents';
  if (filter.kind === 'role') return `role ${filter.role}`;
  return filter.status;
}

/** True when `agent` passes `filter`. */
export function matchesFilter(agent: AgentView, filter: AgentFilter): boolean {
  if (filter.kind === 'all') return true;
  if (filter.kind === 'role') return agent.role === filter.role;
  if (filter.status === 'running') return agent.status === 'running';
  if (filter.status === 'failed') return agent.status === 'failed' || agent.status === 'timed_out';
  return agent.status === 'completed' || agent.status === 'cancelled';
}

/** A role with this many sub-agents or fewer is rare: its agents are never folded away. */
export const RARE_ROLE_AGENTS = 2;

/** True while an agent is queued or waiting (on a channel, on its sub-agents), not working. */
export function isIdle(agent: AgentView): boolean {
  return (
    agent.status === 'running' &&
    (agent.activity === 'starting' || agent.activity.startsWith('waiting'))
  );
}

/**
 * The order in which agents claim a place when not all fit, lowest first:
 * working agents and agents of rare roles, then failures, then idle
 * (queued, waiting) agents, then finished ones.
 */
export function agentRank(agent: AgentView, rare: boolean): number {
  if (agent.status === 'failed' || agent.status === 'timed_out') return rare ? 0 : 1;
  if (agent.status === 'running') return isIdle(agent) ? (rare ? 0 : 2) : 0;
  return rare ? 0 : 3;
}

/**
 * The order in which `fitTree` gives a place to an agent that is not kept
 * anyway: working first, then idle, failed (the failures section lists them
 * too) and finished.
 */
function fitRank(agent: AgentView): number {
  const order = agentRank(agent, false);
  // Idle before failed here: a failure is listed in the failures section anyway.
  return order === 1 ? 2 : order === 2 ? 1 : order;
}

/** Options of one rendering of the agent list. */
export interface TreeOptions {
  state: RunState;
  palette: Palette;
  width: number;
  /** The current time, for elapsed times. */
  now: number;
  /** Fold finished subtrees into one count line per parent. */
  fold: boolean;
  /** Order siblings by `agentRank` (working and failed before idle and done). */
  sort: boolean;
  /** The status glyph or spinner of an agent. */
  glyph: (agent: AgentView) => string;
  /**
   * Lay the agents' rows out now (default). With false, agent lines come
   * without their text, for `layOutLines` to lay out only those shown: with
   * many agents, measuring every row's cells is most of a frame's work.
   */
  layout?: boolean | undefined;
  /**
   * With `fold` and `sort`: at most this many lines will be shown (`fitTree`'s
   * `maxLines`). A parent's childless sub-agents past that many of one rank
   * could never show, so they are counted in one line instead of listed
   * (`hidden`): a fan-out of 100,000 makes a frame of a screen's worth.
   */
  limit?: number | undefined;
}

type Entry =
  | { kind: 'agent'; agent: AgentView; guide: string }
  | { kind: 'fold'; text: string }
  | { kind: 'hidden'; text: string; agents: number; running: number };

/** Sub-agents per role (roots not counted). */
export function roleCounts(state: RunState): Map<string, number> {
  return new Map(state.subAgentsByRole());
}

/**
 * The agent tree as lines: tree guides, glyph, id, then the columns that fit
 * the width (see planColumns). With `fold`, a parent's finished subtrees
 * become one "N finished" line; with `sort`, siblings come in rank order.
 */
export function treeLines(options: TreeOptions): TreeLine[] {
  const { state, palette: p, width } = options;
  const counts = state.subAgentsByRole();
  const isRare = (agent: AgentView): boolean =>
    agent.parentId !== undefined && (counts.get(agent.role ?? '?') ?? 0) <= RARE_ROLE_AGENTS;
  const foldable = (agent: AgentView): boolean => {
    if (agent.status !== 'completed' && agent.status !== 'cancelled') return false;
    if (isRare(agent)) return false;
    return agent.children.every((child) => {
      const view = state.agents.get(child);
      return view === undefined || foldable(view);
    });
  };
  const entries: Entry[] = [];
  const visit = (agent: AgentView, prefix: string, isLast: boolean, isRoot: boolean): void => {
    entries.push({
      kind: 'agent',
      agent,
      guide: isRoot ? '' : `${prefix}${isLast ? '└─ ' : '├─ '}`,
    });
    // Most agents of a large fan-out are leaves: nothing below them to gather.
    if (agent.children.length === 0) return;
    const childPrefix = isRoot ? '' : `${prefix}${isLast ? '   ' : '│  '}`;
    // One pass over the children, building no list of them all (a fan-out of 100,000 would make
    // several per frame): finished subtrees are only counted into the fold line, and childless
    // agents past the limit only into the "more" line. Ranks are 0-3, so the order is one bucket
    // per rank (stable) instead of a comparison sort.
    const limit = options.fold && options.sort ? options.limit : undefined;
    const buckets: AgentView[][] = options.sort ? [[], [], [], []] : [[]];
    // Per bucket, its last child, listed or not: the tree's └─ goes to the last one shown.
    const lastOf: Array<AgentView | undefined> = [];
    // Childless agents listed so far per fitTree rank, and those left out past the limit.
    const listed = [0, 0, 0, 0];
    let left = 0;
    let leftRunning = 0;
    let folded = 0;
    let foldedCompleted = 0;
    let foldedTokens = 0;
    const foldedRoles = new Set<string>();
    for (const id of agent.children) {
      const child = state.agents.get(id);
      if (child === undefined) continue;
      if (options.fold && foldable(child)) {
        folded += 1;
        if (child.status === 'completed') foldedCompleted += 1;
        foldedRoles.add(child.role ?? '?');
        foldedTokens += state.subtreeTokens(child.id);
        continue;
      }
      const rare = isRare(child);
      const bucket = options.sort ? agentRank(child, rare) : 0;
      lastOf[bucket] = child;
      if (limit !== undefined && child.children.length === 0 && !rare) {
        const rank = fitRank(child);
        if ((listed[rank] ?? 0) >= limit) {
          left += 1;
          if (child.status === 'running') leftRunning += 1;
          continue;
        }
        listed[rank] = (listed[rank] ?? 0) + 1;
      }
      buckets[bucket]?.push(child);
    }
    const last = lastOf.findLast((child) => child !== undefined);
    for (const bucket of buckets) {
      for (const child of bucket) visit(child, childPrefix, child === last && folded === 0, false);
    }
    if (left > 0) {
      entries.push({
        kind: 'hidden',
        text: cutToWidth(p.dim(`${childPrefix}└─ … ${left} more`), width),
        agents: left,
        running: leftRunning,
      });
    }
    if (folded > 0) {
      const cancelled = folded - foldedCompleted;
      const roles = [...foldedRoles].join(', ');
      entries.push({
        kind: 'fold',
        text: cutToWidth(
          `${p.dim(`${childPrefix}└─ `)}${p.green('✔')} ${p.dim(`${folded} finished (${foldedCompleted} completed${cancelled > 0 ? `, ${cancelled} cancelled` : ''}) · ${roles} · ${formatTokens(foldedTokens)} tok`)}`,
          width,
        ),
      });
    }
  };
  state.roots.forEach((root, index) => {
    const agent = state.agents.get(root);
    if (agent !== undefined) visit(agent, '', index === state.roots.length - 1, true);
  });
  const lines = entries.map((entry): TreeLine => {
    if (entry.kind === 'fold') return { text: entry.text, agent: undefined, keep: true };
    if (entry.kind === 'hidden') {
      const hidden = { agents: entry.agents, running: entry.running };
      return { text: entry.text, agent: undefined, keep: false, hidden };
    }
    return {
      text: '',
      agent: entry.agent,
      keep: entry.agent.parentId === undefined || isRare(entry.agent),
      lead: entry.guide,
    };
  });
  return options.layout === false ? lines : layOutLines(lines, options);
}

/**
 * Lays out the agent lines of `lines` (made with `layout: false`) together,
 * one column plan for all of them; other lines are kept as they are.
 */
export function layOutLines(lines: readonly TreeLine[], options: TreeOptions): TreeLine[] {
  const rows = rowsFor(
    lines.flatMap((line) =>
      line.agent === undefined
        ? []
        : [{ agent: line.agent, lead: line.lead ? options.palette.dim(line.lead) : '' }],
    ),
    options,
  );
  return lines.map((line) =>
    line.agent === undefined ? line : { ...line, text: rows.get(line.agent) ?? '' },
  );
}

/** A flat list of the agents that pass `filter`, in rank order (no tree guides). */
export function filteredLines(options: TreeOptions, filter: AgentFilter): TreeLine[] {
  const counts = options.state.subAgentsByRole();
  // Ranks are 0-3: one bucket per rank, in the agents' order, is the stable sort by rank without
  // its comparisons (a browsed filter of 100,000 agents is laid out every frame).
  const byRank: TreeLine[][] = [[], [], [], []];
  for (const agent of options.state.agents.values()) {
    if (!matchesFilter(agent, filter)) continue;
    const rare =
      agent.parentId !== undefined && (counts.get(agent.role ?? '?') ?? 0) <= RARE_ROLE_AGENTS;
    byRank[agentRank(agent, rare)]?.push({ text: '', agent, keep: false, lead: '' });
  }
  const lines = byRank.flat();
  return options.layout === false ? lines : layOutLines(lines, options);
}

// The rows of `agents` laid out together (one column plan for all).
function rowsFor(
  agents: ReadonlyArray<{ agent: AgentView; lead: string }>,
  options: TreeOptions,
): Map<AgentView, string> {
  const { state, palette: p, width, now } = options;
  const showCost = state.totalCost() > 0;
  const cells = new Map<AgentView, RowCells>();
  for (const { agent, lead } of agents) {
    const failed = agent.status === 'failed' || agent.status === 'timed_out';
    const subtree = agent.children.length > 0 ? state.subtreeTokens(agent.id) : undefined;
    cells.set(agent, {
      left: `${lead}${options.glyph(agent)} ${failed ? p.red(agent.id) : agent.id}`,
      role: p.dim(agent.role ?? ''),
      // A failure's reason is in the failures section, in full.
      activity: oneLine(agent.activity),
      steps: `${agent.steps} step${agent.steps === 1 ? '' : 's'}`,
      tokens: `${formatTokens(totalTokens(agent.usage))} tok`,
      subtree: subtree === undefined ? '' : `Σ ${formatTokens(subtree)}`,
      cost: showCost ? formatCost(state.subtreeCost(agent.id)) : '',
      time: formatDuration((agent.endTs ?? now) - agent.startTs),
      progress: agent.progress === undefined ? '' : p.dim(oneLine(agent.progress)),
    });
  }
  const plan = planColumns([...cells.values()], width);
  const rows = new Map<AgentView, string>();
  for (const [agent, row] of cells) rows.set(agent, fitRow(row, plan));
  return rows;
}

/**
 * Fits tree lines into `maxLines`: kept lines first (roots, fold counts, rare
 * roles), then working agents, idle ones, failed ones (the failures section
 * lists them too) and finished ones, shown in tree order, with one last line
 * counting what is hidden.
 */
export function fitTree(
  lines: readonly TreeLine[],
  maxLines: number,
  palette: Palette,
  width: number,
  hint = '',
): TreeLine[] {
  if (lines.length <= maxLines) return [...lines];
  const budget = Math.max(maxLines - 1, 0);
  const rank = (line: TreeLine): number => {
    // A line for agents left out is never shown: they are counted with the rest hidden.
    if (line.hidden !== undefined) return 4;
    if (line.keep || line.agent === undefined) return -1;
    return fitRank(line.agent);
  };
  const kept = new Set<TreeLine>();
  for (const level of [-1, 0, 1, 2, 3]) {
    for (const line of lines) {
      if (kept.size >= budget) break;
      if (rank(line) === level) kept.add(line);
    }
  }
  let hidden = 0;
  let running = 0;
  for (const line of lines) {
    if (kept.has(line)) continue;
    hidden += line.hidden?.agents ?? 1;
    running += line.hidden?.running ?? (line.agent?.status === 'running' ? 1 : 0);
  }
  return [
    ...lines.filter((line) => kept.has(line)),
    {
      text: palette.dim(
        cutToWidth(`… ${hidden} more not shown (${running} running)${hint}`, width),
      ),
      agent: undefined,
      keep: true,
    },
  ];
}
