import type { AgentEvent } from '../events/schema.js';
import { totalTokens } from '../model/types.js';
import { createRedactor } from '../util/redact.js';
import { TranscriptStore } from './agent-transcript.js';
import { filteredLines, fitTree, layOutLines, type TreeLine, treeLines } from './agent-tree.js';
import { finalAnswerBlock } from './answer.js';
import { chatLayout } from './chat-layout.js';
import { fitParts } from './columns.js';
import type { KeyName } from './keys.js';
import { type LiveActions, LiveNavigator } from './live-navigator.js';
import type { EventRenderer } from './renderer.js';
import { roleLines, roleProgress } from './role-progress.js';
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
/** Recent events kept for the log at the bottom of the view (formatted only when drawn). */
const MAX_LOG_EVENTS = 200;
/** The events that make log lines (see #logEntries and chatLayout; a response only with thinking). */
const LOGGED: ReadonlySet<AgentEvent['type']> = new Set([
  'agent.spawned',
  'agent.finished',
  'message.received',
  'run.finished',
  'model.response',
  'tool.call',
  'tool.result',
  'warning.raised',
  'history.compressed',
]);

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
  /**
   * Makes the view interactive (keys through `press`): select and browse
   * every agent, open its transcript, filter, cancel an agent, stop the run.
   */
  actions?: LiveActions | undefined;
}

/** Sub-agents from which the per-role progress lines show. */
const ROLE_LINES_FROM = 4;

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
  // The last MAX_LOG_EVENTS events, a ring: #logNext is where the next goes.
  readonly #recent: AgentEvent[] = [];
  #logNext = 0;
  readonly #transcripts = new TranscriptStore();
  readonly #navigator: LiveNavigator | undefined;
  #timer: NodeJS.Timeout | undefined;
  #dirty = false;
  #finished = false;
  // No timer frame before this (performance.now()): see draw().
  #restUntil = 0;

  constructor(options: LiveRendererOptions) {
    this.#output = options.output;
    this.#frames = new FrameWriter(options.output);
    this.#palette = createPalette(options.color ?? true);
    this.#redact = createRedactor(options.env);
    this.#now = options.now ?? Date.now;
    this.#intervalMs = options.frameIntervalMs ?? 100;
    this.#model = options.model;
    this.state = new RunState({ price: options.price });
    this.#navigator =
      options.actions === undefined ? undefined : new LiveNavigator(this.state, options.actions);
  }

  /** True when the view takes keys (`press`). */
  get interactive(): boolean {
    return this.#navigator !== undefined && !this.#finished;
  }

  /** Takes one key of the interactive view and redraws when it changed anything. */
  press(key: KeyName): void {
    if (this.#navigator === undefined || this.#finished) return;
    // The list as on screen now, so a move goes to the row the person sees next.
    this.frame();
    if (this.#navigator.press(key) === 'redraw') this.draw();
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
    if (this.#navigator !== undefined) this.#transcripts.record(event);
    this.#appendLog(event);
    this.#dirty = true;
  }

  /** Draws one frame now. */
  draw(): void {
    const started = performance.now();
    this.#dirty = false;
    this.#frames.render(this.frame().map(this.#redact));
    // The view takes at most a tenth of the main thread, which also runs the agents' events:
    // after a frame that took long (tens of thousands of agents), the timer waits nine times as long.
    const ended = performance.now();
    this.#restUntil = ended + (ended - started) * 9;
  }

  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    // The last frame is the overview, whatever was open.
    this.#navigator?.reset();
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
    const navigator = this.interactive ? this.#navigator : undefined;
    if (navigator?.open !== undefined) return this.#transcriptFrame(navigator, rows, width);
    const footer = navigator === undefined ? [] : [navigator.footer(width, this.#palette)];
    const logHeight = Math.min(8, Math.max(2, Math.floor(rows / 4))) - footer.length;
    const failures = this.#failureLines(width, Math.max(2, Math.floor(rows / 5)));
    const room = Math.max(rows - 3 - logHeight - failures.length - footer.length, 2);
    const roles = this.#roleLines(width, room);
    const treeHeight = Math.max(room - roles.length, 2);
    const log = this.#logLines(logHeight).map((line) => cutToWidth(line, width));
    return [
      this.#header(width),
      ...roles,
      ...this.#agentList(treeHeight, width, navigator),
      ...failures,
      this.#palette.dim(cutToWidth('── recent ──', width)),
      ...log,
      ...footer,
    ];
  }

  /**
   * One progress line per sub-agent role (done of total, failed, running,
   * tokens, ETA), once there are enough sub-agents for a count to help: at
   * most a third of `room`.
   */
  #roleLines(width: number, room: number): string[] {
    const subAgents = this.state.agents.size - this.state.roots.length;
    if (subAgents < ROLE_LINES_FROM) return [];
    const progress = roleProgress(this.state, this.#time());
    return roleLines(progress, this.#palette, width, Math.max(1, Math.floor(room / 3)));
  }

  #agentList(maxLines: number, width: number, navigator: LiveNavigator | undefined): string[] {
    const options = {
      state: this.state,
      palette: this.#palette,
      now: this.#time(),
      glyph: (agent: AgentView) => this.#glyph(agent),
    };
    // Rows are laid out only for the lines that show (see TreeOptions.layout).
    if (navigator?.browsing === true) {
      // Browsing: every agent, unfolded, in a window that follows the selection.
      const inner = { ...options, width: width - 2, fold: false, layout: false };
      const filter = navigator.filter;
      const lines =
        filter.kind === 'all'
          ? treeLines({ ...inner, sort: this.state.agents.size > maxLines })
          : filteredLines({ ...inner, sort: true }, filter);
      return navigator.window(lines, maxLines, width, this.#palette, (shown) =>
        layOutLines(shown, { ...inner, sort: false }),
      );
    }
    const inner = { ...options, width, layout: false };
    // Unfolded, the list has a line per agent: past the room, go straight to the folded one.
    let lines: TreeLine[] =
      this.state.agents.size > maxLines ? [] : treeLines({ ...inner, fold: false, sort: false });
    if (lines.length === 0 || lines.length > maxLines)
      lines = treeLines({ ...inner, fold: true, sort: true, limit: maxLines - 1 });
    const hint = navigator === undefined ? '' : ' · ↓ browses them all';
    const fitted = layOutLines(fitTree(lines, maxLines, this.#palette, width, hint), {
      ...inner,
      fold: false,
      sort: false,
    });
    if (navigator !== undefined) navigator.window(fitted, fitted.length, width, this.#palette);
    return fitted.map((line) => line.text);
  }

  /** An agent's transcript over the whole window: its header, its story, the keys. */
  #transcriptFrame(navigator: LiveNavigator, rows: number, width: number): string[] {
    const p = this.#palette;
    const id = navigator.open ?? '';
    const agent = this.state.agents.get(id);
    const now = this.#time();
    const head = fitParts(
      [
        { text: `${agent === undefined ? '?' : this.#glyph(agent)} ${p.bold(id)}`, drop: 0 },
        ...(agent?.role === undefined ? [] : [{ text: p.dim(agent.role), drop: 3 }]),
        {
          text:
            agent === undefined
              ? ''
              : oneLine(
                  agent.status === 'running' ? agent.activity : agent.status.replace('_', ' '),
                ),
          drop: 1,
        },
        ...(agent === undefined
          ? []
          : [
              { text: `${agent.steps} step${agent.steps === 1 ? '' : 's'}`, drop: 2 },
              { text: `${formatTokens(totalTokens(agent.usage))} tok`, drop: 0 },
              { text: formatDuration((agent.endTs ?? now) - agent.startTs), drop: 0 },
            ]),
      ],
      p.dim(' · '),
      width,
    );
    const height = Math.max(rows - 4, 1);
    const body = navigator.transcriptWindow(this.#transcripts.lines(id, width, p), height);
    return [
      head,
      p.dim(cutToWidth(`── transcript · ${navigator.transcriptPosition()} ──`, width)),
      ...body,
      ...Array.from({ length: height - body.length }, () => ''),
      navigator.footer(width, p),
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
    const failed: AgentView[] = [];
    for (const agent of this.state.agents.values())
      if (agent.status === 'failed' || agent.status === 'timed_out') failed.push(agent);
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
    if (performance.now() < this.#restUntil) return;
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

  // Events only go into the ring: the few lines a frame shows are made when it is drawn
  // (formatting every event cost the main thread more than the trace's writing, per event).
  #appendLog(event: AgentEvent): void {
    if (!LOGGED.has(event.type)) return;
    if (event.type === 'model.response' && (event.thinking ?? '').trim() === '') return;
    this.#recent[this.#logNext % MAX_LOG_EVENTS] = event;
    this.#logNext += 1;
  }

  /** The last `count` lines of the log, from the most recent events. */
  #logLines(count: number): string[] {
    const lines: string[] = [];
    const oldest = Math.max(0, this.#logNext - MAX_LOG_EVENTS);
    for (let index = this.#logNext - 1; index >= oldest && lines.length < count; index -= 1) {
      const event = this.#recent[index % MAX_LOG_EVENTS];
      if (event !== undefined) lines.unshift(...this.#logEntries(event));
    }
    return lines.slice(-count);
  }

  #logEntries(event: AgentEvent): string[] {
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
    return entries.map((entry) => cutToWidth(entry, 400));
  }
}
