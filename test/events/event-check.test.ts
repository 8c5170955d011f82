import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serializeError, TroupeError } from '../../src/errors.js';
import { checkEvent, compileCheck } from '../../src/events/event-check.js';
import { AgentEventSchema, EVENT_TYPES, type UnsequencedEvent } from '../../src/events/schema.js';

const envelope = { v: 1, ts: 1_700_000_000_000, runId: 'run-1', agentId: 'a-1' } as const;
const withParent = { ...envelope, parentId: 'p-1', role: 'researcher' } as const;
const usage = { inputTokens: 10, outputTokens: 3 };
const error = serializeError(new TroupeError('tool.failed', 'boom', { details: { a: 1 } }));

// At least one valid event of every type, with optional fields both present and absent.
const VALID: Array<Record<string, unknown>> = [
  { ...envelope, type: 'run.started', task: 't' },
  { ...envelope, type: 'run.started', task: 't', options: { a: 1 } },
  { ...envelope, type: 'run.finished', status: 'completed' },
  { ...envelope, type: 'run.finished', status: 'failed', final: 'f', error, usage },
  { ...withParent, type: 'agent.spawned', task: 't', model: 'm', depth: 1 },
  { ...envelope, type: 'agent.spawned', task: 't' },
  { ...withParent, type: 'agent.finished', status: 'completed', stopReason: 'final', steps: 2 },
  { ...envelope, type: 'agent.finished', status: 'failed', error, usage, final: '' },
  { ...envelope, type: 'agent.progress', note: 'n' },
  { ...envelope, type: 'agent.nudged', reason: 'r' },
  { ...withParent, type: 'model.request', step: 0, messages: 2, tools: 1 },
  { ...withParent, type: 'model.delta', kind: 'text', text: 'hi ' },
  {
    ...withParent,
    type: 'model.response',
    content: '',
    toolCalls: [{ id: 'c1', name: 'noop', arguments: {}, raw: '{}' }],
    usage: { ...usage, cacheReadTokens: 1 },
    stopReason: 'tool_calls',
  },
  { ...envelope, type: 'model.response', content: 'x', toolCalls: [], thinking: 't', usage },
  { ...withParent, type: 'tool.call', callId: 'c1', name: 'noop', input: { a: [1] } },
  { ...envelope, type: 'tool.call', callId: 'c1', name: 'noop', input: undefined },
  {
    ...withParent,
    type: 'tool.result',
    callId: 'c1',
    name: 'noop',
    ok: false,
    content: 'Error: x',
    error: { code: 'tool.failed', message: 'x' },
    durationMs: 0.25,
  },
  { ...envelope, type: 'tool.result', callId: 'c1', name: 'noop', ok: true, content: 'ok' },
  { ...withParent, type: 'step', step: { index: 0, kind: 'tool_call', detail: 'noop({})' } },
  { ...envelope, type: 'message.sent', channel: 'c', messageId: 'm', to: 'b', payload: { x: 1 } },
  { ...envelope, type: 'message.received', channel: 'c', messageId: 'm', from: 'b' },
  { ...envelope, type: 'budget.warning', scope: 'agent', metric: 'tokens', used: 8, limit: 10 },
  { ...envelope, type: 'budget.exceeded', scope: 'tree', metric: 'cost', used: 1.5, limit: 1 },
  {
    ...envelope,
    type: 'history.compressed',
    beforeMessages: 9,
    afterMessages: 4,
    beforeTokens: 900,
    afterTokens: 200,
  },
  { ...envelope, type: 'journal.diverged', step: 2, reason: 'the request changed' },
  { ...envelope, type: 'callback.error', callback: 'onStep', error },
  { ...envelope, type: 'warning.raised', source: 'console', message: 'The model is deprecated' },
  {
    ...envelope,
    type: 'role.adapted',
    name: 'researcher',
    dropped: ['fetch_url'],
    tiers: ['network'],
  },
];

// Values a producer could get wrong: every JSON type, edge numbers, absence.
const ODD_VALUES: unknown[] = [
  undefined,
  null,
  '',
  'x',
  0,
  -1,
  1.5,
  2 ** 60,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  {},
  [],
  [{}],
  { a: 1 },
];

type Path = Array<string | number>;

function pathsOf(value: unknown, path: Path = []): Path[] {
  if (typeof value !== 'object' || value === null) return [];
  const entries = Array.isArray(value)
    ? value.map((item, index) => [index, item] as const)
    : Object.entries(value);
  return entries.flatMap(([key, item]) => [[...path, key], ...pathsOf(item, [...path, key])]);
}

function mutate(value: unknown, path: Path, replacement: unknown, remove: boolean): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let target = copy;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
  const last = path.at(-1) as string | number;
  if (remove) delete target[last];
  else target[last] = replacement;
  return copy;
}

const unsequenced = (AgentEventSchema.options as readonly z.ZodObject[]).map((option) =>
  option.omit({ seq: true }),
);
const union = z.discriminatedUnion(
  'type',
  unsequenced as unknown as [z.ZodObject, ...z.ZodObject[]],
);

describe('compileCheck', () => {
  it('agrees with zod on every valid event and every mutation of every field', () => {
    let compared = 0;
    for (const event of VALID) {
      const option = unsequenced.find(
        (candidate) => (candidate.shape['type'] as z.ZodLiteral<string>).value === event['type'],
      ) as z.ZodObject;
      const check = compileCheck(option);
      const cases: unknown[] = [event, { ...event, extra: 'stripped by zod' }];
      for (const path of pathsOf(event)) {
        cases.push(mutate(event, path, undefined, true));
        for (const odd of ODD_VALUES) cases.push(mutate(event, path, odd, false));
      }
      for (const candidate of cases) {
        expect(check(candidate), JSON.stringify(candidate)).toBe(
          option.safeParse(candidate).success,
        );
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(3000);
  });

  it('covers every event type in the valid samples', () => {
    expect(new Set(VALID.map((event) => event['type']))).toEqual(new Set(EVENT_TYPES));
    for (const event of VALID) expect(union.safeParse(event).success).toBe(true);
  });

  it('applies refinements and leaves unsupported kinds to zod when a schema uses them', () => {
    const schema = z.object({
      count: z.number().int().nonnegative(),
      name: z.string().min(2),
      tags: z.record(z.string(), z.number()),
      mode: z.string().default('a'),
    });
    const check = compileCheck(schema);
    const cases = [
      { count: 1, name: 'ab', tags: { a: 1 } },
      { count: 1, name: 'ab', tags: { a: 1 }, mode: 'b' },
      { count: 1.5, name: 'ab', tags: {} },
      { count: -1, name: 'ab', tags: {} },
      { count: 1, name: 'a', tags: {} },
      { count: 1, name: 'ab', tags: { a: 'x' } },
      { count: 1, name: 'ab', tags: {}, mode: 3 },
      { count: 2 ** 60, name: 'ab', tags: {} },
    ];
    for (const candidate of cases) {
      expect(check(candidate), JSON.stringify(candidate)).toBe(schema.safeParse(candidate).success);
    }
  });
});

describe('checkEvent', () => {
  it('returns a valid event itself when it fits the schema', () => {
    for (const event of VALID) {
      expect(checkEvent(event as unknown as UnsequencedEvent)).toBe(event);
    }
  });

  it('returns a callback.error naming the problem when an event is invalid', () => {
    const bad = { ...envelope, type: 'model.request', step: -1, messages: 2, tools: 1 };
    const checked = checkEvent(bad as unknown as UnsequencedEvent);
    expect(checked).toMatchObject({
      type: 'callback.error',
      agentId: 'a-1',
      callback: 'event validation',
      error: { code: 'runtime.protocol' },
    });
    expect(checked.type === 'callback.error' && checked.error.message).toContain('step');
  });
});
