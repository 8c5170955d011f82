import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { VirtualScreen } from './screen.js';

const root = new URL('../../', import.meta.url).pathname;
const bridge = join(root, 'test', 'helpers', 'pty-bridge.py');
/** The built CLI, as a person runs it. */
export const troupeBin = join(root, 'bin', 'troupe.js');

/** Keys as a terminal sends them. */
export const KEYS = Object.freeze({
  up: '\u001b[A',
  down: '\u001b[B',
  right: '\u001b[C',
  left: '\u001b[D',
  enter: '\r',
  escape: '\u001b',
  ctrlC: '\u0003',
  ctrlD: '\u0004',
  pageDown: '\u001b[6~',
  pageUp: '\u001b[5~',
});

/** True when python3 (which opens the pseudo-terminal) is on PATH. */
export function hasPython(): boolean {
  return (process.env['PATH'] ?? '')
    .split(':')
    .some((folder) => folder !== '' && existsSync(join(folder, 'python3')));
}

/** A clean environment for the CLI under test: no API keys from the machine, a known TERM. */
export function ptyEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: tmpdir(),
    TERM: 'xterm-256color',
    LANG: 'C.UTF-8',
    ...extra,
  };
}

/** A program running in a real pseudo-terminal, with what it shows kept on a VirtualScreen. */
export class PtySession {
  readonly screen: VirtualScreen;
  readonly exited: Promise<number | null>;
  #raw = '';
  #exitCode: number | null | undefined;
  readonly #child: ChildProcess;
  readonly #waiters = new Set<() => void>();

  constructor(
    command: readonly string[],
    options: { cols: number; rows: number; env?: NodeJS.ProcessEnv; cwd?: string },
  ) {
    this.screen = new VirtualScreen(options.cols, options.rows);
    this.#child = spawn(
      'python3',
      [bridge, String(options.cols), String(options.rows), '--', ...command],
      {
        env: options.env ?? ptyEnv(),
        cwd: options.cwd ?? root,
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      },
    );
    const decoder = new StringDecoder('utf8');
    this.#child.stdout?.on('data', (chunk: Buffer) => {
      const text = decoder.write(chunk);
      this.#raw += text;
      this.screen.write(text);
      for (const wake of [...this.#waiters]) wake();
    });
    this.#child.stderr?.on('data', (chunk: Buffer) => {
      this.#raw += `[bridge stderr] ${chunk.toString()}`;
    });
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code) => {
        this.#exitCode = code;
        for (const wake of [...this.#waiters]) wake();
        resolve(code);
      });
    });
  }

  /** Everything the program wrote, escapes included. */
  get raw(): string {
    return this.#raw;
  }

  /** Types `keys` into the terminal. */
  type(keys: string): void {
    this.#child.stdin?.write(keys);
  }

  /**
   * Presses keys one at a time, each after the program answered the one
   * before (as a person types: a terminal sends each key on its own).
   */
  async press(...keys: string[]): Promise<void> {
    for (const key of keys) {
      const before = this.#raw.length;
      this.type(key);
      await this.waitFor(() => this.#raw.length > before);
    }
  }

  /** Changes the window size (the program gets SIGWINCH). */
  resize(cols: number, rows: number): void {
    this.screen.resize(cols, rows);
    (this.#child.stdio[3] as Writable | null)?.write(`resize ${cols} ${rows}\n`);
  }

  /**
   * Waits until `check` holds for the screen (a string or pattern is looked
   * for in the scrollback and screen). Fails with the screen when the program
   * exits first or `limitMs` (a guard against a hang, not a timing check) passes.
   */
  waitFor(
    check: string | RegExp | ((screen: VirtualScreen) => boolean),
    limitMs = 60_000,
  ): Promise<void> {
    const holds = (): boolean =>
      typeof check === 'function'
        ? check(this.screen)
        : typeof check === 'string'
          ? this.screen.transcript().includes(check)
          : check.test(this.screen.transcript());
    return new Promise((resolve, reject) => {
      const done = (error?: Error): void => {
        this.#waiters.delete(wake);
        clearTimeout(guard);
        if (error === undefined) resolve();
        else reject(error);
      };
      const wake = (): void => {
        if (holds()) done();
        else if (this.#exitCode !== undefined) {
          done(
            new Error(
              `the program exited (${this.#exitCode}) before ${String(check)}:\n${this.screen.transcript()}`,
            ),
          );
        }
      };
      const guard = setTimeout(
        () =>
          done(
            new Error(
              `still waiting for ${String(check)}; the screen:\n${this.screen.transcript()}`,
            ),
          ),
        limitMs,
      );
      this.#waiters.add(wake);
      wake();
    });
  }

  kill(): void {
    if (this.#exitCode === undefined) this.#child.kill('SIGKILL');
  }
}

/** Runs `troupe <args>` in a pseudo-terminal of `cols` × `rows`. */
export function runInPty(
  args: readonly string[],
  options: { cols: number; rows: number; env?: NodeJS.ProcessEnv; cwd?: string },
): PtySession {
  return new PtySession([process.execPath, troupeBin, ...args], options);
}

/** Runs any command (e.g. a shell pipeline) in a pseudo-terminal of `cols` × `rows`. */
export function runCommandInPty(
  command: readonly string[],
  options: { cols: number; rows: number; env?: NodeJS.ProcessEnv; cwd?: string },
): PtySession {
  return new PtySession(command, options);
}
