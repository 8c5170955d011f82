import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentJournal, JournalEntry } from '../agent/journal.js';
import { TroupeError } from '../errors.js';
import type { Message } from '../model/types.js';
import { FileJournal, readJournal } from '../runtime/resume/journal.js';
import { createRunId } from '../util/ids.js';

/** The journal header's task for every chat session. */
const CHAT_TASK = 'troupe chat';
/** The chat agent's key in its session's journal. */
const AGENT_KEY = 'chat';

/** Where chat sessions are kept: `$XDG_STATE_HOME/troupe/chats`, else `~/.local/state/troupe/chats`. */
export function chatSessionsDir(env: NodeJS.ProcessEnv): string | undefined {
  const state = env['XDG_STATE_HOME']?.trim();
  if (state !== undefined && state !== '') return join(state, 'troupe', 'chats');
  const home = env['HOME']?.trim();
  return home === undefined || home === ''
    ? undefined
    : join(home, '.local', 'state', 'troupe', 'chats');
}

/**
 * A chat session saved as it goes: one journal (`journal.jsonl` in the
 * session's folder) with every model response and tool result of the chat
 * agent, each turn's input, and the conversation after each turn. A resumed
 * session starts from the last saved conversation; a turn the process died
 * in is run again from its input, its finished model calls and tool calls
 * answered from the journal (as `troupe run --resume` does).
 */
export class ChatSession {
  readonly id: string;
  readonly dir: string;
  /** The conversation to continue (empty for a new session). */
  readonly history: Message[];
  /** The input of the turn the earlier process died in, to run again first. */
  readonly interrupted: string | undefined;
  /** The chat agent's side of the journal. */
  readonly agentJournal: AgentJournal;
  readonly #journal: FileJournal;
  // The journal's step numbers count model calls over the session; the agent
  // of this process counts from 0, so its steps are shifted by `#offset`.
  readonly #offset: number;
  #steps: number;

  private constructor(
    id: string,
    dir: string,
    journal: FileJournal,
    restored: { history: Message[]; interrupted?: string; offset: number; steps: number },
  ) {
    this.id = id;
    this.dir = dir;
    this.#journal = journal;
    this.history = restored.history;
    this.interrupted = restored.interrupted;
    this.#offset = restored.offset;
    this.#steps = restored.steps;
    const offset = this.#offset;
    const shift = (entry: JournalEntry, by: number): JournalEntry => ({
      ...entry,
      step: entry.step + by,
    });
    const record = (entry: JournalEntry): void => {
      const stored = shift(entry, offset);
      if (stored.kind === 'model') this.#steps = Math.max(this.#steps, stored.step + 1);
      journal.append(AGENT_KEY, stored);
      journal.flush();
    };
    this.agentJournal = {
      // Only the interrupted turn is replayed; earlier turns are in `history`.
      recorded:
        restored.interrupted === undefined
          ? []
          : journal
              .entries(AGENT_KEY)
              .filter((entry) => entry.step >= offset)
              .map((entry) => shift(entry, -offset)),
      record,
      intend: (entry) => {
        record(entry);
        return Promise.resolve();
      },
    };
  }

  /**
   * Starts a new session, or resumes `resume` (a session id, or `latest`).
   * Throws `usage.invalid_option` when there is no such session.
   */
  static open(
    sessionsDir: string,
    resume: string | undefined,
    redact: (text: string) => string,
  ): ChatSession {
    mkdirSync(sessionsDir, { recursive: true });
    if (resume === undefined) {
      const id = createRunId();
      const dir = join(sessionsDir, id);
      const journal = new FileJournal(
        join(dir, 'journal.jsonl'),
        { runId: id, task: CHAT_TASK },
        { redact },
      );
      return new ChatSession(id, dir, journal, { history: [], offset: 0, steps: 0 });
    }
    const id = resume === 'latest' ? latestSession(sessionsDir) : resume;
    const dir = join(sessionsDir, id);
    const path = join(dir, 'journal.jsonl');
    if (!existsSync(path)) {
      throw new TroupeError(
        'usage.invalid_option',
        `There is no chat session ${id} in ${sessionsDir}. Start one with troupe chat, or resume the latest with troupe chat --resume.`,
      );
    }
    const contents = readJournal(path);
    let history: Message[] = [];
    let turn: { input: string; step: number } | undefined;
    for (const note of contents.notes) {
      if (note.kind === 'chat.history') {
        history = note.messages;
        turn = undefined;
      } else if (note.kind === 'chat.turn') turn = { input: note.input, step: note.step };
    }
    const steps = (contents.entries.get(AGENT_KEY) ?? []).reduce(
      (most, entry) => (entry.kind === 'model' ? Math.max(most, entry.step + 1) : most),
      0,
    );
    const journal = new FileJournal(path, { runId: id, task: CHAT_TASK }, { redact });
    return new ChatSession(id, dir, journal, {
      history,
      ...(turn === undefined ? {} : { interrupted: turn.input }),
      offset: turn?.step ?? steps,
      steps,
    });
  }

  /** Notes that a turn starts, before its first model call. */
  turnStarted(input: string): void {
    this.#journal.note({ kind: 'chat.turn', input, step: this.#steps });
    this.#journal.flush();
  }

  /** Saves the conversation as it stands (after a turn, /clear or /load). */
  saveHistory(messages: readonly Message[]): void {
    this.#journal.note({ kind: 'chat.history', messages: [...messages] });
    this.#journal.flush();
  }

  close(): void {
    this.#journal.close();
  }
}

/** The id of the session whose journal changed last. */
function latestSession(sessionsDir: string): string {
  let latest: { id: string; time: number } | undefined;
  for (const id of readdirSync(sessionsDir)) {
    const path = join(sessionsDir, id, 'journal.jsonl');
    if (!existsSync(path)) continue;
    const time = statSync(path).mtimeMs;
    if (latest === undefined || time > latest.time) latest = { id, time };
  }
  if (latest === undefined) {
    throw new TroupeError(
      'usage.invalid_option',
      `There is no chat session to resume in ${sessionsDir}. Start one with troupe chat.`,
    );
  }
  return latest.id;
}
