import { describe, expect, it } from 'vitest';
import { createJsonRedactor, createRedactor, redactValue } from '../../src/util/redact.js';

const env = { OPENAI_API_KEY: 'abc"def\\ghi-123456', HOME: '/home/someone', SHORT_TOKEN: 'x' };

// What the trace and --json wrote before: a redacted deep copy, serialized.
function slow(value: unknown): string {
  return JSON.stringify(redactValue(value, createRedactor(env)));
}

const samples: unknown[] = [
  { type: 'agent.progress', note: 'nothing secret here', step: 3, tags: ['a', 'b'] },
  { type: 'tool.call', input: { path: 'notes.md', apiKey: 'plain-value' } },
  { type: 'tool.call', input: { nested: [{ password: 'hunter22222' }], count: 2 } },
  { type: 'tool.call', input: { token: 42, authorization: null, secret: { inner: 'x' } } },
  { type: 'model.delta', text: `the key is ${env.OPENAI_API_KEY} again` },
  { type: 'model.delta', text: 'sk-ant-abcdefghijkl and sk-proj-abcdefghijklmnopqrst' },
  { type: 'model.delta', text: 'header Bearer abcdefghijklmnopqrstuvwxyz' },
  { type: 'model.delta', text: 'Bearer short, sk- short, plain "quotes" \\ and \n lines' },
  { type: 'run.finished', usage: { inputTokens: 10, outputTokens: 2 }, final: '/home/someone' },
  { list: [1, 'two', [3, { API_KEY: 'abcdefghij' }]], empty: {}, none: undefined },
  'a bare string with sk-abcdefghijklmnopqrstu',
  17,
  null,
];

describe('createJsonRedactor', () => {
  it('writes exactly what redacting a copy and serializing it wrote, secrets or not', () => {
    const serialize = createJsonRedactor(env);
    for (const sample of samples) expect(serialize(sample)).toBe(slow(sample));
  });

  it('leaves nothing of a secret in its output', () => {
    const serialize = createJsonRedactor(env);
    const text = serialize({ a: [{ b: `x${env.OPENAI_API_KEY}y` }], password: 'p4ssw0rd-long' });
    expect(text).not.toContain('ghi-123456');
    expect(text).not.toContain('p4ssw0rd');
    expect(text).toContain('[redacted]');
  });
});
