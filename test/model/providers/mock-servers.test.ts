import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ANTHROPIC_RULES,
  anthropicReply,
  checkAnthropicRequest,
  mockSignature,
  startMockAnthropicServer,
} from '../../helpers/mock-anthropic-server.js';
import {
  checkOpenAIRequest,
  OPENAI_RULES,
  startMockOpenAIServer,
} from '../../helpers/mock-openai-server.js';

// The mocks are only worth something if they reject what the real APIs reject:
// each rule here is shown catching a request that breaks it.

const user = { role: 'user', content: 'hi' };
const call = (id: string, name = 'lookup', args = '{}') => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
const tool = { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } };

describe('checkOpenAIRequest', () => {
  it.each<[keyof typeof OPENAI_RULES, Record<string, unknown>]>([
    ['body', { messages: [user] }],
    ['roles', { model: 'm', messages: [{ role: 'robot', content: 'x' }] }],
    [
      'toolResults',
      {
        model: 'm',
        messages: [user, { role: 'assistant', content: null, tool_calls: [call('a')] }, user],
      },
    ],
    [
      'toolResults',
      {
        model: 'm',
        messages: [user, { role: 'assistant', content: null, tool_calls: [call('a')] }],
      },
    ],
    [
      'orphanResults',
      { model: 'm', messages: [user, { role: 'tool', tool_call_id: 'a', content: 'x' }] },
    ],
    [
      'orphanResults',
      {
        model: 'm',
        messages: [
          user,
          { role: 'assistant', content: null, tool_calls: [call('a')] },
          { role: 'tool', tool_call_id: 'a', content: '1' },
          { role: 'tool', tool_call_id: 'a', content: '2' },
        ],
      },
    ],
    [
      'toolCallShape',
      {
        model: 'm',
        messages: [
          user,
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: '', function: { name: 'x', arguments: '{}' } }],
          },
        ],
      },
    ],
    [
      'argumentsJson',
      {
        model: 'm',
        messages: [
          user,
          { role: 'assistant', content: null, tool_calls: [call('a', 'lookup', '{x')] },
          { role: 'tool', tool_call_id: 'a', content: 'x' },
        ],
      },
    ],
    [
      'toolNames',
      {
        model: 'm',
        messages: [user],
        tools: [
          { type: 'function', function: { name: 'web.search', parameters: { type: 'object' } } },
        ],
      },
    ],
    [
      'toolDefinitions',
      {
        model: 'm',
        messages: [user],
        tools: [{ type: 'function', function: { name: 'x', parameters: { type: 'array' } } }],
      },
    ],
    ['toolsNotEmpty', { model: 'm', messages: [user], tools: [] }],
    ['content', { model: 'm', messages: [{ role: 'assistant', content: null }] }],
    [
      'noReasoningBack',
      {
        model: 'm',
        messages: [user, { role: 'assistant', content: 'a', reasoning_content: 'r' }, user],
      },
    ],
    ['streamUsage', { model: 'm', messages: [user], stream: true }],
    ['maxTokens', { model: 'm', messages: [user], max_tokens: 10, max_completion_tokens: 10 }],
    ['temperature', { model: 'm', messages: [user], temperature: 3 }],
  ])('catches a request that breaks %s', (rule, body) => {
    expect(
      checkOpenAIRequest(body).some((violation) => violation.startsWith(OPENAI_RULES[rule])),
    ).toBe(true);
  });

  it('passes a good multi-turn request with tools', () => {
    expect(
      checkOpenAIRequest({
        model: 'm',
        stream: true,
        stream_options: { include_usage: true },
        tools: [tool],
        messages: [
          user,
          { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
          { role: 'tool', tool_call_id: 'a', content: '1' },
          { role: 'tool', tool_call_id: 'b', content: '2' },
        ],
      }),
    ).toEqual([]);
  });

  it('answers a rule-breaking request with 400 naming the rule, and records it', async () => {
    const server = await startMockOpenAIServer();
    try {
      const response = await fetch(`${server.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [user], tools: [] }),
      });

      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toContain(
        OPENAI_RULES.toolsNotEmpty,
      );
      expect(server.violations).toEqual([`request 1: ${OPENAI_RULES.toolsNotEmpty} (tools is [])`]);
    } finally {
      await server.close();
    }
  });
});

const userBlock = { role: 'user', content: [{ type: 'text', text: 'hi' }] };
const toolUse = (id: string) => ({ type: 'tool_use', id, name: 'lookup', input: {} });
const result = (id: string) => ({ type: 'tool_result', tool_use_id: id, content: 'r' });
const base = { model: 'm', max_tokens: 100 };

describe('checkAnthropicRequest', () => {
  it.each<[keyof typeof ANTHROPIC_RULES, Record<string, unknown>, string?]>([
    ['body', { max_tokens: 1, messages: [userBlock] }],
    ['maxTokens', { model: 'm', messages: [userBlock] }],
    ['systemTopLevel', { ...base, messages: [{ role: 'system', content: 'x' }, userBlock] }],
    ['firstUser', { ...base, messages: [{ role: 'assistant', content: 'x' }, userBlock] }],
    ['alternate', { ...base, messages: [userBlock, userBlock] }],
    ['lastUser', { ...base, messages: [userBlock, { role: 'assistant', content: 'x' }] }],
    ['content', { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: '  ' }] }] }],
    [
      'toolUseAnswered',
      { ...base, messages: [userBlock, { role: 'assistant', content: [toolUse('a')] }, userBlock] },
    ],
    [
      'toolResultsFirst',
      {
        ...base,
        messages: [
          userBlock,
          { role: 'assistant', content: [toolUse('a')] },
          { role: 'user', content: [{ type: 'text', text: 'x' }, result('a')] },
        ],
      },
    ],
    ['orphanResults', { ...base, messages: [{ role: 'user', content: [result('a')] }] }],
    [
      'toolUseShape',
      {
        ...base,
        messages: [
          userBlock,
          { role: 'assistant', content: [toolUse('a:1')] },
          { role: 'user', content: [result('a:1')] },
        ],
      },
    ],
    [
      'toolNames',
      {
        ...base,
        messages: [userBlock],
        tools: [{ name: 'a.b', input_schema: { type: 'object' } }],
      },
    ],
    [
      'toolDefinitions',
      { ...base, messages: [userBlock], tools: [{ name: 'a', input_schema: { type: 'string' } }] },
    ],
    [
      'thinkingConfig',
      { ...base, messages: [userBlock], thinking: { type: 'enabled', budget_tokens: 100 } },
    ],
    ['noSampling', { ...base, messages: [userBlock], temperature: 1 }],
    ['versionHeader', { ...base, messages: [userBlock] }, ''],
    [
      'thinkingUnchanged',
      {
        ...base,
        messages: [
          userBlock,
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'edited', signature: mockSignature('original') },
              { type: 'text', text: 'x' },
            ],
          },
          userBlock,
        ],
      },
    ],
    [
      'thinkingFirst',
      {
        ...base,
        max_tokens: 4000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [
          userBlock,
          { role: 'assistant', content: [toolUse('a')] },
          { role: 'user', content: [result('a')] },
        ],
      },
    ],
  ])('catches a request that breaks %s', (rule, body, version = '2026-10-21') => {
    expect(
      checkAnthropicRequest(body, version).some((violation) =>
        violation.startsWith(ANTHROPIC_RULES[rule]),
      ),
    ).toBe(true);
  });

  it('catches thinking blocks dropped from a turn that continues, over HTTP with the real SDK shapes', async () => {
    const server = await startMockAnthropicServer();
    try {
      server.enqueue(
        anthropicReply({
          blocks: [
            { type: 'thinking', thinking: 'plan' },
            { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} },
          ],
        }),
      );
      const post = (body: unknown) =>
        fetch(`${server.baseURL}/v1/messages`, {
          method: 'POST',
          headers: {
            'x-api-key': server.apiKey,
            'anthropic-version': '2026-10-21',
            'content-type': 'application/json',
          },
          body: JSON.stringify(body),
        });
      await (await post({ ...base, messages: [userBlock] })).json();

      const dropped = await post({
        ...base,
        messages: [
          userBlock,
          { role: 'assistant', content: [toolUse('toolu_1')] },
          { role: 'user', content: [result('toolu_1')] },
        ],
      });

      expect(dropped.status).toBe(400);
      expect(server.violations).toHaveLength(1);
      expect(server.violations[0]).toContain(ANTHROPIC_RULES.thinkingKept);
    } finally {
      await server.close();
    }
  });
});

describe('docs/PROVIDERS.md', () => {
  it('lists every rule the mocks enforce, word for word', () => {
    const docs = readFileSync(new URL('../../../docs/PROVIDERS.md', import.meta.url), 'utf8');

    for (const rule of [...Object.values(OPENAI_RULES), ...Object.values(ANTHROPIC_RULES)]) {
      expect(docs).toContain(rule);
    }
  });
});
