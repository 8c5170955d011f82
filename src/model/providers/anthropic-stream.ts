import type {
  MessageDeltaUsage,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages';
import { TroupeError } from '../../errors.js';
import type { ModelResponse, ModelStreamPart, Usage } from '../types.js';
import {
  fromAnthropicUsage,
  fromContentBlocks,
  REDACTED_THINKING_TEXT,
} from './anthropic-convert.js';

type StreamedBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown; json: string; toolIndex: number }
  | { type: 'other' };

/**
 * Assembles streamed events (text_delta, thinking_delta, signature_delta,
 * input_json_delta) into stream parts and, at the end, the same response
 * `fromAnthropicMessage` gives for the whole message.
 */
export class AnthropicStreamAssembler {
  readonly #blocks = new Map<number, StreamedBlock>();
  #usage: Usage = { inputTokens: 0, outputTokens: 0 };
  #stopReason: string | null = null;
  #model: string | undefined;
  #toolCount = 0;
  #thinkingCount = 0;
  #isStopped = false;

  /** The parts one event yields, in order. */
  push(event: RawMessageStreamEvent): ModelStreamPart[] {
    switch (event.type) {
      case 'message_start':
        this.#model = event.message.model;
        this.#usage = fromAnthropicUsage(event.message.usage);
        return [];
      case 'content_block_start':
        return this.#start(event.index, event.content_block);
      case 'content_block_delta':
        return this.#delta(event.index, event.delta);
      case 'content_block_stop':
        return [];
      case 'message_delta':
        this.#stopReason = event.delta.stop_reason ?? this.#stopReason;
        this.#usage = mergeUsage(this.#usage, event.usage);
        return [];
      case 'message_stop':
        this.#isStopped = true;
        return [];
      default:
        return [];
    }
  }

  /**
   * The whole response. Throws `model.stream_interrupted` when the stream
   * ended before `message_stop`: the answer would be cut short.
   */
  finish(): ModelResponse {
    if (!this.#isStopped) {
      throw new TroupeError(
        'model.stream_interrupted',
        'The Anthropic stream ended before message_stop; the reply was cut off and is not used.',
        { details: { provider: 'anthropic' } },
      );
    }
    const blocks = [...this.#blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, block]) => {
        if (block.type !== 'tool_use') return block;
        const raw = block.json.trim().length === 0 ? '{}' : block.json;
        try {
          return { ...block, input: JSON.parse(raw) as unknown };
        } catch {
          throw new TroupeError(
            'model.bad_response',
            `The input of tool call ${block.name} (${block.id}) was not valid JSON.`,
            { details: { provider: 'anthropic' } },
          );
        }
      });
    return fromContentBlocks(blocks, {
      usage: this.#usage,
      stopReason: this.#stopReason,
      model: this.#model,
    });
  }

  #start(
    index: number,
    block: Extract<RawMessageStreamEvent, { type: 'content_block_start' }>['content_block'],
  ): ModelStreamPart[] {
    switch (block.type) {
      case 'text':
        this.#blocks.set(index, { type: 'text', text: block.text ?? '' });
        return block.text ? [{ type: 'text-delta', text: block.text }] : [];
      case 'thinking': {
        const parts = this.#thinkingSeparator();
        this.#blocks.set(index, {
          type: 'thinking',
          thinking: block.thinking ?? '',
          signature: block.signature ?? '',
        });
        if (block.thinking) parts.push({ type: 'thinking-delta', text: block.thinking });
        return parts;
      }
      case 'redacted_thinking': {
        const parts = this.#thinkingSeparator();
        this.#blocks.set(index, { type: 'redacted_thinking', data: block.data });
        parts.push({ type: 'thinking-delta', text: REDACTED_THINKING_TEXT });
        return parts;
      }
      case 'tool_use': {
        const toolIndex = this.#toolCount;
        this.#toolCount += 1;
        this.#blocks.set(index, {
          type: 'tool_use',
          id: block.id,
          name: block.name,
          input: {},
          json: '',
          toolIndex,
        });
        return [
          {
            type: 'tool-call-delta',
            index: toolIndex,
            id: block.id,
            name: block.name,
            argumentsDelta: '',
          },
        ];
      }
      default:
        this.#blocks.set(index, { type: 'other' });
        return [];
    }
  }

  #delta(
    index: number,
    delta: Extract<RawMessageStreamEvent, { type: 'content_block_delta' }>['delta'],
  ): ModelStreamPart[] {
    const block = this.#blocks.get(index);
    if (block === undefined) {
      throw new TroupeError(
        'model.bad_response',
        `The Anthropic stream sent a delta for content block ${index} before starting it.`,
        { details: { provider: 'anthropic' } },
      );
    }
    if (delta.type === 'text_delta' && block.type === 'text') {
      block.text += delta.text;
      return [{ type: 'text-delta', text: delta.text }];
    }
    if (delta.type === 'thinking_delta' && block.type === 'thinking') {
      block.thinking += delta.thinking;
      return [{ type: 'thinking-delta', text: delta.thinking }];
    }
    if (delta.type === 'signature_delta' && block.type === 'thinking') {
      block.signature += delta.signature;
      return [];
    }
    if (delta.type === 'input_json_delta' && block.type === 'tool_use') {
      block.json += delta.partial_json;
      return [
        { type: 'tool-call-delta', index: block.toolIndex, argumentsDelta: delta.partial_json },
      ];
    }
    return [];
  }

  #thinkingSeparator(): ModelStreamPart[] {
    this.#thinkingCount += 1;
    return this.#thinkingCount > 1 ? [{ type: 'thinking-delta', text: '\n\n' }] : [];
  }
}

function mergeUsage(usage: Usage, delta: Partial<MessageDeltaUsage> | null | undefined): Usage {
  if (delta === null || delta === undefined) return usage;
  // message_delta counts are cumulative; a null field keeps the message_start value.
  const merged = fromAnthropicUsage({
    input_tokens: delta.input_tokens ?? usage.inputTokens,
    output_tokens: delta.output_tokens ?? usage.outputTokens,
    cache_read_input_tokens: delta.cache_read_input_tokens ?? usage.cacheReadTokens ?? 0,
    cache_creation_input_tokens: delta.cache_creation_input_tokens ?? usage.cacheWriteTokens ?? 0,
  });
  return merged;
}
