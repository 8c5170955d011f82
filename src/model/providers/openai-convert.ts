import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { TroupeError } from '../../errors.js';
import type {
  Message,
  ModelRequest,
  ModelResponse,
  ModelStopReason,
  ModelStreamPart,
  ToolCall,
  ToolSchema,
  Usage,
} from '../types.js';
import { prepareRequest } from './prepare-request.js';
import { type ThinkTagPiece, ThinkTagSplitter } from './think-tag-splitter.js';

/**
 * Pure conversions between troupe's neutral types and OpenAI Chat
 * Completions (https://platform.openai.com/docs/api-reference/chat). The
 * same wire format is spoken by OpenAI-compatible servers (Ollama, vLLM,
 * LM Studio, OpenRouter), so the readers here accept their variations too.
 */

/** A Chat Completions request body without the streaming fields. */
export type OpenAIRequestBody = Omit<ChatCompletionCreateParamsNonStreaming, 'stream'>;

/** Settings that shape the request body besides the conversation. */
export interface OpenAIRequestSettings {
  model: string;
  temperature?: number | undefined;
  maxTokens?: number | undefined;
  /**
   * The field that carries `maxTokens`. OpenAI's own API wants
   * `max_completion_tokens` (reasoning models reject `max_tokens`); most
   * compatible servers only know `max_tokens`.
   */
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** `reasoning_effort`, for reasoning models. */
  reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high' | undefined;
}

/** Builds the request body: messages paired and repaired, function tools, limits. */
export function toOpenAIRequest(
  request: ModelRequest,
  settings: OpenAIRequestSettings,
): OpenAIRequestBody {
  const prepared = prepareRequest(request);
  const body: OpenAIRequestBody = {
    model: settings.model,
    messages: [
      ...prepared.system.map(
        (content): ChatCompletionMessageParam => ({ role: 'system', content }),
      ),
      ...toOpenAIMessages(prepared.messages),
    ],
  };
  // An empty `tools` array is rejected by the API ("[] is too short").
  if (prepared.tools.length > 0) body.tools = toOpenAITools(prepared.tools);
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.maxTokens !== undefined) body[settings.maxTokensField] = settings.maxTokens;
  if (settings.reasoningEffort !== undefined) body.reasoning_effort = settings.reasoningEffort;
  return body;
}

/**
 * Neutral messages to Chat Completions messages. Expects tool calls already
 * paired (see `pairToolResults`); thinking is never sent back, because
 * servers that return `reasoning_content` reject it in requests.
 */
export function toOpenAIMessages(messages: readonly Message[]): ChatCompletionMessageParam[] {
  return messages.map(toOpenAIMessage);
}

function toOpenAIMessage(message: Message): ChatCompletionMessageParam {
  if (message.role === 'system') return { role: 'system', content: message.content };
  if (message.role === 'user') return { role: 'user', content: message.content };
  if (message.role === 'tool') {
    return {
      role: 'tool',
      tool_call_id: message.toolCallId,
      content: message.content.length > 0 ? message.content : '(empty result)',
    };
  }
  const toolCalls = message.toolCalls ?? [];
  if (toolCalls.length === 0) return { role: 'assistant', content: message.content };
  return {
    role: 'assistant',
    content: message.content.length > 0 ? message.content : null,
    tool_calls: toolCalls.map(
      (call): ChatCompletionMessageFunctionToolCall => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: wireArguments(call) },
      }),
    ),
  };
}

/** Neutral tool schemas to function tools. */
export function toOpenAITools(tools: readonly ToolSchema[]): ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** Arguments as the JSON string the API requires, even when the model's original was not JSON. */
export function wireArguments(call: ToolCall): string {
  if (call.raw.trim().length > 0 && parseJson(call.raw).ok) return call.raw;
  if (typeof call.arguments === 'object' && call.arguments !== null) {
    return JSON.stringify(call.arguments);
  }
  return '{}';
}

/** A non-streamed completion to a neutral response. */
export function fromOpenAICompletion(completion: ChatCompletion): ModelResponse {
  const choice = completion.choices?.[0];
  if (choice === undefined) {
    throw new TroupeError(
      'model.bad_response',
      'The model server returned a reply with no choices.',
      {
        details: { provider: 'openai' },
      },
    );
  }
  const message = choice.message;
  const splitter = new ThinkTagSplitter();
  const parts = [...splitter.push(message.content ?? ''), ...splitter.flush()];
  const reasoning = reasoningOf(message);
  let content = joinKind(parts, 'text');
  const refusal = typeof message.refusal === 'string' ? message.refusal : '';
  if (content.length === 0 && refusal.length > 0) content = refusal;
  const toolCalls = (message.tool_calls ?? []).flatMap((call, index) => {
    if (!('function' in call) || call.function === undefined) return [];
    return [
      toToolCall(
        call.id ?? '',
        call.function.name ?? '',
        call.function.arguments ?? '',
        index,
        completion.id,
      ),
    ];
  });
  return finishResponse({
    content,
    thinking: [reasoning, joinKind(parts, 'thinking')],
    toolCalls,
    usage: fromOpenAIUsage(completion.usage),
    finishReason: choice.finish_reason,
    isRefusal: refusal.length > 0,
    model: completion.model,
  });
}

/** Token usage in troupe's shape. `inputTokens` excludes cached prompt tokens, as Anthropic counts. */
export function fromOpenAIUsage(usage: ChatCompletion['usage'] | null | undefined): Usage {
  if (usage === undefined || usage === null) return { inputTokens: 0, outputTokens: 0 };
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const result: Usage = {
    inputTokens: Math.max(0, (usage.prompt_tokens ?? 0) - cached),
    outputTokens: usage.completion_tokens ?? 0,
  };
  if (cached > 0) result.cacheReadTokens = cached;
  return result;
}

/** Maps `finish_reason`; servers that say `stop` after tool calls still mean tool calls. */
export function fromOpenAIFinishReason(
  reason: string | null | undefined,
  hasToolCalls: boolean,
): ModelStopReason {
  if (hasToolCalls) return 'tool_calls';
  switch (reason) {
    case 'stop':
      return 'end';
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

interface ToolCallSlot {
  id: string;
  name: string;
  raw: string;
}

/**
 * Assembles a streamed reply chunk by chunk into stream parts and, at the
 * end, the same response `fromOpenAICompletion` gives for the whole reply.
 * Tool-call fragments are joined by their `index`; `<think>` tags split
 * across chunks are handled by a {@link ThinkTagSplitter}.
 */
export class OpenAIStreamAssembler {
  readonly #splitter = new ThinkTagSplitter();
  readonly #slots = new Map<number, ToolCallSlot>();
  #content = '';
  #tagThinking = '';
  #reasoning = '';
  #refusal = '';
  #finishReason: string | null = null;
  #usage: Usage | undefined;
  #model: string | undefined;
  #responseId = '';
  #lastIndex = -1;

  /** The parts one chunk yields, in order. */
  push(chunk: ChatCompletionChunk): ModelStreamPart[] {
    const parts: ModelStreamPart[] = [];
    if (typeof chunk.id === 'string' && this.#responseId === '') this.#responseId = chunk.id;
    if (typeof chunk.model === 'string' && chunk.model.length > 0) this.#model = chunk.model;
    if (chunk.usage !== undefined && chunk.usage !== null) {
      this.#usage = fromOpenAIUsage(chunk.usage);
    }
    const choice = chunk.choices?.[0];
    if (choice === undefined) return parts;
    const delta = choice.delta ?? {};
    const reasoning = reasoningOf(delta);
    if (reasoning.length > 0) {
      this.#reasoning += reasoning;
      parts.push({ type: 'thinking-delta', text: reasoning });
    }
    if (typeof delta.content === 'string' && delta.content.length > 0) {
      parts.push(...this.#split(this.#splitter.push(delta.content)));
    }
    if (typeof delta.refusal === 'string' && delta.refusal.length > 0) {
      this.#refusal += delta.refusal;
    }
    for (const [position, fragment] of (delta.tool_calls ?? []).entries()) {
      const index = this.#slotIndex(fragment.index, fragment.id, position);
      const slot = this.#slots.get(index) ?? { id: '', name: '', raw: '' };
      this.#slots.set(index, slot);
      const part: ModelStreamPart = { type: 'tool-call-delta', index, argumentsDelta: '' };
      if (typeof fragment.id === 'string' && fragment.id.length > 0 && slot.id !== fragment.id) {
        slot.id = fragment.id;
        part.id = fragment.id;
      }
      const name = fragment.function?.name;
      if (typeof name === 'string' && name.length > 0) {
        // Most servers send the whole name once; a few repeat it on every fragment.
        if (slot.name !== name) slot.name = slot.name.length === 0 ? name : slot.name + name;
        part.name = slot.name;
      }
      const argumentsDelta = fragment.function?.arguments ?? '';
      slot.raw += argumentsDelta;
      part.argumentsDelta = argumentsDelta;
      parts.push(part);
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      this.#finishReason = choice.finish_reason;
    }
    return parts;
  }

  /** True once a chunk carried a `finish_reason`. */
  get isFinished(): boolean {
    return this.#finishReason !== null;
  }

  /** Parts still held back (a partial `<think>` tag at the very end). */
  flush(): ModelStreamPart[] {
    return this.#split(this.#splitter.flush());
  }

  /**
   * The whole response. Throws `model.stream_interrupted` when no chunk said
   * why the reply ended: the stream was cut and the answer may be short.
   */
  finish(): ModelResponse {
    if (this.#finishReason === null) {
      throw new TroupeError(
        'model.stream_interrupted',
        'The model stream ended before the reply was complete (no finish_reason was received); the answer would be cut short.',
        { details: { provider: 'openai' } },
      );
    }
    const toolCalls = [...this.#slots.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, slot], index) => toToolCall(slot.id, slot.name, slot.raw, index, this.#responseId));
    let content = this.#content;
    if (content.length === 0 && this.#refusal.length > 0) content = this.#refusal;
    return finishResponse({
      content,
      thinking: [this.#reasoning, this.#tagThinking],
      toolCalls,
      usage: this.#usage ?? { inputTokens: 0, outputTokens: 0 },
      finishReason: this.#finishReason,
      isRefusal: this.#refusal.length > 0,
      model: this.#model,
    });
  }

  #split(pieces: ThinkTagPiece[]): ModelStreamPart[] {
    return pieces.map((piece): ModelStreamPart => {
      if (piece.kind === 'text') {
        this.#content += piece.text;
        return { type: 'text-delta', text: piece.text };
      }
      this.#tagThinking += piece.text;
      return { type: 'thinking-delta', text: piece.text };
    });
  }

  #slotIndex(index: number | undefined, id: string | undefined, position: number): number {
    if (typeof index === 'number') {
      this.#lastIndex = Math.max(this.#lastIndex, index);
      return index;
    }
    // Servers that omit `index` send each call whole, or continue the last one without an id.
    const last = this.#slots.get(this.#lastIndex);
    if (last !== undefined && (id === undefined || id === last.id) && position === 0) {
      return this.#lastIndex;
    }
    this.#lastIndex += 1;
    return this.#lastIndex;
  }
}

function joinKind(pieces: readonly ThinkTagPiece[], kind: ThinkTagPiece['kind']): string {
  return pieces
    .filter((piece) => piece.kind === kind)
    .map((piece) => piece.text)
    .join('');
}

// `reasoning_content` (DeepSeek, vLLM, LM Studio) or `reasoning` (OpenRouter, Ollama): not in the SDK types.
function reasoningOf(source: object): string {
  const record = source as Record<string, unknown>;
  for (const key of ['reasoning_content', 'reasoning']) {
    const value = record[key];
    if (typeof value === 'string' && value.length > 0) return value;
  }
  return '';
}

function toToolCall(
  id: string,
  name: string,
  rawArguments: string,
  index: number,
  responseId: string,
): ToolCall {
  const raw = rawArguments.trim().length === 0 ? '{}' : rawArguments;
  const parsed = parseJson(raw);
  return {
    // Some compatible servers omit ids; the conversation still needs one to pair the result.
    id: id.length > 0 ? id : `call_${responseId.length > 0 ? `${responseId}_` : ''}${index}`,
    name,
    arguments: parsed.ok ? parsed.value : raw,
    raw,
  };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

function finishResponse(input: {
  content: string;
  thinking: readonly string[];
  toolCalls: ToolCall[];
  usage: Usage;
  finishReason: string | null | undefined;
  isRefusal: boolean;
  model: string | undefined;
}): ModelResponse {
  const response: ModelResponse = {
    content: input.content,
    toolCalls: input.toolCalls,
    usage: input.usage,
    stopReason:
      input.isRefusal && input.toolCalls.length === 0
        ? 'refusal'
        : fromOpenAIFinishReason(input.finishReason, input.toolCalls.length > 0),
  };
  const thinking = input.thinking
    .map((text) => text.trim())
    .filter((text) => text.length > 0)
    .join('\n\n');
  if (thinking.length > 0) response.thinking = thinking;
  if (input.model !== undefined && input.model.length > 0) response.model = input.model;
  return response;
}
