/**
 * The CLI's output interface, apart from terminal.ts's width helpers (and
 * the string-width package they load): `troupe --help` writes through it
 * and loads nothing else of the renderers.
 */

/** Where the CLI writes: stdout or stderr of a real terminal, or a fake in tests. */
export interface TerminalOutput {
  write(text: string): void;
  /** True when the other end is a terminal that understands cursor movement. */
  readonly isTTY: boolean;
  /** Width in columns (default 80 when unknown). */
  readonly columns?: number | undefined;
  /** Height in rows (default 24 when unknown). */
  readonly rows?: number | undefined;
}

/** Wraps a Node stream (process.stdout, process.stderr) as a TerminalOutput. */
export function createTerminalOutput(
  stream: NodeJS.WritableStream & {
    isTTY?: boolean;
    columns?: number;
    rows?: number;
  },
): TerminalOutput {
  return {
    write: (text) => {
      // A closed pipe (`troupe … | head`): nothing more to write, and no error to raise.
      if ((stream as { destroyed?: boolean }).destroyed === true) return;
      stream.write(text);
    },
    get isTTY() {
      return stream.isTTY === true;
    },
    get columns() {
      return stream.columns;
    },
    get rows() {
      return stream.rows;
    },
  };
}
