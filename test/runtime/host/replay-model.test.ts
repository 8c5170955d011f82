import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../../src/model/providers/scripted.js';
import type { ModelResponse, ModelStreamPart } from '../../../src/model/types.js';
import { ReplayModel } from '../../../src/runtime/host/replay-model.js';

const request = { messages: [{ role: 'user' as const, content: 'go' }] };

function recorded(content: string): ModelResponse {
  return {
    content,
    toolCalls: [],
    usage: { inputTokens: 10, outputTokens: 5 },
    stopReason: 'end',
  };
}

async function collect(parts: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const out: ModelStreamPart[] = [];
  for await (const part of parts) out.push(part);
  return out;
}

describe('ReplayModel', () => {
  it('answers from the journal with no usage, then calls the model and records each live response', async () => {
    const inner = new ScriptedModel({ steps: [{ content: 'live', repeat: true }] });
    const records: [number, string][] = [];
    const model = new ReplayModel(
      inner,
      [recorded('one'), recorded('two')],
      async (step, response) => {
        records.push([step, response.content]);
      },
    );

    const first = await model.complete(request);
    const second = await collect(model.stream(request));
    const third = await model.complete(request);
    const fourth = await collect(model.stream(request));

    expect(first).toMatchObject({ content: 'one', usage: { inputTokens: 0, outputTokens: 0 } });
    expect(second).toEqual([
      {
        type: 'finish',
        response: { ...recorded('two'), usage: { inputTokens: 0, outputTokens: 0 } },
      },
    ]);
    expect(third.content).toBe('live');
    expect(fourth.at(-1)).toMatchObject({ type: 'finish', response: { content: 'live' } });
    expect(inner.calls).toHaveLength(2);
    expect(records).toEqual([
      [3, 'live'],
      [4, 'live'],
    ]);
    expect(model.replayed).toBe(2);
  });

  it('returns a live response only once its record is stored', async () => {
    const inner = new ScriptedModel({ steps: [{ content: 'live', repeat: true }] });
    let store: (() => void) | undefined;
    const model = new ReplayModel(
      inner,
      [],
      () =>
        new Promise<void>((resolve) => {
          store = resolve;
        }),
    );
    let returned = false;
    const call = model.complete(request).then((response) => {
      returned = true;
      return response;
    });
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));

    expect(store).toBeDefined();
    expect(returned).toBe(false);
    store?.();
    expect((await call).content).toBe('live');
  });
});
