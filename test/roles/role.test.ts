import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isTroupeError } from '../../src/errors.js';
import { analyst, findingsChannel, reporter, researcher } from '../../src/roles/builtin.js';
import { DEFAULT_RETRY, defineRole, parseRoleOutput, toRoleSpec } from '../../src/roles/role.js';

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('defineRole', () => {
  it('fills defaults when only the required fields are given', () => {
    const role = defineRole({ name: 'summarizer', description: 'd', system: 's' });
    expect(role).toMatchObject({
      tools: [],
      maxSteps: 10,
      publishes: [],
      subscribes: [],
      canDelegate: false,
    });
    expect(role.retry).toEqual(DEFAULT_RETRY);
    expect(
      defineRole({ name: 'x', description: 'd', system: 's', retry: 'fail_fast' }).retry.maxRetries,
    ).toBe(0);
  });

  it('throws usage.invalid_role for a name that cannot be an actor id', () => {
    expect(
      isTroupeError(
        thrown(() => defineRole({ name: 'Big Role', description: 'd', system: 's' })),
        'usage.invalid_role',
      ),
    ).toBe(true);
  });

  it('throws usage.invalid_role for a step limit below one', () => {
    expect(
      isTroupeError(
        thrown(() => defineRole({ name: 'x', description: 'd', system: 's', maxSteps: 0 })),
        'usage.invalid_role',
      ),
    ).toBe(true);
  });
});

describe('toRoleSpec', () => {
  it('spells out publishing, subscribing and the output shape in the system prompt', () => {
    const role = defineRole({
      name: 'judge',
      description: 'd',
      system: 'You judge.',
      publishes: [findingsChannel],
      subscribes: [findingsChannel],
      output: z.object({ verdict: z.string() }),
    });
    const spec = toRoleSpec(role);
    expect(spec.publishes.map((channel) => channel.name)).toEqual(['findings']);
    expect(spec.subscribes).toEqual(['findings']);
    expect(spec.system).toContain('publish_findings');
    expect(spec.system).toContain('[channel "<name>" closed: no more messages will arrive]');
    expect(spec.system).toContain('"verdict"');
  });

  it("carries the role's compression over the run's, and false from either side", () => {
    const plain = defineRole({ name: 'plain', description: 'd', system: 's' });
    const tight = defineRole({
      name: 'tight',
      description: 'd',
      system: 's',
      compression: { at: 0.5, keepTurns: 2 },
    });
    const whole = defineRole({ name: 'whole', description: 'd', system: 's', compression: false });
    // No setting anywhere: absent, so the actor compresses when its model's window is known.
    expect(toRoleSpec(plain).compression).toBeUndefined();
    expect(toRoleSpec(plain, { contextWindow: 8000 }).compression).toEqual({ contextWindow: 8000 });
    expect(toRoleSpec(tight, { contextWindow: 8000, at: 0.9 }).compression).toEqual({
      contextWindow: 8000,
      at: 0.5,
      keepTurns: 2,
    });
    expect(toRoleSpec(whole, { contextWindow: 8000 }).compression).toBe(false);
    expect(toRoleSpec(tight, false).compression).toBe(false);
  });

  it('refuses a compression setting out of range when the role is defined', () => {
    expect(() =>
      defineRole({ name: 'bad', description: 'd', system: 's', compression: { at: 1.5 } }),
    ).toThrow(/compression must be false or/);
  });
});

describe('parseRoleOutput', () => {
  const role = defineRole({
    name: 'judge',
    description: 'd',
    system: 's',
    output: z.object({ verdict: z.string() }),
  });

  it('parses the JSON object in a final answer, fences and all', () => {
    expect(parseRoleOutput(role, '```json\n{"verdict":"yes"}\n```')).toEqual({
      ok: true,
      output: { verdict: 'yes' },
    });
  });

  it('says what is wrong when the answer does not fit', () => {
    const result = parseRoleOutput(role, '{"verdict": 3}');
    expect(result.ok).toBe(false);
    expect(parseRoleOutput(role, 'no json here').ok).toBe(false);
  });
});

describe('built-in roles', () => {
  it('give researchers read and fetch tools and the findings channel', () => {
    expect(researcher.tools).toEqual([
      'read_file',
      'list_dir',
      'search_files',
      'fetch_url',
      'report_progress',
    ]);
    expect(researcher.publishes).toEqual([findingsChannel]);
  });

  it('keep the analyst off the network, subscribed to findings', () => {
    expect(analyst.tools).not.toContain('fetch_url');
    expect(analyst.subscribes).toEqual([findingsChannel]);
  });

  it('let the reporter write and read only', () => {
    expect(reporter.tools).toEqual(['write_file', 'read_file', 'report_progress']);
  });
});
