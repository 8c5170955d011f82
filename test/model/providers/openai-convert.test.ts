import { describe, expect, it } from 'vitest';
import {
  fromOpenAICompletion,
  fromOpenAIFinishReason,
  fromOpenAIUsage,
  OpenAIStreamAssembler,
  toOpenAIMessages,
  toOpenAIRequest,
  wireArguments,
} from '../../../src/model/providers/openai-convert.js';
import { ThinkTagSplitter } from '../../../src/model/providers/think-tag-splitter.js';
import type { Message, ToolCall } from '../../../src/model/types.js';
import { checkOpenAIRequest } from '../../helpers/mock-openai-server.js';

function call(id: string, raw: string, args: unknown = JSON.parse(raw)): ToolCall {
  return { id, name: 'lookup', arguments: args, raw };
}

function chunk(
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {},
): any {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  };
}

describe('toOpenAIMessages', () => {
  it.each<[string, Message, unknown]>([
    ['system', { role: 'system', content: 'Be brief.' }, { role: 'system', content: 'Be brief.' }],
    ['user', { role: 'user', content: 'Hi' }, { role: 'user', content: 'Hi' }],
    [
      'plain assistant',
      { role: 'assistant', content: 'Hello', thinking: 'private' },
      { role: 'assistant', content: 'Hello' },
    ],
    [
      'assistant with a call and no text',
      { role: 'assistant', content: '', toolCalls: [call('c1', '{"q":1}')] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } },
        ],
      },
    ],
    [
      'empty tool result',
      { role: 'tool', toolCallId: 'c1', name: 'lookup', content: '' },
      { role: 'tool', tool_call_id: 'c1', content: '(empty result)' },
    ],
  ])('converts a %s message', (_name, message, wire) => {
    expect(toOpenAIMessages([message])).toEqual([wire]);
  });
});

describe('wireArguments', () => {
  it.each<[string, ToolCall, string]>([
    ['valid raw JSON as is', call('a', '{"x": 1}'), '{"x": 1}'],
    [
      'parsed arguments when raw is not JSON',
      { id: 'a', name: 'n', arguments: { x: 1 }, raw: '{x:1' },
      '{"x":1}',
    ],
    [
      'an empty object when nothing is JSON',
      { id: 'a', name: 'n', arguments: '{x:1', raw: '{x:1' },
      '{}',
    ],
    ['an empty object for empty raw', { id: 'a', name: 'n', arguments: '', raw: '' }, '{}'],
  ])('sends %s', (_name, toolCall, expected) => {
    expect(wireArguments(toolCall)).toBe(expected);
  });
});

describe('toOpenAIRequest', () => {
  it.each<[string, Message[]]>([
    [
      'a dangling call before a user message',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [call('c1', '{}'), call('c2', '{}')] },
        { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'one' },
        { role: 'user', content: 'stop' },
      ],
    ],
    [
      'a result that arrives after a user message',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [call('c1', '{}')] },
        { role: 'user', content: 'hurry' },
        { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'late' },
      ],
    ],
    [
      'an orphan and a duplicate result',
      [
        { role: 'tool', toolCallId: 'ghost', name: 'lookup', content: 'orphan' },
        { role: 'user', content: 'go' },
        { role: 'assistant', content: '', toolCalls: [call('c1', '{}')] },
        { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'first' },
        { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'second' },
      ],
    ],
    [
      'a call with an invalid name, no id and broken JSON',
      [
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: '', name: 'web.search', arguments: '{oops', raw: '{oops' }],
        },
      ],
    ],
  ])('repairs %s into a request that keeps every rule', (_name, messages) => {
    const body = toOpenAIRequest({ messages }, { model: 'm', maxTokensField: 'max_tokens' });

    expect(checkOpenAIRequest(body)).toEqual([]);
  });

  it('moves a late result up to its call and keeps the user message after it', () => {
    const body = toOpenAIRequest(
      {
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: '', toolCalls: [call('c1', '{}')] },
          { role: 'user', content: 'hurry' },
          { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'late' },
        ],
      },
      { model: 'm', maxTokensField: 'max_tokens' },
    );

    expect(body.messages.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'user',
    ]);
  });

  it('sends max_completion_tokens or max_tokens as told, and no tools field when there are none', () => {
    const official = toOpenAIRequest(
      { messages: [{ role: 'user', content: 'x' }], tools: [] },
      { model: 'm', maxTokens: 100, maxTokensField: 'max_completion_tokens' },
    );
    const compatible = toOpenAIRequest(
      { messages: [{ role: 'user', content: 'x' }] },
      { model: 'm', maxTokens: 100, temperature: 0, maxTokensField: 'max_tokens' },
    );

    expect(official).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_completion_tokens: 100,
    });
    expect(compatible).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 100,
      temperature: 0,
    });
  });

  it('refuses a tool whose name or parameters no provider accepts', () => {
    const settings = { model: 'm', maxTokensField: 'max_tokens' } as const;
    const messages: Message[] = [{ role: 'user', content: 'x' }];

    expect(() =>
      toOpenAIRequest(
        {
          messages,
          tools: [{ name: 'web.search', description: '', parameters: { type: 'object' } }],
        },
        settings,
      ),
    ).toThrow(/Invalid tool name "web.search"/);
    expect(() =>
      toOpenAIRequest(
        { messages, tools: [{ name: 'list', description: '', parameters: { type: 'array' } }] },
        settings,
      ),
    ).toThrow(/type "object"/);
    expect(
      toOpenAIRequest(
        { messages, tools: [{ name: 'noargs', description: 'd', parameters: {} }] },
        settings,
      ).tools,
    ).toEqual([
      {
        type: 'function',
        function: {
          name: 'noargs',
          description: 'd',
          parameters: { type: 'object', properties: {} },
        },
      },
    ]);
  });
});

describe('ThinkTagSplitter', () => {
  function split(chunks: string[]): { text: string; thinking: string } {
    const splitter = new ThinkTagSplitter();
    const pieces = [...chunks.flatMap((text) => splitter.push(text)), ...splitter.flush()];
    return {
      text: pieces
        .filter((piece) => piece.kind === 'text')
        .map((piece) => piece.text)
        .join(''),
      thinking: pieces
        .filter((piece) => piece.kind === 'thinking')
        .map((piece) => piece.text)
        .join(''),
    };
  }

  it.each<[string, string[], { text: string; thinking: string }]>([
    ['no tags', ['Hello ', 'world'], { text: 'Hello world', thinking: '' }],
    ['whole tags', ['<think>plan</think>\n\nAnswer'], { text: 'Answer', thinking: 'plan' }],
    [
      'tags split in every place',
      ['<', 'thi', 'nk>pl', 'an</', 'think', '>  Ans', 'wer'],
      { text: 'Ans' + 'wer', thinking: 'plan' },
    ],
    [
      'a stray closing tag',
      ['reasoning leaked</think>Answer'],
      { text: 'reasoning leakedAnswer', thinking: '' },
    ],
    [
      'an unclosed block at the end',
      ['Answer <think>still thinking'],
      { text: 'Answer ', thinking: 'still thinking' },
    ],
    ['a lone < that is not a tag', ['a < b', ' and c <'], { text: 'a < b and c <', thinking: '' }],
  ])('splits %s', (_name, chunks, expected) => {
    expect(split(chunks)).toEqual(expected);
  });
});

describe('OpenAIStreamAssembler', () => {
  it('assembles calls by index, accepts servers that omit the index, and maps stop=tool_calls', () => {
    const assembler = new OpenAIStreamAssembler();
    assembler.push(chunk({ role: 'assistant', content: '' }));
    assembler.push(
      chunk({ tool_calls: [{ id: 'x1', function: { name: 'lookup', arguments: '{"a":' } }] }),
    );
    assembler.push(chunk({ tool_calls: [{ function: { arguments: '1}' } }] }));
    assembler.push(
      chunk({ tool_calls: [{ id: 'x2', function: { name: 'lookup', arguments: '{}' } }] }),
    );
    assembler.push(chunk({}, 'stop'));

    expect(assembler.finish()).toMatchObject({
      toolCalls: [
        { id: 'x1', arguments: { a: 1 } },
        { id: 'x2', arguments: {} },
      ],
      stopReason: 'tool_calls',
      usage: { inputTokens: 0, outputTokens: 0 },
    });
  });

  it('fails with model.stream_interrupted when no finish_reason came', () => {
    const assembler = new OpenAIStreamAssembler();
    assembler.push(chunk({ content: 'half' }));

    expect(() => assembler.finish()).toThrow(
      expect.objectContaining({ code: 'model.stream_interrupted' }),
    );
  });

  it('gives ids to calls a server sent without one', () => {
    const assembler = new OpenAIStreamAssembler();
    assembler.push(
      chunk(
        { tool_calls: [{ index: 0, function: { name: 'lookup', arguments: '' } }] },
        'tool_calls',
      ),
    );

    expect(assembler.finish().toolCalls).toEqual([
      { id: 'call_chatcmpl-1_0', name: 'lookup', arguments: {}, raw: '{}' },
    ]);
  });
});

describe('fromOpenAICompletion', () => {
  it('uses a refusal as the answer with stopReason refusal', () => {
    const response = fromOpenAICompletion({
      id: 'c',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [
        {
          index: 0,
          logprobs: null,
          finish_reason: 'stop',
          message: { role: 'assistant', content: null, refusal: 'I cannot help with that.' },
        },
      ],
    });

    expect(response).toMatchObject({ content: 'I cannot help with that.', stopReason: 'refusal' });
  });

  it('fails with model.bad_response when there are no choices', () => {
    expect(() =>
      fromOpenAICompletion({
        id: 'c',
        object: 'chat.completion',
        created: 0,
        model: 'm',
        choices: [],
      }),
    ).toThrow(expect.objectContaining({ code: 'model.bad_response' }));
  });
});

describe('fromOpenAIFinishReason and fromOpenAIUsage', () => {
  it.each([
    ['stop', false, 'end'],
    ['stop', true, 'tool_calls'],
    ['length', false, 'max_tokens'],
    ['tool_calls', true, 'tool_calls'],
    ['function_call', false, 'tool_calls'],
    ['content_filter', false, 'content_filter'],
    ['eos', false, 'other'],
    [null, false, 'other'],
  ] as const)('maps %s (tool calls: %s) to %s', (reason, hasCalls, expected) => {
    expect(fromOpenAIFinishReason(reason, hasCalls)).toBe(expected);
  });

  it('treats missing usage as zero and cached tokens as cache reads', () => {
    expect(fromOpenAIUsage(undefined)).toEqual({ inputTokens: 0, outputTokens: 0 });
    expect(
      fromOpenAIUsage({
        prompt_tokens: 10,
        completion_tokens: 2,
        total_tokens: 12,
        prompt_tokens_details: { cached_tokens: 4 },
      }),
    ).toEqual({
      inputTokens: 6,
      outputTokens: 2,
      cacheReadTokens: 4,
    });
  });
});
