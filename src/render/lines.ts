import type { AgentEvent } from '../events/schema.js';
import { totalTokens } from '../model/types.js';
import { createRedactor } from '../util/redact.js';
import { finalAnswerBlock } from './answer.js';
import type { EventRenderer } from './renderer.js';
import { describeBudget, formatTokens, type PriceFunction, RunState } from './run-state.js';
import { summaryLines } from './summary.js';
import { agentColour, createPalette, cutChars, oneLine, type TerminalOutput } from './terminal.js';

/** Width of the agent prefix column in line mode. */
const PREFIX_WIDTH = 14;

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function cut(text: string, maxChars: number): string {
  return cutChars(oneLine(text), maxChars);
}

/**
 * The text of one event in line mode, without the agent prefix; undefined for
 * events line mode does not print (model.request, model.delta and step, whose
 * content other events already carry).
 */
export function describeEvent(event: AgentEvent): string | undefined {
  switch (event.type) {
    case 'run.started':
      return `run ${event.runId} started: ${cut(event.task, 160)}`;
    case 'run.finished':
      return `run finished: ${event.status}${event.error === undefined ? '' : `: ${oneLine(event.error.message)}`}`;
    case 'agent.spawned':
      return `spawned${event.role === undefined ? '' : ` ${event.role}`}: ${cut(event.task, 140)}`;
    case 'agent.finished': {
      const facts = [
        ...(event.steps === undefined ? [] : [`${event.steps} steps`]),
        ...(event.attempts === undefined ? [] : [`${event.attempts} attempts`]),
        ...(event.usage === undefined ? [] : [`${formatTokens(totalTokens(event.usage))} tokens`]),
      ];
      const detail =
        event.error !== undefined
          ? `: ${oneLine(event.error.message)}`
          : event.final !== undefined && event.final !== ''
            ? `: ${cut(event.final, 140)}`
            : '';
      return `finished ${event.status}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}${detail}`;
    }
    case 'agent.progress':
      return `progress: ${cut(event.note, 160)}`;
    case 'agent.nudged':
      return `nudged: ${cut(event.reason, 160)}`;
    case 'model.request':
    case 'model.delta':
    case 'step':
      return undefined;
    case 'model.response': {
      const parts = [
        ...(event.thinking !== undefined && oneLine(event.thinking) !== ''
          ? [`thinks: ${cut(event.thinking, 120)}`]
          : []),
        ...(oneLine(event.content) !== '' ? [`says: ${cut(event.content, 160)}`] : []),
      ];
      if (parts.length === 0) return undefined;
      return `${event.replayed === true ? 'replayed ' : ''}${parts.join(' | ')}`;
    }
    case 'tool.call':
      return `${event.replayed === true ? 'replayed ' : ''}call ${event.name} ${cut(json(event.input), 120)}`;
    case 'tool.result':
      if (event.replayed === true) return `replayed ${event.ok ? 'ok' : 'failed'} ${event.name}`;
      return event.ok
        ? `ok ${event.name}: ${cut(event.content, 100)}`
        : `failed ${event.name}: ${oneLine(event.error?.message ?? event.content)}`;
    case 'message.sent':
      return `sent on ${event.channel}${event.to === undefined ? '' : ` to ${event.to}`} (${event.messageId})`;
    case 'message.received':
      return `received on ${event.channel} from ${event.from} (${event.messageId})`;
    case 'budget.warning':
    case 'budget.exceeded':
      return `${event.type === 'budget.warning' ? 'budget warning' : 'budget exceeded'}: ${event.scope} ${describeBudget(event.metric, event.used, event.limit)}`;
    case 'history.compressed':
      return `history compressed: ${event.foldedMessages === undefined ? '' : `${event.foldedMessages} messages folded into a summary, `}${event.beforeMessages} → ${event.afterMessages} messages, ~${event.beforeTokens} → ~${event.afterTokens} tokens${event.limitTokens === undefined ? '' : ` (limit ${event.limitTokens})`}`;
    case 'warning.raised':
      return `warning: ${oneLine(event.message)}`;
    case 'journal.diverged':
      return `journal diverged at model call ${event.step}: ${cut(event.reason, 160)}`;
    case 'role.adapted':
      return `role ${event.name} runs without ${event.dropped.join(', ')}: ${describeTiers(event.tiers)}`;
    case 'callback.error':
      return `callback error in ${event.callback}: ${oneLine(event.error.message)}`;
  }
}

/** "the network permission is not granted". */
export function describeTiers(tiers: readonly string[]): string {
  return `the ${tiers.join(', ')} permission${tiers.length === 1 ? ' is' : 's are'} not granted`;
}

/**
 * One line-mode line for an event (prefix included), or undefined when it
 * prints nothing. With `color`, the prefix takes the agent's own colour.
 */
export function formatEventLine(
  event: AgentEvent,
  options: { color?: boolean | undefined; redact?: ((text: string) => string) | undefined } = {},
): string | undefined {
  const text = describeEvent(event);
  if (text === undefined) return undefined;
  const body = options.redact === undefined ? text : options.redact(text);
  return `${agentColour(event.agentId, event.agentId.padEnd(PREFIX_WIDTH), options.color === true)} ${body}`;
}

/** Options for a LineRenderer. */
export interface LineRendererOptions {
  output: TerminalOutput;
  env?: NodeJS.ProcessEnv | undefined;
  /** Print the summary table on finish (default true). */
  summary?: boolean | undefined;
  price?: PriceFunction | undefined;
  /** Colour each agent's prefix (and the summary) like `docker compose up` (default false; see supportsColor). */
  color?: boolean | undefined;
}

/**
 * Plain lines, one per event, prefixed by the agent: what a non-TTY, TERM=dumb
 * or `--quiet` run prints, and what `troupe trace` replays, identically,
 * because both are computed from the events alone. Secrets are redacted.
 */
export class LineRenderer implements EventRenderer {
  readonly #output: TerminalOutput;
  readonly #redact: (text: string) => string;
  readonly #summary: boolean;
  readonly #color: boolean;
  readonly state: RunState;

  constructor(options: LineRendererOptions) {
    this.#output = options.output;
    this.#redact = createRedactor(options.env);
    this.#summary = options.summary ?? true;
    this.#color = options.color ?? false;
    this.state = new RunState({ price: options.price });
  }

  observe(event: AgentEvent): void {
    this.state.apply(event);
  }

  handle(event: AgentEvent): void {
    this.state.apply(event);
    // The text is redacted before the prefix is coloured, so no escape splits a secret.
    const line = formatEventLine(event, { color: this.#color, redact: this.#redact });
    if (line !== undefined) this.#output.write(`${line}\n`);
  }

  finish(): void {
    if (!this.#summary || this.state.agents.size === 0) return;
    const width = this.#output.isTTY ? Math.max((this.#output.columns || 80) - 1, 20) : undefined;
    const lines = [
      ...summaryLines(this.state, createPalette(this.#color), width),
      ...finalAnswerBlock(this.state.final, width, createPalette(this.#color)),
    ];
    this.#output.write(`\n${lines.map((line) => this.#redact(line)).join('\n')}\n`);
  }
}
