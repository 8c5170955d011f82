import { displayWidth } from '../../src/render/terminal.js';

/**
 * A small terminal emulator for the CLI's pseudo-terminal tests: it applies
 * what a program writes (text, CR/LF, cursor movement, erase, the alternate
 * screen) to a grid of `cols` × `rows` cells, and keeps the lines that scroll
 * off the top, so a test reads what a person would see on screen.
 */
export class VirtualScreen {
  cols: number;
  rows: number;
  #grid: string[][];
  #history: string[] = [];
  #x = 0;
  #y = 0;
  #pendingWrap = false;
  #saved: { grid: string[][]; x: number; y: number } | undefined;
  #rest = '';
  /** While the program draws inside a synchronized update: what the screen showed when it began. */
  #shown: { lines: string[]; history: number } | undefined;

  constructor(cols: number, rows: number) {
    this.cols = cols;
    this.rows = rows;
    this.#grid = Array.from({ length: rows }, () => this.#blankRow());
  }

  /** True while the program has the alternate screen up (a full-screen view). */
  get inAlternateScreen(): boolean {
    return this.#saved !== undefined;
  }

  /** The visible lines, trailing spaces removed. */
  lines(): string[] {
    if (this.#shown !== undefined) return [...this.#shown.lines];
    return this.#drawn();
  }

  #drawn(): string[] {
    return this.#grid.map((row) => row.join('').trimEnd());
  }

  /** True while the program is inside a synchronized update (the screen shows the frame before it). */
  get updating(): boolean {
    return this.#shown !== undefined;
  }

  /** The visible screen as text. */
  text(): string {
    return this.lines().join('\n');
  }

  /** Everything that scrolled off the top, then the screen: a terminal's scrollback. */
  transcript(): string {
    const history =
      this.#shown === undefined ? this.#history : this.#history.slice(0, this.#shown.history);
    return [...history, ...this.lines()].join('\n').trimEnd();
  }

  resize(cols: number, rows: number): void {
    const grid = this.#grid.map((row) =>
      row.length >= cols ? row.slice(0, cols) : [...row, ...Array(cols - row.length).fill(' ')],
    );
    this.cols = cols;
    // Lines above a shrinking window go to the scrollback, as in xterm.
    while (grid.length > rows && this.#y > 0) {
      this.#history.push((grid.shift() ?? []).join('').trimEnd());
      this.#y -= 1;
    }
    grid.length = Math.min(grid.length, rows);
    while (grid.length < rows) grid.push(this.#blankRow());
    this.rows = rows;
    this.#grid = grid;
    this.#x = Math.min(this.#x, cols - 1);
    this.#y = Math.min(this.#y, rows - 1);
    this.#pendingWrap = false;
  }

  write(data: string): void {
    const text = this.#rest + data;
    this.#rest = '';
    let index = 0;
    while (index < text.length) {
      const char = text[index] ?? '';
      if (char === '\u001b') {
        const consumed = this.#escape(text, index);
        if (consumed === 0) {
          this.#rest = text.slice(index);
          return;
        }
        index += consumed;
        continue;
      }
      const codePoint = text.codePointAt(index) ?? 32;
      const glyph = String.fromCodePoint(codePoint);
      index += glyph.length;
      this.#put(glyph);
    }
  }

  #blankRow(): string[] {
    return Array(this.cols).fill(' ');
  }

  #lineFeed(): void {
    if (this.#y < this.rows - 1) {
      this.#y += 1;
      return;
    }
    const top = this.#grid.shift() ?? [];
    if (this.#saved === undefined) this.#history.push(top.join('').trimEnd());
    this.#grid.push(this.#blankRow());
  }

  #put(glyph: string): void {
    switch (glyph) {
      case '\r':
        this.#x = 0;
        this.#pendingWrap = false;
        return;
      case '\n':
        this.#lineFeed();
        this.#pendingWrap = false;
        return;
      case '\b':
        this.#x = Math.max(0, this.#x - 1);
        this.#pendingWrap = false;
        return;
      case '\t':
        this.#x = Math.min(this.cols - 1, (Math.floor(this.#x / 8) + 1) * 8);
        return;
      case '\u0007':
        return;
    }
    if ((glyph.codePointAt(0) ?? 32) < 32) return;
    const width = displayWidth(glyph);
    if (width === 0) return;
    if (this.#pendingWrap || this.#x + width > this.cols) {
      this.#x = 0;
      this.#lineFeed();
      this.#pendingWrap = false;
    }
    const row = this.#grid[this.#y] ?? [];
    row[this.#x] = glyph;
    if (width === 2 && this.#x + 1 < this.cols) row[this.#x + 1] = '';
    this.#x += width;
    if (this.#x >= this.cols) {
      this.#x = this.cols - 1;
      this.#pendingWrap = true;
    }
  }

  /** Applies the escape sequence at `start`; returns its length, or 0 when it is incomplete. */
  #escape(text: string, start: number): number {
    const next = text[start + 1];
    if (next === undefined) return 0;
    if (next === ']') {
      const bell = text.indexOf('\u0007', start);
      const st = text.indexOf('\u001b\\', start);
      const ends = [bell === -1 ? -1 : bell + 1, st === -1 ? -1 : st + 2].filter((end) => end > 0);
      return ends.length === 0 ? 0 : Math.min(...ends) - start;
    }
    if (next !== '[') return 2;
    // The ESC itself is checked above; match the rest of a CSI sequence.
    const match = /^\[([?>=]?)([0-9;]*)([ -/]*)([@-~])/.exec(text.slice(start + 1, start + 64));
    if (match === null) return text.length - start > 63 ? 2 : 0;
    const [whole, privateMark, rawParams, , final] = match;
    const params = (rawParams ?? '').split(';').map((part) => Number.parseInt(part, 10));
    const n = (fallback: number): number => {
      const value = params[0];
      return value === undefined || Number.isNaN(value) || value === 0 ? fallback : value;
    };
    this.#pendingWrap = false;
    const row = this.#grid[this.#y] ?? [];
    switch (final) {
      case 'A':
        this.#y = Math.max(0, this.#y - n(1));
        break;
      case 'B':
        this.#y = Math.min(this.rows - 1, this.#y + n(1));
        break;
      case 'C':
        this.#x = Math.min(this.cols - 1, this.#x + n(1));
        break;
      case 'D':
        this.#x = Math.max(0, this.#x - n(1));
        break;
      case 'E':
        this.#y = Math.min(this.rows - 1, this.#y + n(1));
        this.#x = 0;
        break;
      case 'F':
        this.#y = Math.max(0, this.#y - n(1));
        this.#x = 0;
        break;
      case 'G':
        this.#x = Math.min(this.cols - 1, n(1) - 1);
        break;
      case 'H':
      case 'f': {
        const line = params[0];
        const column = params[1];
        this.#y = Math.min(
          this.rows - 1,
          (line === undefined || Number.isNaN(line) ? 1 : Math.max(1, line)) - 1,
        );
        this.#x = Math.min(
          this.cols - 1,
          (column === undefined || Number.isNaN(column) ? 1 : Math.max(1, column)) - 1,
        );
        break;
      }
      case 'J': {
        const mode = Number.isNaN(params[0] ?? Number.NaN) ? 0 : params[0];
        if (mode === 2 || mode === 3) {
          this.#grid = Array.from({ length: this.rows }, () => this.#blankRow());
        } else if (mode === 0) {
          for (let x = this.#x; x < this.cols; x += 1) row[x] = ' ';
          for (let y = this.#y + 1; y < this.rows; y += 1) this.#grid[y] = this.#blankRow();
        } else if (mode === 1) {
          for (let x = 0; x <= this.#x; x += 1) row[x] = ' ';
          for (let y = 0; y < this.#y; y += 1) this.#grid[y] = this.#blankRow();
        }
        break;
      }
      case 'K': {
        const mode = Number.isNaN(params[0] ?? Number.NaN) ? 0 : params[0];
        const [from, to] =
          mode === 1 ? [0, this.#x] : mode === 2 ? [0, this.cols - 1] : [this.#x, this.cols - 1];
        for (let x = from; x <= to; x += 1) row[x] = ' ';
        break;
      }
      case 'h':
      case 'l':
        // Synchronized output: as a terminal that supports it, show the last whole frame meanwhile.
        if (privateMark === '?' && params[0] === 2026) {
          if (final === 'h' && this.#shown === undefined)
            this.#shown = { lines: this.#drawn(), history: this.#history.length };
          else if (final === 'l') this.#shown = undefined;
          break;
        }
        if (privateMark === '?' && (params[0] === 1049 || params[0] === 47)) {
          if (final === 'h' && this.#saved === undefined) {
            this.#saved = { grid: this.#grid, x: this.#x, y: this.#y };
            this.#grid = Array.from({ length: this.rows }, () => this.#blankRow());
            this.#x = 0;
            this.#y = 0;
          } else if (final === 'l' && this.#saved !== undefined) {
            const saved = this.#saved;
            this.#saved = undefined;
            this.#grid = saved.grid;
            this.#x = saved.x;
            this.#y = saved.y;
            this.resize(this.cols, this.rows);
          }
        }
        break;
      default:
        break;
    }
    return (whole ?? '').length + 1;
  }
}
