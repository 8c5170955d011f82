import type { TerminalOutput } from '../../src/render/terminal.js';
import { stripAnsi } from '../../src/render/terminal.js';

/** A TerminalOutput that records writes, for renderer and CLI tests. */
export class FakeTerminal implements TerminalOutput {
  readonly writes: string[] = [];
  isTTY: boolean;
  columns: number;
  rows: number;

  constructor(options: { isTTY?: boolean; columns?: number; rows?: number } = {}) {
    this.isTTY = options.isTTY ?? false;
    this.columns = options.columns ?? 100;
    this.rows = options.rows ?? 30;
  }

  write(text: string): void {
    this.writes.push(text);
  }

  /** Everything written, as one string. */
  get text(): string {
    return this.writes.join('');
  }

  /** Everything written, ANSI removed. */
  get plain(): string {
    return stripAnsi(this.text);
  }
}
