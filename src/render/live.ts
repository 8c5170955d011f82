import type { AgentEvent } from '../events/schema.js';
import { totalTokens } from '../model/types.js';
import { createRedactor } from '../util/redact.js';
import { finalAnswerBlock } from './answer.js';
import { chatLayout } from './chat-layout.js';
import { fitParts, fitRow, planColumns, type RowCells } from './columns.js';
import type { EventRenderer } from './renderer.js';
import {
  type AgentView,
  formatCost,
  formatDuration,
  formatTokens,
  type PriceFunction,
  RunState,
} from './run-state.js';
import { summaryLines } from './summary.js';
import {
  createPalette,
  cutChars,
  cutToWidth,
  FrameWriter,
  oneLine,
  type Palette,
  type TerminalOutput,
  wrapText,
} from './terminal.js';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPINNER_FRAME_MS = 80;
const MAX_LOG_ENTRIES = 200;

/** Options for a LiveRenderer. */
export interface LiveRendererOptions {
  output: TerminalOutput;
  env?: NodeJS.ProcessEnv | undefined;
  /** Colour (default true: the live view only runs on a colour-capable TTY). */
  color?: boolean | undefined;
  /** The clock for elapsed times and the spinner (default Date.now). */
  now?: (() => number) | undefined;
  /** Redraw at most this often, in milliseconds (default 100). */
  frameIntervalMs?: number | undefined;
  /** A label for the header: the model in use ("offline (heuristic)"). */
  model?: string | undefined;
  price?: PriceFunction | undefined;
}

type TreeEntry =
  | { kind: 'agent'; agent: AgentView; guide: string }
  | { kind: 'fold'; text: string };

interface TreeLine {
  text: string;
  agent: AgentView | undefined;
  keep: boolean;
}

/**
 * The live multi-agent view: a tree of agents (status glyph or spinner, role,
 * current activity, steps, tokens for the agent and its subtree, cost,
 * elapsed, latest progress note) over a scrolling log of recent steps in the
 * chat layout. Events only mark the view dirty; a timer redraws at a bounded
 * rate. Past a screen's worth of agents, finished ones fold into counts while
 * failures stay visible. `finish()` leaves the last frame and prints the summary.
 */
export class LiveRenderer implements EventRenderer {
  readonly state: RunState;
  readonly #output: TerminalOutput;
  readonly #frames: FrameWriter;
  readonly #palette: Palette;
  readonly #redact: (text: string) => string;
  readonly #now: () => number;
  readonly #intervalMs: number;
  readonly #model: string | undefined;
  readonly #log: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #dirty = false;
  #finished = false;

  constructor(options: LiveRendererOptions) {
    this.#output = options.output;
    this.#frames = new FrameWriter(options.output);
    this.#palette = createPalette(options.color ?? true);
    this.#redact = createRedactor(options.env);
    this.#now = options.now ?? Date.now;
    this.#intervalMs = options.frameIntervalMs ?? 100;
    this.#model = options.model;
    this.state = new RunState({ price: options.price });
  }

  /** Starts the redraw timer. Without it, frames are drawn only by `draw()` and `finish()`. */
  start(): void {
    if (this.#timer !== undefined || this.#finished) return;
    this.#timer = setInterval(() => this.#tick(), this.#intervalMs);
    this.#timer.unref();
  }

  /** Takes the view off the screen (for a question on the terminal) until `resume()`. */
  pause(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#frames.clear();
    this.#frames.done();
  }

  /** Puts the view back after `pause()`. */
  resume(): void {
    if (this.#finished) return;
    this.start();
    this.draw();
  }

  observe(event: AgentEvent): void {
    this.state.apply(event);
  }

  handle(event: AgentEvent): void {
    this.state.apply(event);
    this.#appendLog(event);
    this.#dirty = true;
  }

  /** Draws one frame now. */
  draw(): void {
    this.#dirty = false;
    this.#frames.render(this.frame().map(this.#redact));
  }

  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.draw();
    this.#frames.done();
    if (this.state.agents.size > 0) {
      const width = Math.max((this.#output.columns || 80) - 1, 20);
      const lines = [
        ...summaryLines(this.state, this.#palette, width),
        ...finalAnswerBlock(this.state.final, width, this.#palette),
      ];
      this.#output.write(`\n${lines.map(this.#redact).join('\n')}\n`);
    }
  }

  /** The lines of the current frame (header, tree, failures, log), fitted to the terminal's size. */
  frame(): string[] {
    const rows = Math.max(this.#output.rows || 24, 8);
    const width = this.#width();
    const logHeight = Math.min(8, Math.max(2, Math.floor(rows / 4)));
    const failures = this.#failureLines(width, Math.max(2, Math.floor(rows / 5)));
    const treeHeight = Math.max(rows - 3 - logHeight - failures.length, 2);
    const log = this.#log.slice(-logHeight).map((line) => cutToWidth(line, width));
    return [
      this.#header(width),
      ...this.#tree(treeHeight, width),
      ...failures,
      this.#palette.dim(cutToWidth('── recent ──', width)),
      ...log,
    ];
  }

  /** Columns a frame line may use: one less than the window, so that no line wraps. */
  #width(): number {
    return Math.max((this.#output.columns || 80) - 1, 20);
  }

  /**
   * The failures section: every failed agent with as much of its reason as
   * fits (the end of a reason often says what to do), newest last, at most
   * `maxLines`; the summary lists every one in full.
   */
  #failureLines(width: number, maxLines: number): string[] {
    const p = this.#palette;
    const failed = [...this.state.agents.values()].filter(
      (agent) => agent.status === 'failed' || agent.status === 'timed_out',
    );
    if (failed.length === 0) return [];
    const lines: string[] = [];
    const shown = failed.slice(-maxLines);
    const hidden = failed.length - shown.length;
    const perAgent = Math.max(1, Math.floor((maxLines - (hidden > 0 ? 1 : 0)) / shown.length));
    for (const agent of shown) {
      const reason = oneLine(agent.error ?? agent.status.replace('_', ' '));
      const wrapped = wrapText(`✖ ${agent.id}: ${reason}`, width, '  ');
      const kept = wrapped.slice(0, perAgent);
      if (wrapped.length > perAgent && kept.length > 0) {
        // Keep the end of the reason (its advice) when the middle has to go.
        const tail = oneLine(reason).slice(-Math.max(10, width - 6));
        kept[kept.length - 1] = cutToWidth(`  …${tail}`, width);
      }
      lines.push(...kept.map((line) => p.red(line)));
    }
    const title = p.dim(
      cutToWidth(
        `── failures (${failed.length}${hidden > 0 ? `, ${hidden} more in the summary` : ''}) ──`,
        width,
      ),
    );
    return [title, ...lines.slice(-maxLines)];
  }

  #tick(): void {
    // The spinner and elapsed times move while anything runs, so redraw then too.
    if (this.#dirty || this.#frames.resized || this.state.countByStatus().running > 0) {
      this.draw();
    }
  }

  #time(): number {
    return this.#finished ? (this.state.endTs ?? this.state.lastTs) : this.#now();
  }

  #header(width: number): string {
    const p = this.#palette;
    const counts = this.state.countByStatus();
    const now = this.#time();
    const start = this.state.startTs ?? this.state.agents.values().next().value?.startTs ?? now;
    const cost = this.state.totalCost();
    const status = [
      `${this.state.agents.size} agents: ${counts.running} running`,
      `${counts.completed} done`,
      ...(counts.failed > 0 ? [p.red(`${counts.failed} failed`)] : []),
      ...(counts.cancelled > 0 ? [`${counts.cancelled} cancelled`] : []),
      ...(counts.timed_out > 0 ? [p.red(`${counts.timed_out} timed out`)] : []),
    ].join(', ');
    // Least important go first when the window is narrow: the model, then the run id.
    return fitParts(
      [
        { text: p.bold('troupe'), drop: 2 },
        ...(this.state.runId === undefined ? [] : [{ text: this.state.runId, drop: 3 }]),
        ...(this.#model === undefined ? [] : [{ text: this.#model, drop: 4 }]),
        { text: formatDuration((this.state.endTs ?? now) - start), drop: 0 },
        { text: status, drop: 0 },
        { text: `${formatTokens(totalTokens(this.state.totalUsage()))} tok`, drop: 0 },
        ...(cost > 0 ? [{ text: formatCost(cost), drop: 1 }] : []),
      ],
      p.dim(' · '),
      width,
    );
  }

  #glyph(agent: AgentView): string {
    const p = this.#palette;
    switch (agent.status) {
      case 'completed':
        return p.green('✔');
      case 'failed':
        return p.red('✖');
      case 'cancelled':
        return p.yellow('⊘');
      case 'timed_out':
        return p.red('⏱');
      case 'running':
        if (agent.activity.startsWith('waiting')) return p.dim('◌');
        return p.cyan(SPINNER[Math.floor(this.#time() / SPINNER_FRAME_MS) % SPINNER.length] ?? '*');
    }
  }

  #tree(maxLines: number, width: number): string[] {
    let lines = this.#treeLines(false, width);
    if (lines.length > maxLines) lines = this.#treeLines(true, width);
    if (lines.length > maxLines) {
      // Still too tall: keep roots and fold counts, then running agents, then
      // failures (also listed below the tree), then the rest; count what is hidden.
      const budget = maxLines - 1;
      const rank = (line: TreeLine): number =>
        line.keep
          ? 0
          : line.agent?.status === 'running'
            ? 1
            : line.agent?.status === 'failed' || line.agent?.status === 'timed_out'
              ? 2
              : 3;
      const kept = new Set<TreeLine>();
      for (const level of [0, 1, 2, 3]) {
        for (const line of lines) {
          if (kept.size >= budget) break;
          if (rank(line) === level) kept.add(line);
        }
      }
      const hidden = lines.filter((line) => !kept.has(line));
      const running = hidden.filter((line) => line.agent?.status === 'running').length;
      lines = [
        ...lines.filter((line) => kept.has(line)),
        {
          text: this.#palette.dim(
            cutToWidth(`… ${hidden.length} more not shown (${running} running)`, width),
          ),
          agent: undefined,
          keep: true,
        },
      ];
    }
    return lines.map((line) => line.text);
  }

  #treeLines(fold: boolean, width: number): TreeLine[] {
    const now = this.#time();
    const p = this.#palette;
    const showCost = this.state.totalCost() > 0;
    const entries: TreeEntry[] = [];
    const visit = (agent: AgentView, prefix: string, isLast: boolean, isRoot: boolean): void => {
      entries.push({
        kind: 'agent',
        agent,
        guide: isRoot ? '' : `${prefix}${isLast ? '└─ ' : '├─ '}`,
      });
      const childPrefix = isRoot ? '' : `${prefix}${isLast ? '   ' : '│  '}`;
      const children = agent.children
        .map((child) => this.state.agents.get(child))
        .filter((child): child is AgentView => child !== undefined);
      const folded = fold ? children.filter((child) => this.#foldable(child)) : [];
      const shown = children.filter((child) => !folded.includes(child));
      shown.forEach((child, index) => {
        visit(child, childPrefix, index === shown.length - 1 && folded.length === 0, false);
      });
      if (folded.length > 0) {
        const completed = folded.filter((child) => child.status === 'completed').length;
        const cancelled = folded.length - completed;
        const roles = [...new Set(folded.map((child) => child.role ?? '?'))].join(', ');
        const tokens = folded.reduce(
          (sum, child) => sum + totalTokens(this.state.subtreeUsage(child.id)),
          0,
        );
        entries.push({
          kind: 'fold',
          text: cutToWidth(
            `${p.dim(`${childPrefix}└─ `)}${p.green('✔')} ${p.dim(`${folded.length} finished (${completed} completed${cancelled > 0 ? `, ${cancelled} cancelled` : ''}) · ${roles} · ${formatTokens(tokens)} tok`)}`,
            width,
          ),
        });
      }
    };
    this.state.roots.forEach((root, index) => {
      const agent = this.state.agents.get(root);
      if (agent !== undefined) visit(agent, '', index === this.state.roots.length - 1, true);
    });

    const rows = new Map<AgentView, RowCells>();
    for (const entry of entries) {
      if (entry.kind !== 'agent') continue;
      const { agent, guide } = entry;
      const failed = agent.status === 'failed' || agent.status === 'timed_out';
      const subtree =
        agent.children.length > 0 ? totalTokens(this.state.subtreeUsage(agent.id)) : undefined;
      rows.set(agent, {
        left: `${p.dim(guide)}${this.#glyph(agent)} ${failed ? p.red(agent.id) : agent.id}`,
        role: p.dim(agent.role ?? ''),
        // A failure's reason is in the failures section, in full.
        activity: oneLine(agent.activity),
        steps: `${agent.steps} step${agent.steps === 1 ? '' : 's'}`,
        tokens: `${formatTokens(totalTokens(agent.usage))} tok`,
        subtree: subtree === undefined ? '' : `Σ ${formatTokens(subtree)}`,
        cost: showCost ? formatCost(this.state.subtreeCost(agent.id)) : '',
        time: formatDuration((agent.endTs ?? now) - agent.startTs),
        progress: agent.progress === undefined ? '' : p.dim(oneLine(agent.progress)),
      });
    }
    const plan = planColumns([...rows.values()], width);
    return entries.map((entry): TreeLine => {
      if (entry.kind === 'fold') return { text: entry.text, agent: undefined, keep: true };
      const { agent } = entry;
      const row = rows.get(agent);
      return {
        text: row === undefined ? '' : fitRow(row, plan),
        agent,
        keep: agent.parentId === undefined,
      };
    });
  }

  #foldable(agent: AgentView): boolean {
    if (agent.status !== 'completed' && agent.status !== 'cancelled') return false;
    return agent.children.every((child) => {
      const view = this.state.agents.get(child);
      return view === undefined || this.#foldable(view);
    });
  }

  #appendLog(event: AgentEvent): void {
    const p = this.#palette;
    const entries: string[] = [];
    const lines = chatLayout(event);
    if (event.type === 'agent.spawned') {
      entries.push(
        `${p.cyan('▸')} ${event.agentId} started: ${cutChars(oneLine(event.task), 100)}`,
      );
    } else if (event.type === 'agent.finished') {
      const failed = event.status !== 'completed';
      const detail = event.error?.message ?? event.final ?? '';
      entries.push(
        `${failed ? p.red('✖') : p.green('✔')} ${event.agentId} ${event.status.replace('_', ' ')}${detail === '' ? '' : `: ${cutChars(oneLine(detail), failed ? 400 : 100)}`}`,
      );
    } else if (event.type === 'message.received') {
      lines.push(`  📨 ${event.channel} from ${event.from}`);
    } else if (event.type === 'run.finished') {
      entries.push(p.bold(`run ${event.status}`));
    }
    // Each log line names its agent, so the log still reads when it scrolls.
    for (const line of lines) {
      const text = `${p.dim(event.agentId.padEnd(14))} ${line.trimStart()}`;
      entries.push(line.includes('❌') ? p.red(text) : text);
    }
    this.#log.push(...entries.map((entry) => cutToWidth(entry, 400)));
    if (this.#log.length > MAX_LOG_ENTRIES) this.#log.splice(0, this.#log.length - MAX_LOG_ENTRIES);
  }
}
