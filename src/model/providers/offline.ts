import { sleep } from '../../util/abort.js';
import type { Model, ModelSpec } from '../spec.js';
import type {
  ModelCallOptions,
  ModelRequest,
  ModelResponse,
  ModelStreamPart,
  ToolCall,
} from '../types.js';
import { publisher, subscriber } from './offline-channels.js';
import { channelMessages, type Decision, publishTools } from './offline-conversation.js';
import { chat, coordinator, reporter } from './offline-roles.js';

/** The model name every offline response reports. */
export const OFFLINE_MODEL_NAME = 'offline-heuristic';

/**
 * Environment variable: a pause before each offline answer, in milliseconds
 * (default 0). `300` pauses every call; `reporter=60000,300` pauses the
 * reporter's calls 60 s and every other call 300 ms. Each pause is capped at 60 s.
 */
export const OFFLINE_DELAY_ENV = 'TROUPE_OFFLINE_DELAY_MS';

const MAX_DELAY_MS = 60_000;

/** The pause for each role ('' for any role not named), from OFFLINE_DELAY_ENV's text. */
function parseDelays(text: string | undefined): Map<string, number> {
  const delays = new Map<string, number>();
  for (const entry of (text ?? '').split(',')) {
    const [role, value] = entry.includes('=') ? entry.split('=', 2) : ['', entry];
    const ms = Number.parseInt(value ?? '', 10);
    if (Number.isFinite(ms))
      delays.set((role ?? '').trim(), Math.min(Math.max(ms, 0), MAX_DELAY_MS));
  }
  return delays;
}

/**
 * troupe's built-in heuristic model: no key, no network, deterministic. It is
 * not a language model and says so in its answers. It reads the request (the
 * tools offered, the caller's role and the messages) and drives the
 * research → analysis → report job through real tool calls: the coordinator
 * lists the workspace and delegates, researchers read documents and publish
 * extractive findings, the analyst aggregates them and the reporter writes
 * `report.md`. Any other caller gets an honest answer from the tools it has.
 *
 * Token usage is estimated as characters / 4 so budgets and summaries have numbers.
 *
 * @example
 * const model = createModel({ provider: 'offline' });
 */
export class OfflineModel implements Model {
  readonly spec: ModelSpec;
  readonly #delays: Map<string, number>;

  /** `seed` is kept in the spec for compatibility; answers depend on the request alone. */
  constructor(options: { seed?: number | undefined } = {}, env: NodeJS.ProcessEnv = process.env) {
    this.spec =
      options.seed === undefined
        ? { provider: 'offline' }
        : { provider: 'offline', seed: options.seed };
    this.#delays = parseDelays(env[OFFLINE_DELAY_ENV]);
  }

  async complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    const role = request.caller?.role ?? '';
    await sleep(this.#delays.get(role) ?? this.#delays.get('') ?? 0, options.signal);
    return toResponse(decideOffline(request), request);
  }

  async *stream(
    request: ModelRequest,
    options: ModelCallOptions = {},
  ): AsyncGenerator<ModelStreamPart> {
    const response = await this.complete(request, options);
    if (response.thinking !== undefined) yield { type: 'thinking-delta', text: response.thinking };
    for (const piece of response.content.match(/\S+\s*|\s+/g) ?? []) {
      yield { type: 'text-delta', text: piece };
    }
    for (const [index, toolCall] of response.toolCalls.entries()) {
      yield {
        type: 'tool-call-delta',
        index,
        id: toolCall.id,
        name: toolCall.name,
        argumentsDelta: toolCall.raw,
      };
    }
    yield { type: 'finish', response };
  }
}

/** The offline model's decision for one request, as a response. Pure and deterministic. */
export function decideOffline(request: ModelRequest): Decision {
  const tools = new Map((request.tools ?? []).map((tool) => [tool.name, tool]));
  const role = request.caller?.role;
  const { messages } = request;
  if (tools.has('delegate') || role === 'coordinator') return coordinator(messages, tools);
  if (role === 'analyst') return subscriber(messages, true);
  if (role === 'reporter') return reporter(messages, tools);
  if (role === 'researcher' || publishTools(tools).length > 0) return publisher(messages, tools);
  if (channelMessages(messages).received.length > 0) return subscriber(messages, false);
  return chat(messages, tools);
}

// ---------------------------------------------------------------------------
// Building the response.

function toResponse(decision: Decision, request: ModelRequest): ModelResponse {
  const step = request.messages.filter((message) => message.role === 'assistant').length;
  const toolCalls: ToolCall[] = decision.toolCalls.map((entry, index) => {
    const raw = JSON.stringify(entry.arguments);
    return { id: `offline_${step}_${index}`, name: entry.name, arguments: entry.arguments, raw };
  });
  const inputChars =
    request.messages.reduce((sum, message) => sum + message.content.length, 0) +
    JSON.stringify(request.tools ?? []).length;
  const outputChars =
    decision.content.length +
    (decision.thinking?.length ?? 0) +
    toolCalls.reduce((sum, toolCall) => sum + toolCall.raw.length, 0);
  const response: ModelResponse = {
    content: decision.content,
    toolCalls,
    usage: {
      inputTokens: Math.ceil(inputChars / 4),
      outputTokens: Math.max(1, Math.ceil(outputChars / 4)),
    },
    stopReason: toolCalls.length > 0 ? 'tool_calls' : 'end',
    model: OFFLINE_MODEL_NAME,
  };
  if (decision.thinking !== undefined) response.thinking = decision.thinking;
  return response;
}
