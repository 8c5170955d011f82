import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPINNER_FRAME_MS = 100;
/** Lines of chat history kept on disk. */
export const HISTORY_SIZE = 1000;

/** What the REPL does with the lines a person types. */
export interface ReplHandlers {
  /** Runs one turn; `signal` aborts when the person presses Ctrl-C. */
  turn(input: string, signal: AbortSignal): Promise<void>;
  /** Handles a `/command`; returns 'exit' to leave. */
  command(name: string, argument: string): Promise<'exit' | undefined> | 'exit' | undefined;
  /** What the spinner shows after the elapsed time while a turn runs ("1.2k tok"). */
  status(): string;
}

/**
 * The chat history file, per the XDG base directory convention:
 * `$XDG_STATE_HOME/troupe/chat_history`, else `~/.local/state/troupe/chat_history`;
 * undefined when neither is known (no history is kept then).
 */
export function chatHistoryPath(env: NodeJS.ProcessEnv): string | undefined {
  const state = env['XDG_STATE_HOME']?.trim();
  if (state !== undefined && state !== '') return join(state, 'troupe', 'chat_history');
  const home = env['HOME']?.trim();
  return home === undefined || home === ''
    ? undefined
    : join(home, '.local', 'state', 'troupe', 'chat_history');
}

function loadHistory(path: string | undefined): string[] {
  if (path === undefined) return [];
  try {
    // The file lists the oldest first; readline wants the newest first.
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .reverse()
      .slice(0, HISTORY_SIZE);
  } catch {
    return [];
  }
}

function formatElapsed(ms: number): string {
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)}s`
    : `${Math.floor(ms / 60_000)}m${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}s`;
}

type TerminalInput = NodeJS.ReadableStream & {
  isTTY?: boolean;
  isRaw?: boolean;
  setRawMode?: (mode: boolean) => unknown;
  unref?: () => void;
};

const CTRL_C = '\u0003';
const CTRL_G = '\u0007';
const CTRL_R = '\u0012';

// A read that ends inside an escape sequence: Escape alone, or a CSI or SS3 sequence without its final byte.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding escape sequences is the point.
const CUT = /\u001b(?:\[[0-?]*[ -/]*|O)?$/;

/** A key that types itself: not a control character, not Delete, not an escape sequence. */
function ordinary(key: string): boolean {
  const code = key.codePointAt(0) ?? 0;
  return code >= 0x20 && code !== 0x7f;
}

/** A Ctrl-R search: what was typed, the history entry it found (-1 none yet), the line before it. */
interface HistorySearch {
  query: string;
  at: number;
  saved: string;
  failed: boolean;
}

/** One key: a whole escape sequence (CSI or SS3), Escape with one character (Alt), or one character. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: splitting escape sequences is the point.
const KEY = /\u001b\[[0-?]*[ -/]*[@-~]|\u001bO[\s\S]|\u001b[^[O]|[\s\S]/gu;

/**
 * The terminal's input handed to readline one key per read. Node's readline
 * treats a read of several characters as a paste and appends it at the end
 * of the line, wherever the cursor is: keys typed faster than the program
 * reads them (a slow link, a busy machine) arrive in one read, and
 * "hllo ← ← ← e" became "hlloe" on a screen showing "helo". Keys read one
 * by one are edited at the cursor, as typed.
 *
 * A run of ordinary characters in one read (pasted text) goes to
 * `insertText` whole instead: readline inserts a string at the cursor in one
 * step, while each key alone costs a measure of the whole line (a 21 KB
 * paste took 13-15 s key by key, ~25 ms whole).
 */
class KeyByKey extends Readable {
  readonly isTTY = true;
  /** Sees each key first; a key it takes (true) never reaches readline. */
  takeKey: ((key: string) => boolean) | undefined;
  /** Takes a run of ordinary characters read together, to insert at the cursor. */
  insertText: ((text: string) => void) | undefined;
  readonly #source: TerminalInput;
  /** The last read ended inside an escape sequence. */
  #cut = false;
  readonly #onData: (chunk: Buffer | string) => void;
  readonly #onEnd: () => void;

  constructor(source: TerminalInput) {
    super({ objectMode: true });
    this.#source = source;
    const decoder = new StringDecoder('utf8');
    this.#onData = (chunk) => {
      const text = typeof chunk === 'string' ? chunk : decoder.write(chunk);
      // After a read that ended inside an escape sequence, its rest opens this one: key by key,
      // so readline's decoder completes the sequence.
      let whole = !this.#cut;
      let run = '';
      for (const [key] of text.matchAll(KEY)) {
        if (ordinary(key)) {
          run += key;
          continue;
        }
        this.#text(run, whole);
        run = '';
        this.#key(key);
        // Escape alone starts a sequence the pattern could not take whole: its rest goes key by key.
        whole = key !== '\u001b';
      }
      this.#text(run, whole);
      this.#cut = CUT.test(text);
    };
    this.#onEnd = () => this.push(null);
    source.on('data', this.#onData);
    source.once('end', this.#onEnd);
  }

  #key(key: string): void {
    if (this.takeKey?.(key) !== true) this.push(key);
  }

  #text(run: string, allowed: boolean): void {
    // Whole only when nothing read before it still waits for readline, so the order holds.
    const whole =
      allowed &&
      run.length > 1 &&
      this.insertText !== undefined &&
      this.readableFlowing === true &&
      this.readableLength === 0;
    if (whole) this.insertText?.(run);
    else for (const key of run) this.#key(key);
  }

  get isRaw(): boolean {
    return this.#source.isRaw === true;
  }

  setRawMode(mode: boolean): this {
    this.#source.setRawMode?.(mode);
    return this;
  }

  override _read(): void {
    this.#source.resume();
  }

  /** Stops reading the terminal and lets go of it. */
  release(): void {
    this.#source.off('data', this.#onData);
    this.#source.off('end', this.#onEnd);
    this.#source.pause();
    this.#source.unref?.();
  }
}

/**
 * A terminal REPL on readline: line editing, persistent history (up/down,
 * Ctrl-R), a spinner with elapsed time while a turn runs, Ctrl-C to cancel
 * the running turn (a second Ctrl-C, or one at an empty prompt twice, leaves),
 * Ctrl-D to leave. When it ends, readline is closed and stdin released, so
 * nothing keeps the process alive.
 */
export class Repl {
  readonly #input: KeyByKey;
  readonly #output: NodeJS.WritableStream;
  readonly #rl: Interface;
  readonly #prompt: string;
  readonly #lines: string[] = [];
  readonly #waiting: Array<(line: string | undefined) => void> = [];
  #closed = false;
  #turn: AbortController | undefined;
  #interrupted = false;
  /** A line was handed to the loop, which has not yet started its turn or come back to the prompt. */
  #handingOver = false;
  /** Ctrl-C came during the hand-over: the turn that line starts is cancelled at once. */
  #cancelHandedOver = false;
  #spinner: NodeJS.Timeout | undefined;
  #spinnerText = '';
  #turnStart = 0;
  #status: () => string = () => '';
  /** The history, newest first (what readline keeps and saves). */
  #history: readonly string[];
  /** A Ctrl-R search under way. */
  #search: HistorySearch | undefined;
  /** What the last search looked for: Ctrl-R twice looks for it again. */
  #lastQuery = '';

  constructor(options: {
    input: TerminalInput;
    output: NodeJS.WritableStream;
    historyFile: string | undefined;
    prompt?: string;
  }) {
    this.#input = new KeyByKey(options.input);
    this.#input.takeKey = (key) => this.#searchKey(key);
    this.#input.insertText = (text) => {
      // A search takes what is typed into its query; otherwise readline inserts it at the cursor.
      if (this.#search !== undefined) for (const key of text) this.#searchKey(key);
      else this.#rl.write(text);
    };
    this.#output = options.output;
    this.#prompt = options.prompt ?? '› ';
    this.#history = loadHistory(options.historyFile);
    this.#rl = createInterface({
      input: this.#input,
      output: options.output,
      terminal: true,
      history: [...this.#history],
      historySize: HISTORY_SIZE,
      removeHistoryDuplicates: true,
      prompt: this.#prompt,
    });
    const historyFile = options.historyFile;
    this.#rl.on('history', (history: string[]) => {
      this.#history = [...history];
      if (historyFile === undefined) return;
      try {
        mkdirSync(dirname(historyFile), { recursive: true });
        writeFileSync(historyFile, `${[...history].reverse().join('\n')}\n`, { mode: 0o600 });
      } catch {
        // A history that cannot be saved costs the next session its history, nothing more.
      }
    });
    this.#rl.on('line', (line) => {
      this.#interrupted = false;
      this.#handingOver = true;
      const waiter = this.#waiting.shift();
      if (waiter === undefined) this.#lines.push(line);
      else waiter(line);
    });
    this.#rl.on('SIGINT', () => this.#onInterrupt());
    this.#rl.on('close', () => this.#end());
  }

  /** Prints a line above the prompt (and the spinner, which is redrawn after it). */
  print(text: string): void {
    this.#clearSpinner();
    this.#output.write(`${text}\n`);
    this.#drawSpinner();
  }

  /** Asks a question and waits for the answer line (undefined when the input ends). */
  async ask(question: string): Promise<string | undefined> {
    this.#clearSpinner();
    this.#output.write(question);
    return this.#next();
  }

  /** Reads and handles lines until the person leaves. */
  async run(handlers: ReplHandlers): Promise<void> {
    this.#status = handlers.status;
    try {
      for (;;) {
        this.#handingOver = false;
        this.#cancelHandedOver = false;
        this.#rl.setPrompt(this.#prompt);
        this.#rl.prompt();
        const line = await this.#next();
        if (line === undefined) break;
        const input = line.trim();
        if (input === '') continue;
        if (input.startsWith('/')) {
          const [name = '', ...rest] = input.slice(1).split(/\s+/);
          if ((await handlers.command(name.toLowerCase(), rest.join(' '))) === 'exit') break;
          continue;
        }
        if (['exit', 'quit', ':q'].includes(input.toLowerCase())) break;
        const turn = new AbortController();
        this.#turn = turn;
        // Enter and Ctrl-C read in one go: the Ctrl-C meant this turn.
        if (this.#cancelHandedOver) turn.abort(new Error('cancelled with Ctrl-C'));
        this.#startSpinner();
        try {
          await handlers.turn(input, turn.signal);
        } finally {
          this.#stopSpinner();
          this.#turn = undefined;
        }
      }
    } finally {
      this.close();
    }
  }

  /** Closes readline and lets go of stdin. Safe to call twice. */
  close(): void {
    this.#stopSpinner();
    if (!this.#closed) this.#rl.close();
    this.#end();
    this.#input.release();
  }

  #next(): Promise<string | undefined> {
    const line = this.#lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #onInterrupt(): void {
    const running = this.#turn !== undefined && !this.#turn.signal.aborted;
    if (running || (this.#handingOver && !this.#cancelHandedOver && this.#turn === undefined)) {
      if (running) this.#turn?.abort(new Error('cancelled with Ctrl-C'));
      else this.#cancelHandedOver = true;
      this.print('^C (turn cancelled; Ctrl-C again or Ctrl-D to leave)');
      this.#interrupted = true;
      return;
    }
    if (this.#interrupted) {
      this.#output.write('\n');
      this.close();
      return;
    }
    this.#interrupted = true;
    // Like a shell: drop what was typed, and say how to leave.
    this.#rl.write('', { ctrl: true, name: 'u' });
    this.#output.write('^C\n(Ctrl-C again or Ctrl-D to leave)\n');
    this.#rl.prompt();
  }

  /**
   * Ctrl-R: a reverse incremental search through the history, as in bash.
   * Typed characters narrow it, Ctrl-R again goes to the next older match
   * (at once, the last search's text again),
   * Backspace widens it; Enter runs the line found, an arrow or another
   * editing key keeps it to edit, Ctrl-G or Ctrl-C gives the line back as it
   * was. Readline has none (Node's REPL has its own), so the keys are taken
   * here before readline sees them. Returns true for a key it took.
   */
  #searchKey(key: string): boolean {
    const search = this.#search;
    if (search === undefined) {
      if (key !== CTRL_R || this.#closed || this.#turn !== undefined) return false;
      this.#search = { query: '', at: -1, saved: this.#rl.line, failed: false };
      this.#showSearch();
      return true;
    }
    if (key === CTRL_R) {
      if (search.query === '') search.query = this.#lastQuery;
      if (search.query !== '') this.#find(search, search.at + 1);
    } else if (key === CTRL_G || key === CTRL_C) {
      this.#endSearch(search.saved);
      return true;
    } else if (key === '\r' || key === '\n') {
      // Enter runs what was found: readline gets the key with the line in place.
      this.#endSearch(this.#found(search));
      return false;
    } else if (key === '\u007f' || key === '\b') {
      search.query = [...search.query].slice(0, -1).join('');
      if (search.query === '') {
        search.at = -1;
        search.failed = false;
      } else this.#find(search, 0);
    } else if ((key.codePointAt(0) ?? 0) >= 0x20) {
      search.query += key;
      this.#find(search, Math.max(search.at, 0));
    } else {
      // An arrow, Home, End, Ctrl-A …: the line found stays, to edit; readline gets the key.
      this.#endSearch(this.#found(search));
      return false;
    }
    this.#showSearch();
    return true;
  }

  // The newest entry from `from` on that holds the query; a failed search keeps its last match.
  #find(search: HistorySearch, from: number): void {
    for (let index = from; index < this.#history.length; index += 1) {
      if (this.#history[index]?.includes(search.query) === true) {
        search.at = index;
        search.failed = false;
        return;
      }
    }
    search.failed = true;
  }

  #found(search: HistorySearch): string {
    return search.at === -1 ? search.saved : (this.#history[search.at] ?? search.saved);
  }

  #showSearch(): void {
    const search = this.#search;
    if (search === undefined) return;
    this.#rl.setPrompt(`(${search.failed ? 'failed ' : ''}reverse-i-search)\`${search.query}': `);
    this.#setLine(this.#found(search));
  }

  #endSearch(line: string): void {
    if (this.#search !== undefined && this.#search.query !== '')
      this.#lastQuery = this.#search.query;
    this.#search = undefined;
    this.#rl.setPrompt(this.#prompt);
    this.#setLine(line);
  }

  // Replaces the line being edited (the cursor at its end) and draws the prompt with it.
  #setLine(text: string): void {
    this.#rl.write(null, { ctrl: true, name: 'e' });
    this.#rl.write(null, { ctrl: true, name: 'u' });
    if (text !== '') this.#rl.write(text);
    this.#rl.prompt(true);
  }

  #end(): void {
    this.#closed = true;
    this.#turn?.abort(new Error('the chat ended'));
    for (const waiter of this.#waiting.splice(0)) waiter(undefined);
  }

  #startSpinner(): void {
    this.#turnStart = Date.now();
    this.#drawSpinner();
    this.#spinner = setInterval(() => this.#drawSpinner(), SPINNER_FRAME_MS);
    this.#spinner.unref();
  }

  #stopSpinner(): void {
    if (this.#spinner !== undefined) clearInterval(this.#spinner);
    this.#spinner = undefined;
    this.#clearSpinner();
  }

  #drawSpinner(): void {
    if (this.#spinner === undefined && this.#turn === undefined) return;
    const elapsed = Date.now() - this.#turnStart;
    const frame = SPINNER[Math.floor(elapsed / SPINNER_FRAME_MS) % SPINNER.length] ?? '*';
    const status = this.#status();
    this.#spinnerText = `${frame} working · ${formatElapsed(elapsed)}${status === '' ? '' : ` · ${status}`} · Ctrl-C cancels`;
    this.#output.write(`\r\u001b[K\u001b[2m${this.#spinnerText}\u001b[22m`);
  }

  #clearSpinner(): void {
    if (this.#spinnerText === '') return;
    this.#output.write('\r\u001b[K');
    this.#spinnerText = '';
  }
}
