import type { AgentEvent } from '../events/schema.js';
import { formatDuration } from './run-state.js';
import { type Palette, wrapText } from './terminal.js';

/** Events kept per agent for its transcript; older ones are dropped (and counted). */
export const MAX_TRANSCRIPT_EVENTS = 400;
/**
 * Events kept for all transcripts together (the events themselves, which the
 * run would otherwise let go once written): past it, the transcripts of the
 * agents that finished first are let go, then running agents' oldest events.
 * A run of 100,000 agents would otherwise hold every event it made.
 */
export const MAX_KEPT_EVENTS = 100_000;
/** A running agent keeps at least its last this many events. */
const MIN_EVENTS_KEPT = 4;
/** Characters of a streaming reply kept while it is written (its end). */
const MAX_STREAM_CHARS = 4000;
/** Lines of one tool result shown in a transcript; the rest are counted. */
export const MAX_RESULT_LINES = 40;

interface AgentRecord {
  events: AgentEvent[];
  dropped: number;
  /** Its events were let go to keep the store within its bound (see MAX_KEPT_EVENTS). */
  released: boolean;
  startTs: number;
  /** The reply being streamed now (thinking or text), until its model.response. */
  streaming: string;
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Every agent's own story, for the interactive view's transcript (Enter on
 * an agent): what it was asked, its thinking, its tool calls and results,
 * its messages and its end, in full and wrapped to the window. Deltas are not
 * kept, only the text of the reply being streamed now.
 */
export class TranscriptStore {
  readonly #agents = new Map<string, AgentRecord>();
  readonly #maxKept: number;
  // Events held now, and the agents that finished with events held, first finished first.
  #kept = 0;
  readonly #finished = new Set<string>();
  #runId: string | undefined;

  constructor(options: { maxKeptEvents?: number } = {}) {
    this.#maxKept = options.maxKeptEvents ?? MAX_KEPT_EVENTS;
  }

  /** Events held for every transcript together. */
  get kept(): number {
    return this.#kept;
  }

  /** Takes one event of the run. */
  record(event: AgentEvent): void {
    if (event.type === 'run.finished') return;
    this.#runId ??= event.runId;
    let record = this.#agents.get(event.agentId);
    if (record === undefined) {
      record = { events: [], dropped: 0, released: false, startTs: event.ts, streaming: '' };
      this.#agents.set(event.agentId, record);
    }
    if (event.type === 'model.delta') {
      if (event.kind === 'text' || event.kind === 'thinking') {
        record.streaming = `${record.streaming}${event.text}`.slice(-MAX_STREAM_CHARS);
      }
      return;
    }
    if (event.type === 'step') return;
    if (event.type === 'model.response' || event.type === 'agent.finished') record.streaming = '';
    record.events.push(event);
    this.#kept += 1;
    if (record.events.length > MAX_TRANSCRIPT_EVENTS) {
      record.events.shift();
      record.dropped += 1;
      this.#kept -= 1;
    }
    if (event.type === 'agent.finished') this.#finished.add(event.agentId);
    if (this.#kept > this.#maxKept) this.#release(event.agentId, record);
  }

  // Back within the bound: the transcripts of the agents that finished first go, then (when
  // only running agents hold events) the oldest events of the agent that just added one.
  #release(agentId: string, current: AgentRecord): void {
    for (const id of this.#finished) {
      if (this.#kept <= this.#maxKept) return;
      if (id === agentId) continue;
      this.#finished.delete(id);
      const record = this.#agents.get(id);
      if (record === undefined) continue;
      this.#kept -= record.events.length;
      record.dropped += record.events.length;
      record.events = [];
      record.released = true;
    }
    while (this.#kept > this.#maxKept && current.events.length > MIN_EVENTS_KEPT) {
      current.events.shift();
      current.dropped += 1;
      current.released = true;
      this.#kept -= 1;
    }
  }

  /** The transcript of `agentId` as lines of at most `width` columns. */
  lines(agentId: string, width: number, palette: Palette): string[] {
    const record = this.#agents.get(agentId);
    if (record === undefined) return [palette.dim('(nothing yet)')];
    const out: string[] = [];
    if (record.dropped > 0) {
      const note = record.released
        ? `(${record.dropped} earlier events not kept in memory: this run has too many to keep; \`troupe trace ${this.#runId ?? '<runId>'} --agent ${agentId}\` shows them all)`
        : `(${record.dropped} earlier events not kept)`;
      for (const line of wrapText(note, width, ' ')) out.push(palette.dim(line));
    }
    for (const event of record.events) {
      const time = palette.dim(formatDuration(event.ts - record.startTs).padStart(7));
      for (const entry of describe(event)) {
        const tone = entry.tone === undefined ? (text: string) => text : palette[entry.tone];
        const [first = '', ...rest] = entry.text.split('\n');
        const wrapped = [
          ...wrapText(`${entry.icon} ${first}`, width - 8, '   '),
          ...rest.flatMap((line) => wrapText(`   ${line}`, width - 8, '     ')),
        ];
        wrapped.forEach((line, index) => {
          out.push(`${index === 0 ? time : ' '.repeat(7)} ${tone(line)}`);
        });
      }
    }
    if (record.streaming !== '') {
      out.push(
        ...wrapText(`✍ ${record.streaming.replace(/\s+/g, ' ')}`, width - 8, '   ').map(
          (line) => `${' '.repeat(8)}${palette.dim(line)}`,
        ),
      );
    }
    return out;
  }
}

function resultText(content: string): string {
  const lines = content.split('\n');
  if (lines.length <= MAX_RESULT_LINES) return content;
  return `${lines.slice(0, MAX_RESULT_LINES).join('\n')}\n… ${lines.length - MAX_RESULT_LINES} more lines`;
}

type Tone = 'red' | 'dim' | 'green';

// One event as transcript entries: an icon, the whole text, and a tone.
function describe(event: AgentEvent): Array<{ icon: string; text: string; tone?: Tone }> {
  switch (event.type) {
    case 'run.started':
      return [{ icon: '▸', text: `run started: ${event.task}` }];
    case 'agent.spawned':
      return [
        {
          icon: '▸',
          text: `started${event.role === undefined ? '' : ` as ${event.role}`}${event.model === undefined ? '' : ` on ${event.model}`}\ntask: ${event.task}`,
        },
      ];
    case 'model.request':
      return [
        {
          icon: '→',
          text: `${event.replayed === true ? 'replayed from the journal' : 'asked the model'}: call ${event.step + 1}, ${event.messages} message${event.messages === 1 ? '' : 's'}, ${event.tools} tool${event.tools === 1 ? '' : 's'}`,
          tone: 'dim',
        },
      ];
    case 'model.response':
      return [
        ...(event.thinking === undefined || event.thinking.trim() === ''
          ? []
          : [{ icon: '💭', text: event.thinking.trim(), tone: 'dim' as const }]),
        ...(event.content.trim() === '' ? [] : [{ icon: '💬', text: event.content.trim() }]),
      ];
    case 'tool.call':
      return [{ icon: '🤔', text: `${event.name}(${json(event.input)})` }];
    case 'tool.result':
      return event.ok
        ? [{ icon: '✅', text: `${event.name} →\n${resultText(event.content)}` }]
        : [
            {
              icon: '❌',
              text: `${event.name} failed: ${event.error?.message ?? event.content}`,
              tone: 'red',
            },
          ];
    case 'message.sent':
      return [
        {
          icon: '📤',
          text: `sent on ${event.channel}${event.to === undefined ? '' : ` to ${event.to}`}: ${json(event.payload)}`,
        },
      ];
    case 'message.received':
      return [{ icon: '📨', text: `received on ${event.channel} from ${event.from}` }];
    case 'agent.progress':
      return [{ icon: '📝', text: event.note }];
    case 'agent.nudged':
      return [{ icon: '👉', text: `nudged: ${event.reason}` }];
    case 'warning.raised':
      return [{ icon: '⚠', text: event.message }];
    case 'budget.warning':
    case 'budget.exceeded':
      return [{ icon: '⚠', text: `${event.type.replace('.', ' ')}: ${event.metric}` }];
    case 'history.compressed':
      return [
        {
          icon: '🗜',
          text: `history compressed${event.replayed === true ? ' (summary replayed from the journal)' : ''}: ${event.foldedMessages ?? event.beforeMessages - event.afterMessages + 1} messages folded into a summary; ${event.beforeMessages} → ${event.afterMessages} messages, ~${event.beforeTokens} → ~${event.afterTokens} tokens (system prompt and task kept verbatim)${event.summary === undefined || event.summary.trim() === '' ? '' : `\nsummary: ${event.summary.trim()}`}`,
          tone: 'dim',
        },
      ];
    case 'agent.finished':
      return event.status === 'completed'
        ? [
            {
              icon: '✔',
              text: `completed${event.final === undefined || event.final === '' ? '' : `:\n${event.final}`}`,
              tone: 'green',
            },
          ]
        : [
            {
              icon: '✖',
              text: `${event.status.replace('_', ' ')}${event.error === undefined ? '' : `: ${event.error.message}`}`,
              tone: 'red',
            },
          ];
    default:
      return [];
  }
}
