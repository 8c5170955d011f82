import { describe, expect, it } from 'vitest';
import { isTroupeError } from '../../../../src/errors.js';
import { defineRole, toRoleSpec } from '../../../../src/roles/role.js';
import {
  joinSpawns,
  NATS_WIRE_VERSION,
  splitSpawns,
  WorkDecoder,
  WorkEncoder,
  type WorkItemInput,
  withJournalRead,
} from '../../../../src/runtime/wire/nats/node-wire.js';

const role = toRoleSpec(defineRole({ name: 'worker', description: 'w', system: 'w' }));

function work(actorId: string, session = 's1'): WorkItemInput {
  return {
    wire: NATS_WIRE_VERSION,
    runId: 'run-1',
    session: { id: session, startedAt: 1 },
    config: {
      runId: 'run-1',
      workspace: '/tmp',
      grants: ['read'],
      toolModules: [],
      hasApprove: false,
    },
    roleKey: 'r1',
    role,
    modelKey: 'm1',
    model: { provider: 'offline' },
    start: {
      type: 'actor.start',
      actorId,
      role: 'r1',
      model: 'm1',
      task: `task of ${actorId}`,
      attempt: 1,
    },
    generation: 0,
    readJournal: false,
  };
}

// The same spawn with its parts line replaced (what a node that knows the keys never reads).
function withParts(bytes: Uint8Array, parts: string): Uint8Array {
  const text = new TextDecoder().decode(bytes);
  return new TextEncoder().encode(`${text.slice(0, text.indexOf('\n'))}\n${parts}`);
}

describe('WorkEncoder and WorkDecoder', () => {
  it('round-trips a spawn and parses the parts a session repeats only once', () => {
    const encoder = new WorkEncoder();
    const decoder = new WorkDecoder();

    const first = decoder.decode(encoder.encode(work('a-1')));
    expect(first.start.task).toBe('task of a-1');
    expect(first.role.name).toBe('worker');
    expect(first.model).toEqual({ provider: 'offline' });
    expect(first.config.workspace).toBe('/tmp');

    // The session's keys are known now: its parts line is not even parsed.
    const second = decoder.decode(withParts(encoder.encode(work('a-2')), 'not json'));
    expect(second.start.actorId).toBe('a-2');
    expect(second.role.name).toBe('worker');
  });

  it("refuses a new session's spawn whose parts are invalid, saying which", () => {
    const encoder = new WorkEncoder();
    const decoder = new WorkDecoder();
    decoder.decode(encoder.encode(work('a-1')));
    const refused = (() => {
      try {
        decoder.decode(
          withParts(
            encoder.encode(work('b-1', 's2')),
            JSON.stringify({ config: {}, role, model: { provider: 'offline' } }),
          ),
        );
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(isTroupeError(refused, 'runtime.protocol')).toBe(true);
    expect((refused as Error).message).toMatch(/config is invalid/);
  });

  it('keeps every field of a spawn, and refuses an invalid header saying what is wrong', () => {
    const encoder = new WorkEncoder();
    const decoder = new WorkDecoder();
    const sent: WorkItemInput = {
      ...work('c-1'),
      generation: 2,
      readJournal: true,
      start: { ...work('c-1').start, parentId: 'p-1', key: 'k-1', attempt: 3 },
    };
    expect(decoder.decode(encoder.encode(sent))).toEqual(sent);

    const text = new TextDecoder().decode(encoder.encode(work('c-2')));
    const bad = text.replace('"attempt":1', '"attempt":0');
    const refused = (() => {
      try {
        decoder.decode(new TextEncoder().encode(bad));
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(isTroupeError(refused, 'runtime.protocol')).toBe(true);
    expect((refused as Error).message).toMatch(/spawn request is invalid.*\n.*start\.attempt/s);
  });
});

describe('spawns in one message of the work queue', () => {
  it('splits a message back into the spawns joined in it, one of them for a message of one', () => {
    const encoder = new WorkEncoder();
    const decoder = new WorkDecoder();
    // A task may hold any text; JSON escapes control characters, so none reads as a separator.
    const tasks = ['plain', 'with \u001e a separator and\na newline', 'é and emoji 🙂'];
    const spawns = tasks.map((task, index) =>
      encoder.encode({ ...work(`a-${index}`), start: { ...work(`a-${index}`).start, task } }),
    );
    const parts = splitSpawns(joinSpawns(spawns));
    expect(parts).toHaveLength(3);
    expect(parts.map((part) => decoder.decode(part).start.task)).toEqual(tasks);

    const [only] = spawns;
    expect(splitSpawns(joinSpawns(spawns.slice(0, 1)))).toEqual([only]);
  });

  it("rewrites a spawn to read its actor's journal first, and touches nothing else", () => {
    const encoder = new WorkEncoder();
    const decoder = new WorkDecoder();
    const sent = {
      ...work('b-1'),
      start: { ...work('b-1').start, task: 'say "readJournal":false}' },
    };
    const spawn = encoder.encode(sent);
    const again = withJournalRead(spawn);
    expect(again.length).toBe(spawn.length);
    expect(decoder.decode(again)).toEqual({ ...sent, readJournal: true });
    // The spawn it came from is left as it was, and one that reads it already stays so.
    expect(decoder.decode(spawn).readJournal).toBe(false);
    const reading = encoder.encode({ ...work('b-2'), readJournal: true });
    expect(withJournalRead(reading)).toBe(reading);
  });
});
