import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../../src/errors.js';
import { createModel } from '../../../src/model/model.js';
import { ScriptedModel } from '../../../src/model/providers/scripted.js';
import type { ModelRequest, ModelStreamPart } from '../../../src/model/types.js';

const user = (content: string): ModelRequest => ({ messages: [{ role: 'user', content }] });

describe('ScriptedModel', () => {
  it('answers steps in order and records each call', async () => {
    const model = new ScriptedModel({ steps: [{ content: 'one' }, { content: 'two' }] });
    expect((await model.complete(user('a'))).content).toBe('one');
    expect((await model.complete(user('b'))).content).toBe('two');
    expect(model.calls.map((c) => [c.call, c.stepIndex])).toEqual([
      [1, 0],
      [2, 1],
    ]);
    model.assertComplete();
  });

  it('matches on role, agent, call number and conversation', async () => {
    const model = new ScriptedModel({
      steps: [
        { match: { role: 'analyst' }, content: 'analysis' },
        { match: { agent: 'r1', call: 1 }, content: 'r1 first' },
        { match: { conversationContains: 'budget' }, content: 'about budget', repeat: true },
      ],
    });
    const asAnalyst = { ...user('x'), caller: { name: 'a1', role: 'analyst' } };
    expect((await model.complete({ ...user('x'), caller: { name: 'r1' } })).content).toBe(
      'r1 first',
    );
    expect((await model.complete(asAnalyst)).content).toBe('analysis');
    expect((await model.complete(user('the budget'))).content).toBe('about budget');
    expect((await model.complete(user('budget again'))).content).toBe('about budget');
  });

  it('matches on the last tool result content and error state', async () => {
    const model = new ScriptedModel({
      steps: [
        { match: { lastToolResultIsError: true }, content: 'handled error' },
        { match: { lastToolResultContains: '42' }, content: 'saw 42' },
      ],
    });
    const tool = (content: string, isError?: boolean): ModelRequest => ({
      messages: [
        { role: 'tool', toolCallId: 'c', name: 't', content, ...(isError ? { isError } : {}) },
      ],
    });
    expect((await model.complete(tool('value 42'))).content).toBe('saw 42');
    expect((await model.complete(tool('Error: no', true))).content).toBe('handled error');
  });

  it('fails with a clear script_exhausted error naming the call when the script runs out', async () => {
    const model = new ScriptedModel({ steps: [] });
    const error = await model
      .complete({ ...user('hello'), caller: { name: 'w', role: 'researcher' } })
      .catch((e: unknown) => e);
    expect(isTroupeError(error, 'model.script_exhausted')).toBe(true);
    expect((error as Error).message).toMatch(
      /no step for call 1 from w \(role researcher\).*"hello"/,
    );
  });

  it('throws from assertComplete when steps are left', async () => {
    const model = new ScriptedModel({ steps: [{ content: 'a' }, { content: 'b' }] });
    await model.complete(user('x'));
    expect(() => model.assertComplete()).toThrow(/1 unused step after 1 call/);
  });

  it('fails the call with the scripted error', async () => {
    const model = new ScriptedModel({
      steps: [{ error: { code: 'model.rate_limited', message: 'slow down', status: 429 } }],
    });
    const error = await model.complete(user('x')).catch((e: unknown) => e);
    expect(isTroupeError(error, 'model.rate_limited')).toBe(true);
  });

  it('keeps malformed argument strings raw so the registry can report them', async () => {
    const model = new ScriptedModel({
      steps: [{ toolCalls: [{ name: 't', arguments: '{oops' }] }],
    });
    const response = await model.complete(user('x'));
    expect(response.toolCalls[0]).toMatchObject({ name: 't', raw: '{oops', arguments: '{oops' });
    expect(response.stopReason).toBe('tool_calls');
  });

  it('streams deltas that add up to the response, ending with finish', async () => {
    const model = new ScriptedModel({ steps: [{ content: 'hello there world', thinking: 'hmm' }] });
    const parts: ModelStreamPart[] = [];
    for await (const part of model.stream(user('x'))) parts.push(part);
    const text = parts.flatMap((p) => (p.type === 'text-delta' ? [p.text] : [])).join('');
    expect(text).toBe('hello there world');
    expect(parts[0]).toEqual({ type: 'thinking-delta', text: 'hmm' });
    expect(parts.at(-1)).toMatchObject({
      type: 'finish',
      response: { content: 'hello there world' },
    });
  });

  it('makes the call on the first next() and ends the stream when return() or throw() is called', async () => {
    const model = new ScriptedModel({ steps: [{ content: 'a b c', repeat: true }] });
    const stream = model.stream(user('x'));
    expect(model.calls).toHaveLength(0);
    expect(await stream.next()).toEqual({ done: false, value: { type: 'text-delta', text: 'a ' } });
    expect(model.calls).toHaveLength(1);
    expect(await stream.return(undefined)).toEqual({ done: true, value: undefined });
    expect(await stream.next()).toEqual({ done: true, value: undefined });

    const other = model.stream(user('y'));
    await expect(other.throw(new Error('stop'))).rejects.toThrow('stop');
    expect(await other.next()).toEqual({ done: true, value: undefined });
    expect(model.calls).toHaveLength(1);
  });

  it('rejects next() with the call error when the step fails, then ends the stream', async () => {
    const model = new ScriptedModel({
      steps: [{ error: { code: 'model.server', message: 'down', status: 503 } }],
    });
    const stream = model.stream(user('x'));
    const error = await stream.next().catch((e: unknown) => e);
    expect(isTroupeError(error, 'model.server')).toBe(true);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it('is rebuilt from its serializable spec by createModel', async () => {
    const spec = structuredClone(new ScriptedModel({ steps: [{ content: 'again' }] }).spec);
    const rebuilt = createModel(spec);
    expect((await rebuilt.complete(user('x'))).content).toBe('again');
  });

  it('rejects an invalid spec with a readable message', () => {
    expect(() =>
      createModel({ provider: 'scripted', script: { steps: [{ bogus: 1 }] } } as never),
    ).toThrow(/Invalid model spec/);
  });
});
