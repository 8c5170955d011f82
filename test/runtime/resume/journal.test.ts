import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type JournalEntry, journalLine } from '../../../src/agent/journal.js';
import {
  FileJournal,
  type JournalNote,
  noteJson,
  readJournal,
} from '../../../src/runtime/resume/journal.js';
import { createRedactor } from '../../../src/util/redact.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function journalPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-journal-'));
  dirs.push(dir);
  return join(dir, 'journal.jsonl');
}

const RUN = { runId: 'run-1', task: 'the task' };
const model = (step: number, content: string): JournalEntry => ({
  kind: 'model',
  step,
  hash: `h${step}`,
  response: {
    content,
    toolCalls: [],
    thinkingParts: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }],
    usage: { inputTokens: 3, outputTokens: 4 },
    stopReason: 'end',
  },
});

describe('FileJournal', () => {
  it('redacts secrets from the records it writes when given a redactor, keeping their field names', () => {
    const path = journalPath();
    const secret = 'sk-journal-secret-value-0123456789';
    const journal = new FileJournal(path, RUN, {
      redact: createRedactor({ OPENAI_API_KEY: secret }),
    });
    journal.append('a', model(0, `the key is ${secret}`));
    journal.note({
      kind: 'chat.history',
      messages: [{ role: 'user', content: `remember ${secret}` }],
    });
    journal.close();
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain(secret);
    const contents = readJournal(path);
    expect(contents.droppedLines).toBe(0);
    const [entry] = contents.entries.get('a') ?? [];
    expect(entry?.kind === 'model' && entry.response.content).toBe('the key is [redacted]');
    expect(entry?.kind === 'model' && entry.response.thinkingParts).toEqual([
      { type: 'thinking', thinking: 'hmm', signature: 'sig' },
    ]);
    expect(contents.notes).toEqual([
      { kind: 'chat.history', messages: [{ role: 'user', content: 'remember [redacted]' }] },
    ]);
  });

  it('writes only on flush, and reads back every record by agent key, signatures included', () => {
    const path = journalPath();
    const journal = new FileJournal(path, RUN);
    journal.append('a', model(0, 'one'));
    journal.append('b', { kind: 'tool.started', step: 0, callId: 'c', name: 'charge' });
    journal.note({ kind: 'spawn', key: 'b', id: 'worker-1', role: 'worker', parentKey: 'a' });
    expect(readJournal(path).entries.size).toBe(0);
    journal.flush();
    journal.append('a', model(1, 'two'));
    journal.close();
    const contents = readJournal(path);
    expect(contents).toMatchObject({ runId: 'run-1', task: 'the task', droppedLines: 0 });
    expect(contents.entries.get('a')).toEqual([model(0, 'one'), model(1, 'two')]);
    expect(contents.entries.get('b')).toHaveLength(1);
    expect(contents.notes).toEqual([
      { kind: 'spawn', key: 'b', id: 'worker-1', role: 'worker', parentKey: 'a' },
    ]);
  });

  it('writes a line an actor thread encoded as it came, byte for byte what append writes', () => {
    const byAppend = journalPath();
    const byLine = journalPath();
    const tool: JournalEntry = {
      kind: 'tool',
      step: 0,
      callId: 'c1',
      name: 'charge',
      result: { ok: true, content: 'charged ✓' },
    };
    const appended = new FileJournal(byAppend, RUN);
    appended.append('a', model(0, 'one'));
    appended.append('a', tool);
    appended.close();
    const lines = new FileJournal(byLine, RUN);
    lines.appendLine('a', journalLine('a', model(0, 'one')));
    lines.appendLine('a', journalLine('a', tool));
    // Retries and resumes get entries, whichever way they came.
    expect(lines.entries('a')).toEqual([model(0, 'one'), tool]);
    lines.appendLine('a', journalLine('a', model(1, 'two')));
    expect(lines.entries('a')).toEqual([model(0, 'one'), tool, model(1, 'two')]);
    lines.close();
    expect(readFileSync(byLine, 'utf8').startsWith(readFileSync(byAppend, 'utf8'))).toBe(true);
    expect(readJournal(byLine).entries.get('a')).toEqual([model(0, 'one'), tool, model(1, 'two')]);
  });

  it('files a line under the agent it came for, and redacts a line with a secret in it', () => {
    const path = journalPath();
    const secret = 'sk-journal-secret-value-0123456789';
    const journal = new FileJournal(path, RUN, {
      redact: createRedactor({ OPENAI_API_KEY: secret }),
    });
    // Encoded under another key (a sender's mistake): written under the right one.
    journal.appendLine('b', journalLine('a', model(0, 'plain')));
    journal.appendLine('b', journalLine('b', model(1, `the key is ${secret}`)));
    // Read back from the file, as a resume reads them: redacted.
    expect(
      journal.entries('b').map((entry) => entry.kind === 'model' && entry.response.content),
    ).toEqual(['plain', 'the key is [redacted]']);
    journal.close();
    expect(readFileSync(path, 'utf8')).not.toContain(secret);
    const contents = readJournal(path);
    expect(contents.entries.get('a')).toBeUndefined();
    expect(
      contents.entries.get('b')?.map((entry) => entry.kind === 'model' && entry.response.content),
    ).toEqual(['plain', 'the key is [redacted]']);
  });

  it('drops a torn tail and a line that fails its checksum, and appends after the good part on reopen', () => {
    const path = journalPath();
    const journal = new FileJournal(path, RUN);
    journal.append('a', model(0, 'one'));
    journal.append('a', model(1, 'two'));
    journal.close();
    const text = readFileSync(path, 'utf8');
    // The second record is altered (one character) and a half-written line follows.
    writeFileSync(path, text.replace('"two"', '"twx"'));
    appendFileSync(path, '1234abcd {"a":"a","e":{"kind":');
    const read = readJournal(path);
    expect(read.entries.get('a')).toEqual([model(0, 'one')]);
    expect(read.droppedLines).toBe(2);

    const reopened = new FileJournal(path, RUN);
    expect(reopened.droppedLines).toBe(2);
    expect(reopened.entries('a')).toEqual([model(0, 'one')]);
    reopened.append('a', model(1, 'again'));
    reopened.close();
    expect(readJournal(path)).toMatchObject({ droppedLines: 0 });
    expect(readJournal(path).entries.get('a')).toEqual([model(0, 'one'), model(1, 'again')]);
  });

  it('refuses the journal of another task or run, and a file that is not a journal, saying what to do', () => {
    const path = journalPath();
    new FileJournal(path, RUN).close();
    expect(() => new FileJournal(path, { runId: 'run-1', task: 'another task' })).toThrow(
      /belongs to another task .*move it away/,
    );
    expect(() => new FileJournal(path, { runId: 'run-2', task: 'the task' })).toThrow(
      /belongs to run run-1/,
    );
    writeFileSync(path, 'hello\n');
    expect(() => readJournal(path)).toThrow(/no journal header|not a troupe journal/);
  });

  it('forgets the entries of a completed agent in memory, not on disk', () => {
    const path = journalPath();
    const journal = new FileJournal(path, RUN);
    journal.append('a', model(0, 'one'));
    journal.append('b', model(0, 'two'));
    // As the runtime ends an actor: noted, then released.
    journal.note({ kind: 'finish', key: 'a', id: 'worker-1', status: 'completed' });
    journal.note({ kind: 'finish', key: 'b', id: 'worker-2', status: 'failed' });
    journal.release('a');
    expect(journal.entries('a')).toEqual([]);
    // A failed one is retried from what it recorded.
    expect(journal.entries('b')).toEqual([model(0, 'two')]);
    journal.close();
    expect(readJournal(path).entries.get('a')).toHaveLength(1);
    const reopened = new FileJournal(path, RUN);
    reopened.release('a');
    expect(reopened.entries('a')).toEqual([]);
    reopened.close();
  });

  it('writes the lines of several agents sent as one text as they came, and reads each agent back', () => {
    const path = journalPath();
    const secret = 'sk-journal-secret-value-0123456789';
    const journal = new FileJournal(path, RUN, {
      redact: createRedactor({ OPENAI_API_KEY: secret }),
    });
    const started: JournalEntry = { kind: 'tool.started', step: 0, callId: 'c', name: 'charge' };
    const text = journalLine('a', model(0, 'one')) + journalLine('b', started);
    journal.appendLines(text);
    journal.appendLines(
      journalLine('a', model(1, `the key is ${secret}`)) + journalLine('b', started),
    );
    // A text cut short is not taken.
    journal.appendLines(journalLine('a', model(2, 'three')).slice(0, -1));
    journal.flush();
    const written = readFileSync(path, 'utf8');
    expect(written).toContain(text);
    expect(written).not.toContain(secret);
    expect(
      journal.entries('a').map((entry) => entry.kind === 'model' && entry.response.content),
    ).toEqual(['one', 'the key is [redacted]']);
    expect(journal.entries('b')).toEqual([started, started]);
    // Appended after a read: read on the next ask.
    journal.appendLines(journalLine('b', model(1, 'four')));
    expect(journal.entries('b')).toHaveLength(3);
    journal.close();
    expect(readJournal(path).entries.get('b')).toHaveLength(3);
  });
});

describe('noteJson', () => {
  // Built from the fields, not by JSON.stringify: a reader must find the very text it wrote.
  it('is JSON.stringify of the note for every kind, with strings that need escaping', () => {
    const notes: JournalNote[] = [
      { kind: 'spawn', key: 'k"1', id: 'clerk-1', role: 'cl\\erk\u2028', parentKey: '' },
      { kind: 'finish', key: 'k1', id: 'clerk-1', status: 'completed' },
      { kind: 'chat.turn', input: 'héllo\n', step: 3 },
      { kind: 'chat.history', messages: [{ role: 'user', content: 'hi' }] },
    ];
    for (const note of notes) expect(noteJson(note)).toBe(JSON.stringify({ n: note }));
  });

  it('writes notes a reader reads back as they were, and redacts a secret in one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-journal-notes-'));
    try {
      const path = join(dir, 'journal.jsonl');
      const redact = createRedactor({ TROUPE_TEST_KEY: 'sk-notes-secret-123456' });
      const journal = new FileJournal(path, { runId: 'r', task: 't' }, { redact });
      const spawn: JournalNote = {
        kind: 'spawn',
        key: 'k1',
        id: 'a-1',
        role: 'clerk',
        parentKey: '',
      };
      journal.note(spawn);
      journal.note({
        kind: 'finish',
        key: 'k1',
        id: 'a-1',
        status: 'failed sk-notes-secret-123456',
      });
      journal.close();
      const { notes } = readJournal(path);
      expect(notes[0]).toEqual(spawn);
      expect(JSON.stringify(notes[1])).not.toContain('sk-notes-secret-123456');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
