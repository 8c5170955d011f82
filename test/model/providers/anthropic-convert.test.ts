import { describe, expect, it } from 'vitest';
import {
  canEnableThinking,
  fromAnthropicStopReason,
  fromAnthropicUsage,
  toAnthropicMessages,
  toAnthropicRequest,
  toAnthropicToolId,
} from '../../../src/model/providers/anthropic-convert.js';
import { AnthropicStreamAssembler } from '../../../src/model/providers/anthropic-stream.js';
import { pairToolResults } from '../../../src/model/providers/prepare-request.js';
import type { Message, ToolCall } from '../../../src/model/types.js';
import { checkAnthropicRequest } from '../../helpers/mock-anthropic-server.js';

function call(id: string, args: unknown = {}): ToolCall {
  return { id, name: 'lookup', arguments: args, raw: JSON.stringify(args) };
}

const settings = { model: 'claude-sonnet-4-6', maxTokens: 1000 };

describe('toAnthropicRequest', () => {
  it.each<[string, Message[]]>([
    [
      'a conversation that starts with the assistant',
      [
        { role: 'assistant', content: 'Hi!' },
        { role: 'user', content: 'Hello' },
      ],
    ],
    ['only a system message', [{ role: 'system', content: 'Be brief.' }]],
    [
      'two user messages in a row',
      [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ],
    ],
    [
      'an assistant message last',
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b  ' },
      ],
    ],
    [
      'an unanswered call followed by a user message',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [call('toolu_1')] },
        { role: 'user', content: 'stop' },
      ],
    ],
    [
      'a call id from another provider',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'ok', toolCalls: [call('functions.lookup:0', { q: 1 })] },
        { role: 'tool', toolCallId: 'functions.lookup:0', name: 'lookup', content: 'found' },
      ],
    ],
    [
      'an orphan result and empty messages',
      [
        { role: 'user', content: '' },
        { role: 'tool', toolCallId: 'ghost', name: 'lookup', content: '' },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'real' },
      ],
    ],
    [
      'arguments that are not an object',
      [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 't', name: 'lookup', arguments: '[1,2', raw: '[1,2' }],
        },
      ],
    ],
  ])('repairs %s into a request that keeps every rule', (_name, messages) => {
    const body = toAnthropicRequest({ messages }, settings);

    expect(checkAnthropicRequest(body, '2026-10-21')).toEqual([]);
  });

  it('maps ids from other providers the same way in tool_use and tool_result', () => {
    expect(toAnthropicToolId('functions.lookup:0')).toBe('functions_lookup_0');
    expect(toAnthropicToolId('')).toBe('toolu_missing');
  });

  it('puts every leading system message in the top-level system field, and sends max_tokens always', () => {
    const body = toAnthropicRequest(
      {
        messages: [
          { role: 'system', content: 'One.' },
          { role: 'system', content: 'Two.' },
          { role: 'user', content: 'Hi' },
        ],
      },
      settings,
    );

    expect(body).toEqual({
      model: 'claude-sonnet-4-6',
      max_tokens: 1000,
      system: 'One.\n\nTwo.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    });
  });

  it('keeps thinking blocks first when it merges two assistant messages', () => {
    const messages = toAnthropicMessages([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'Let me think.' },
      {
        role: 'assistant',
        content: '',
        thinkingParts: [{ type: 'thinking', thinking: 't', signature: 's' }],
        toolCalls: [call('toolu_1')],
      },
      { role: 'tool', toolCallId: 'toolu_1', name: 'lookup', content: 'r' },
    ]);

    expect(messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 't', signature: 's' },
        { type: 'text', text: 'Let me think.' },
        { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} },
      ],
    });
  });

  it.each<[string, Message[], boolean]>([
    ['a fresh question', [{ role: 'user', content: 'q' }], true],
    [
      'tool results after a turn that kept its thinking',
      [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: '',
          thinkingParts: [{ type: 'redacted_thinking', data: 'd' }],
          toolCalls: [call('a')],
        },
        { role: 'tool', toolCallId: 'a', name: 'lookup', content: 'r' },
      ],
      true,
    ],
    [
      'tool results after a turn without thinking blocks',
      [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: '', toolCalls: [call('a')] },
        { role: 'tool', toolCallId: 'a', name: 'lookup', content: 'r' },
      ],
      false,
    ],
  ])('allows thinking for %s: %s', (_name, messages, expected) => {
    expect(canEnableThinking(toAnthropicMessages(pairToolResults(messages)))).toBe(expected);
    const body = toAnthropicRequest(
      { messages },
      { ...settings, maxTokens: 4000, thinking: { budgetTokens: 1024 } },
    );
    expect(body.thinking !== undefined).toBe(expected);
  });
});

describe('AnthropicStreamAssembler', () => {
  function run(events: any[]) {
    const assembler = new AnthropicStreamAssembler();
    const parts = events.flatMap((event) => assembler.push(event));
    return { parts, assembler };
  }
  const start = {
    type: 'message_start',
    message: {
      model: 'm',
      usage: { input_tokens: 5, output_tokens: 1, cache_read_input_tokens: 3 },
    },
  };

  it('keeps usage from message_start and output tokens from message_delta', () => {
    const { assembler } = run([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } },
      { type: 'message_stop' },
    ]);

    expect(assembler.finish()).toEqual({
      content: 'hi',
      toolCalls: [],
      usage: { inputTokens: 5, outputTokens: 9, cacheReadTokens: 3 },
      stopReason: 'end',
      model: 'm',
    });
  });

  it('numbers tool-call deltas by tool, not by content block, and separates thinking blocks', () => {
    const { parts } = run([
      start,
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'a' } },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'redacted_thinking', data: 'x' },
      },
      {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 't1', name: 'n', input: {} },
      },
      {
        type: 'content_block_delta',
        index: 2,
        delta: { type: 'input_json_delta', partial_json: '{}' },
      },
    ]);

    expect(parts).toEqual([
      { type: 'thinking-delta', text: 'a' },
      { type: 'thinking-delta', text: '\n\n' },
      { type: 'thinking-delta', text: '[redacted thinking]' },
      { type: 'tool-call-delta', index: 0, id: 't1', name: 'n', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
    ]);
  });

  it('fails with model.stream_interrupted before message_stop, and model.bad_response on broken tool JSON', () => {
    const cut = run([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    ]);
    const broken = run([
      start,
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'tool_use', id: 't1', name: 'n', input: {} },
      },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'input_json_delta', partial_json: '{"a":' },
      },
      { type: 'message_stop' },
    ]);

    expect(() => cut.assembler.finish()).toThrow(
      expect.objectContaining({ code: 'model.stream_interrupted' }),
    );
    expect(() => broken.assembler.finish()).toThrow(
      expect.objectContaining({ code: 'model.bad_response' }),
    );
  });
});

describe('fromAnthropicStopReason and fromAnthropicUsage', () => {
  it.each([
    ['end_turn', 'end'],
    ['stop_sequence', 'end'],
    ['tool_use', 'tool_calls'],
    ['max_tokens', 'max_tokens'],
    ['model_context_window_exceeded', 'max_tokens'],
    ['refusal', 'refusal'],
    ['pause_turn', 'other'],
    [null, 'other'],
  ] as const)('maps %s to %s', (reason, expected) => {
    expect(fromAnthropicStopReason(reason)).toBe(expected);
  });

  it('leaves cache counts out when they are zero or null', () => {
    expect(
      fromAnthropicUsage({
        input_tokens: 1,
        output_tokens: 2,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: null,
      }),
    ).toEqual({
      inputTokens: 1,
      outputTokens: 2,
    });
  });
});
