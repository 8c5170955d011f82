import type { AgentFilter, TreeLine } from './agent-tree.js';
import { describeFilter, roleCounts } from './agent-tree.js';
import type { KeyName } from './keys.js';
import type { RunState } from './run-state.js';
import { cutToWidth, type Palette, padToWidth } from './terminal.js';

/** What the interactive view asks of the program running it. */
export interface LiveActions {
  /** Stops the whole run (q, Ctrl-C): as Ctrl-C does without the view. */
  stop(): void;
  /** Cancels one agent and its sub-agents (c, then y). */
  cancel(agentId: string): void;
}

/** What a key asks the renderer to do after the navigator took it. */
export type KeyOutcome = 'redraw' | 'none';

/**
 * The interactive part of the live view, htop-like: a selection that moves
 * through every agent (the list scrolls; nothing is out of reach), a filter
 * by status or role, an agent's transcript opened with Enter (scrollable, it
 * follows new lines at the end), cancelling the selected agent after a y/n,
 * and stopping the run. It holds only what the person chose; the renderer
 * gives it the lines to choose from.
 */
export class LiveNavigator {
  readonly #actions: LiveActions;
  readonly #state: RunState;
  /** The selected agent's id (undefined: the overview, nothing selected). */
  selected: string | undefined;
  /** The agent whose transcript is open. */
  open: string | undefined;
  /** First transcript line shown; undefined follows the end. */
  #detailTop: number | undefined;
  #detailHeight = 10;
  #detailTotal = 0;
  #filterIndex = 0;
  #listTop = 0;
  /** The agent ids of the list as last drawn, in order, and the page height. */
  #ids: string[] = [];
  #page = 10;
  #confirm: string | undefined;
  #notice: string | undefined;

  constructor(state: RunState, actions: LiveActions) {
    this.#state = state;
    this.#actions = actions;
  }

  /** The filters `f` cycles through: all, running, failed, done, then each role. */
  filters(): AgentFilter[] {
    return [
      { kind: 'all' },
      { kind: 'status', status: 'running' },
      { kind: 'status', status: 'failed' },
      { kind: 'status', status: 'done' },
      ...[...roleCounts(this.#state).keys()].map((role): AgentFilter => ({ kind: 'role', role })),
    ];
  }

  get filter(): AgentFilter {
    return this.filters()[this.#filterIndex] ?? { kind: 'all' };
  }

  /** True when the list is browsed (a selection or a filter): it shows a scrolling window. */
  get browsing(): boolean {
    return this.selected !== undefined || this.filter.kind !== 'all';
  }

  /** Takes one key. */
  press(key: KeyName): KeyOutcome {
    if (this.#confirm !== undefined) {
      const id = this.#confirm;
      this.#confirm = undefined;
      if (key === 'char:y' || key === 'char:Y') {
        this.#actions.cancel(id);
        this.#notice = `cancelling ${id}…`;
      } else {
        this.#notice = 'not cancelled';
      }
      return 'redraw';
    }
    this.#notice = undefined;
    if (key === 'ctrlC' || key === 'char:q') {
      this.#notice = 'stopping the run… (Ctrl-C again to leave at once)';
      this.#actions.stop();
      return 'redraw';
    }
    if (key === 'char:c') return this.#askCancel();
    if (this.open !== undefined) return this.#detailKey(key);
    switch (key) {
      case 'up':
      case 'char:k':
        return this.#move(-1);
      case 'down':
      case 'char:j':
        return this.#move(1);
      case 'pageUp':
        return this.#move(-Math.max(1, this.#page - 1));
      case 'pageDown':
        return this.#move(Math.max(1, this.#page - 1));
      case 'home':
      case 'char:g':
        return this.#moveTo(0);
      case 'end':
      case 'char:G':
        return this.#moveTo(this.#ids.length - 1);
      case 'enter':
      case 'right':
      case 'char:l': {
        const id = this.selected ?? this.#ids[0];
        if (id === undefined) return 'none';
        this.selected = id;
        this.open = id;
        this.#detailTop = undefined;
        return 'redraw';
      }
      case 'escape':
      case 'left':
      case 'char:h':
        this.selected = undefined;
        this.#filterIndex = 0;
        this.#listTop = 0;
        return 'redraw';
      case 'char:f': {
        this.#filterIndex = (this.#filterIndex + 1) % this.filters().length;
        this.#listTop = 0;
        return 'redraw';
      }
      case 'char:F': {
        const count = this.filters().length;
        this.#filterIndex = (this.#filterIndex + count - 1) % count;
        this.#listTop = 0;
        return 'redraw';
      }
      default:
        return 'none';
    }
  }

  /** Leaves every mode (the run ended): the overview again. */
  reset(): void {
    this.selected = undefined;
    this.open = undefined;
    this.#filterIndex = 0;
    this.#confirm = undefined;
    this.#notice = undefined;
  }

  #askCancel(): KeyOutcome {
    const id = this.open ?? this.selected;
    const agent = id === undefined ? undefined : this.#state.agents.get(id);
    if (agent === undefined) {
      this.#notice = 'select an agent first (↑↓), then c cancels it';
      return 'redraw';
    }
    if (agent.status !== 'running') {
      this.#notice = `${agent.id} has already ${agent.status === 'completed' ? 'completed' : 'ended'}`;
      return 'redraw';
    }
    this.#confirm = agent.id;
    return 'redraw';
  }

  #detailKey(key: KeyName): KeyOutcome {
    const last = Math.max(0, this.#detailTotal - this.#detailHeight);
    const top = this.#detailTop ?? last;
    const scrollTo = (line: number): KeyOutcome => {
      const next = Math.min(Math.max(0, line), last);
      this.#detailTop = next >= last ? undefined : next;
      return 'redraw';
    };
    switch (key) {
      case 'escape':
      case 'left':
      case 'char:h':
        this.open = undefined;
        return 'redraw';
      case 'up':
      case 'char:k':
        return scrollTo(top - 1);
      case 'down':
      case 'char:j':
        return scrollTo(top + 1);
      case 'pageUp':
      case 'char:b':
        return scrollTo(top - Math.max(1, this.#detailHeight - 1));
      case 'pageDown':
      case 'char: ':
        return scrollTo(top + Math.max(1, this.#detailHeight - 1));
      case 'home':
      case 'char:g':
        return scrollTo(0);
      case 'end':
      case 'char:G':
        this.#detailTop = undefined;
        return 'redraw';
      default:
        return 'none';
    }
  }

  #move(delta: number): KeyOutcome {
    if (this.#ids.length === 0) return 'none';
    const index = this.selected === undefined ? -1 : this.#ids.indexOf(this.selected);
    if (index < 0) return this.#moveTo(delta < 0 ? this.#ids.length - 1 : 0);
    return this.#moveTo(index + delta);
  }

  #moveTo(index: number): KeyOutcome {
    if (this.#ids.length === 0) return 'none';
    this.selected = this.#ids[Math.min(Math.max(index, 0), this.#ids.length - 1)];
    return 'redraw';
  }

  /**
   * The list window: `lines` (every agent in order) scrolled so the selected
   * agent shows, with a marker and reverse video on it and counts of what is
   * above and below. Remembers the order for the next key. `layOut` makes
   * the text of the lines shown (lines made without it, see TreeOptions.layout).
   */
  window(
    lines: readonly TreeLine[],
    maxLines: number,
    width: number,
    palette: Palette,
    layOut: (shown: readonly TreeLine[]) => readonly TreeLine[] = (shown) => shown,
  ): string[] {
    this.#ids = lines.flatMap((line) => (line.agent === undefined ? [] : [line.agent.id]));
    if (this.selected !== undefined && !this.#ids.includes(this.selected)) {
      this.selected = this.#ids[0];
    }
    const index = lines.findIndex((line) => line.agent?.id === this.selected);
    const mark = (line: TreeLine): string => {
      const chosen = line.agent !== undefined && line.agent.id === this.selected;
      const text = `${chosen ? '›' : ' '} ${cutToWidth(line.text, width - 2)}`;
      return chosen ? palette.inverse(padToWidth(text, width)) : text;
    };
    if (lines.length === 0) {
      return [palette.dim(`  no agent matches the filter (${describeFilter(this.filter)})`)];
    }
    if (lines.length <= maxLines) {
      this.#page = maxLines;
      this.#listTop = 0;
      return layOut(lines).map(mark);
    }
    const visible = Math.max(maxLines - 2, 1);
    this.#page = visible;
    if (index >= 0) {
      if (index < this.#listTop) this.#listTop = index;
      if (index >= this.#listTop + visible) this.#listTop = index - visible + 1;
    }
    this.#listTop = Math.min(Math.max(this.#listTop, 0), lines.length - visible);
    const below = lines.length - this.#listTop - visible;
    return [
      palette.dim(this.#listTop > 0 ? `  ↑ ${this.#listTop} more` : ''),
      ...layOut(lines.slice(this.#listTop, this.#listTop + visible)).map(mark),
      palette.dim(below > 0 ? `  ↓ ${below} more` : ''),
    ];
  }

  /** The transcript window: `lines` from the chosen top (or the end), `height` lines. */
  transcriptWindow(lines: readonly string[], height: number): string[] {
    this.#detailHeight = height;
    this.#detailTotal = lines.length;
    const last = Math.max(0, lines.length - height);
    const top = Math.min(this.#detailTop ?? last, last);
    return lines.slice(top, top + height);
  }

  /** Where the transcript is: "lines 1–20 of 84" and whether it follows new lines. */
  transcriptPosition(): string {
    const last = Math.max(0, this.#detailTotal - this.#detailHeight);
    const top = Math.min(this.#detailTop ?? last, last);
    const end = Math.min(top + this.#detailHeight, this.#detailTotal);
    return `lines ${this.#detailTotal === 0 ? 0 : top + 1}–${end} of ${this.#detailTotal}${this.#detailTop === undefined ? ' · following' : ''}`;
  }

  /** The key line at the bottom: a question, a notice, or the keys of the current mode. */
  footer(width: number, palette: Palette): string {
    if (this.#confirm !== undefined) {
      const agent = this.#state.agents.get(this.#confirm);
      const below = agent === undefined ? 0 : countRunningBelow(this.#state, agent.id);
      return palette.yellow(
        cutToWidth(
          `Cancel ${this.#confirm}${below > 0 ? ` and its ${below} running sub-agent${below === 1 ? '' : 's'}` : ''}? y/n`,
          width,
        ),
      );
    }
    const keys =
      this.open !== undefined
        ? 'esc back · ↑↓ PgUp PgDn scroll · End follow · c cancel · q stop'
        : `↑↓ select · ⏎ open · f filter: ${describeFilter(this.filter)} · c cancel · q stop`;
    const notice = this.#notice === undefined ? '' : `${this.#notice} · `;
    return cutToWidth(`${palette.yellow(notice)}${palette.dim(keys)}`, width);
  }
}

function countRunningBelow(state: RunState, id: string): number {
  const agent = state.agents.get(id);
  if (agent === undefined) return 0;
  let count = 0;
  for (const child of agent.children) {
    const view = state.agents.get(child);
    if (view === undefined) continue;
    if (view.status === 'running') count += 1;
    count += countRunningBelow(state, child);
  }
  return count;
}
