import { CommanderError } from 'commander';
import { TroupeError } from '../errors.js';
import { JsonRenderer } from '../render/json.js';
import type { LiveActions } from '../render/live-navigator.js';
import type { EventRenderer } from '../render/renderer.js';
import type { PriceFunction } from '../render/run-state.js';
import type { TerminalOutput } from '../render/terminal.js';

export { EXIT } from './exit-codes.js';

/** What the CLI talks to: its outputs, environment, input and Ctrl-C. Tests pass fakes. */
export interface CliIo {
  stdout: TerminalOutput;
  stderr: TerminalOutput;
  env: NodeJS.ProcessEnv;
  /** The stream behind `stdout`, for readline's line editing in `troupe chat` on a terminal. */
  stdoutStream?: NodeJS.WritableStream | undefined;
  /** Input for `chat` and `--approve` prompts (default none: chat reads nothing, approvals are refused). */
  stdin?: (NodeJS.ReadableStream & { isTTY?: boolean | undefined }) | undefined;
  /** The folder relative paths are resolved against (default process.cwd()). */
  cwd?: string | undefined;
  /** Aborts when the person presses Ctrl-C. */
  signal?: AbortSignal | undefined;
  /**
   * Does what Ctrl-C does (the first stops the run, a second leaves at once),
   * for a view that reads keys in raw mode, where Ctrl-C is a key, not SIGINT.
   */
  interrupt?: (() => void) | undefined;
}

/** Ends a command with an exit code (caught by runCli). */
export function exitWith(code: number): never {
  throw new CommanderError(code, 'troupe.exit', '');
}

/** A usage error: the CLI prints the message and exits 2. */
export function usageError(message: string): TroupeError {
  return new TroupeError('usage.invalid_option', message);
}

/** How a run or replay is shown. */
export type OutputMode = 'live' | 'lines' | 'json';

/** `--json` wins; then line mode for `--quiet`, TERM=dumb or a non-TTY stdout; else the live view (without colour under NO_COLOR). */
export function chooseOutputMode(
  io: CliIo,
  flags: { json?: boolean | undefined; quiet?: boolean | undefined },
): OutputMode {
  if (flags.json === true) return 'json';
  // NO_COLOR takes the colour away, not the live view.
  if (flags.quiet === true || !io.stdout.isTTY || io.env['TERM'] === 'dumb') return 'lines';
  return 'live';
}

/**
 * The renderer for a mode, writing to stdout. The line and live renderers
 * are imported when asked for: they measure text with string-width, whose
 * load (Unicode segmenter and emoji tables, ~25 ms) a `--json` run never pays.
 */
export async function createRenderer(
  mode: OutputMode,
  io: CliIo,
  options: {
    model?: string | undefined;
    price?: PriceFunction | undefined;
    /** Makes the live view interactive. */
    actions?: LiveActions | undefined;
  } = {},
): Promise<EventRenderer & { start?: () => void }> {
  switch (mode) {
    case 'json':
      return new JsonRenderer({ output: io.stdout, env: io.env });
    case 'lines': {
      const [{ LineRenderer }, { supportsColor }] = await Promise.all([
        import('../render/lines.js'),
        import('../render/terminal.js'),
      ]);
      return new LineRenderer({
        output: io.stdout,
        env: io.env,
        price: options.price,
        color: supportsColor(io.stdout, io.env),
      });
    }
    case 'live': {
      const [{ LiveRenderer }, { supportsColor }] = await Promise.all([
        import('../render/live.js'),
        import('../render/terminal.js'),
      ]);
      return new LiveRenderer({
        output: io.stdout,
        env: io.env,
        color: supportsColor(io.stdout, io.env),
        model: options.model,
        price: options.price,
        actions: options.actions,
      });
    }
  }
}
