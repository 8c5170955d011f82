import { type KeyName, parseKeys } from '../render/keys.js';
import type { CliIo } from './context.js';

/** A terminal's keys read one at a time for the interactive live view. */
export interface LiveKeys {
  /** Gives the terminal back in line mode (an --approve question reads a line). */
  suspend(): void;
  /** Reads keys again after `suspend`. */
  resume(): void;
  /** Stops reading for good and restores the terminal. */
  close(): void;
}

type RawInput = NodeJS.ReadableStream & {
  isTTY?: boolean | undefined;
  setRawMode?: (mode: boolean) => unknown;
};

/** True when `io.stdin` is a terminal that can be read key by key. */
export function canReadKeys(io: CliIo): boolean {
  const stdin = io.stdin as RawInput | undefined;
  return stdin?.isTTY === true && typeof stdin.setRawMode === 'function';
}

/**
 * Puts the terminal in raw mode and hands each key to `onKey`: arrows,
 * Enter, Escape, letters, and Ctrl-C, which raw mode no longer turns into
 * SIGINT (the view stops the run itself). The terminal is restored by
 * `close()`, and whenever the process exits.
 */
export function readLiveKeys(io: CliIo, onKey: (key: KeyName) => void): LiveKeys {
  const stdin = io.stdin as RawInput;
  let reading = false;
  const onData = (chunk: Buffer | string): void => {
    for (const key of parseKeys(typeof chunk === 'string' ? chunk : chunk.toString('utf8'))) {
      onKey(key);
    }
  };
  const restore = (): void => {
    if (!reading) return;
    reading = false;
    stdin.off('data', onData);
    stdin.setRawMode?.(false);
    stdin.pause();
  };
  const start = (): void => {
    if (reading) return;
    reading = true;
    stdin.setRawMode?.(true);
    stdin.on('data', onData);
    stdin.resume();
  };
  // A second Ctrl-C leaves with process.exit: the terminal must not stay raw.
  process.once('exit', restore);
  start();
  return {
    suspend: restore,
    resume: start,
    close: () => {
      restore();
      process.off('exit', restore);
    },
  };
}
