import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileJournal, readJournal } from '../../../../src/runtime/resume/journal.js';
import {
  JournalMirror,
  openJournalMirror,
} from '../../../../src/runtime/wire/nats/journal-mirror.js';
import {
  connectNats,
  ensureStreams,
  type NatsLink,
  STREAMS,
  subjects,
} from '../../../../src/runtime/wire/nats/nats-link.js';
import { NatsServer, natsServerBinary } from '../../../helpers/nats-server.js';

// A run's journal file mirrored in JetStream: what a coordinator resumed on
// another machine rebuilds its journal from (see JournalMirror).

let server: NatsServer;
const links: NatsLink[] = [];
const dirs: string[] = [];
const hasServer = natsServerBinary() !== undefined;
const RUN = { runId: 'run-m', task: 'Mirror the ledger.' };

beforeEach(async () => {
  if (hasServer) server = await NatsServer.start();
});

afterEach(async () => {
  await Promise.all(links.splice(0).map((link) => link.nc.close()));
  if (hasServer) await server.dispose();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function link(): Promise<NatsLink> {
  const opened = await connectNats({ url: server.url, name: 'journal-mirror test' });
  links.push(opened);
  await ensureStreams(opened, 5000);
  return opened;
}

function journalPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-mirror-'));
  dirs.push(dir);
  return join(dir, 'run', 'journal.jsonl');
}

// A journal written through its mirror: a model record, an intent, a note, flushed in turns.
async function writeJournal(path: string, nats: NatsLink): Promise<void> {
  const { mirror } = await openJournalMirror(nats, RUN.runId, path);
  const journal = new FileJournal(path, RUN, { mirror });
  journal.note({ kind: 'spawn', key: 'clerk#1', id: 'clerk-1', role: 'clerk', parentKey: '' });
  journal.append('clerk#1', {
    kind: 'model',
    step: 0,
    hash: 'h0',
    response: {
      content: 'é ✓',
      toolCalls: [],
      usage: { inputTokens: 3, outputTokens: 2 },
      stopReason: 'end',
    },
  });
  journal.flush();
  journal.append('clerk#1', { kind: 'tool.started', step: 0, callId: 'c1', name: 'append_ledger' });
  journal.flush();
  await journal.durable?.();
  journal.close();
}

// A machine without the file rebuilds it from the mirror: the same text as `path`, with these records.
async function expectRebuiltAs(nats: NatsLink, path: string, kinds: string[]): Promise<void> {
  const rebuilt = journalPath();
  await openJournalMirror(nats, RUN.runId, rebuilt);
  expect(readFileSync(rebuilt).toString()).toBe(readFileSync(path).toString());
  expect(
    readJournal(rebuilt)
      .entries.get('clerk#1')
      ?.map((entry) => entry.kind),
  ).toEqual(kinds);
}

async function mirrorMessages(nats: NatsLink): Promise<number> {
  const info = await nats.jsm.streams.info(STREAMS.runJournal, {
    subjects_filter: subjects.runJournal(RUN.runId),
  });
  return info.state.messages;
}

describe.skipIf(!hasServer)('JournalMirror', () => {
  it('rebuilds a journal file on a machine without it, byte for byte, and mirrors what is written after', async () => {
    const nats = await link();
    const first = journalPath();
    await writeJournal(first, nats);
    expect(await mirrorMessages(nats)).toBeGreaterThanOrEqual(3);

    // Another machine: no file; opening the mirror writes it, and the journal replays from it.
    const elsewhere = journalPath();
    const { mirror, restored } = await openJournalMirror(nats, RUN.runId, elsewhere);
    expect(restored).toBe(true);
    expect(readFileSync(elsewhere)).toEqual(readFileSync(first));
    const journal = new FileJournal(elsewhere, RUN, { mirror });
    expect(journal.entries('clerk#1').map((entry) => entry.kind)).toEqual([
      'model',
      'tool.started',
    ]);
    journal.append('clerk#1', {
      kind: 'tool',
      step: 0,
      callId: 'c1',
      name: 'append_ledger',
      result: { ok: true, content: 'recorded' },
    });
    journal.flush();
    await journal.durable?.();
    journal.close();

    // A third machine gets both sessions' records.
    await expectRebuiltAs(nats, elsewhere, ['model', 'tool.started', 'tool']);
  });

  it('sends a write larger than a NATS message in several ranges, and rebuilds it whole', async () => {
    const nats = await link();
    const path = journalPath();
    const { mirror } = await openJournalMirror(nats, RUN.runId, path);
    const journal = new FileJournal(path, RUN, { mirror });
    const content = 'ledger line ✓ '.repeat(80_000);
    journal.append('clerk#1', {
      kind: 'model',
      step: 0,
      hash: 'h0',
      response: {
        content,
        toolCalls: [],
        usage: { inputTokens: 1, outputTokens: 1 },
        stopReason: 'end',
      },
    });
    journal.flush();
    await journal.durable?.();
    journal.close();
    expect(readFileSync(path).length).toBeGreaterThan(1024 * 1024);
    expect(await mirrorMessages(nats)).toBeGreaterThan(4);
    const elsewhere = journalPath();
    await openJournalMirror(nats, RUN.runId, elsewhere);
    // Compared as bytes (a deep equality of a megabyte is slow).
    expect(readFileSync(elsewhere).equals(readFileSync(path))).toBe(true);
  });

  it('mirrors first what the file holds beyond the mirror (chunks its last coordinator lost), and keeps a torn tail out', async () => {
    const nats = await link();
    const path = journalPath();
    // Written without a mirror (a run started before, or whose last chunks never reached NATS).
    const journal = new FileJournal(path, RUN);
    journal.note({ kind: 'spawn', key: 'clerk#1', id: 'clerk-1', role: 'clerk', parentKey: '' });
    journal.close();
    const whole = readFileSync(path);
    writeFileSync(path, Buffer.concat([whole, Buffer.from('deadbeef {"a":"clerk#1","e"')]));

    const { mirror, restored } = await openJournalMirror(nats, RUN.runId, path);
    expect(restored).toBe(false);
    await mirror.settled();
    const elsewhere = journalPath();
    await openJournalMirror(nats, RUN.runId, elsewhere);
    expect(readFileSync(elsewhere)).toEqual(whole);
  });

  it("cuts an earlier session's last range that ended inside a line, so a resume elsewhere writes on from the last whole line", async () => {
    const nats = await link();
    const first = journalPath();
    await writeJournal(first, nats);
    // The first coordinator died after sending the first range of a large write, inside a line.
    const dying = new JournalMirror(nats, RUN.runId, readFileSync(first).length);
    dying.write(Buffer.from('0badc0de {"a":"clerk#1","e":{"kind":"tool","step":0,"callId":"c1"'));
    await dying.settled();

    const elsewhere = journalPath();
    const { mirror } = await openJournalMirror(nats, RUN.runId, elsewhere);
    expect(readFileSync(elsewhere)).toEqual(readFileSync(first));
    const journal = new FileJournal(elsewhere, RUN, { mirror });
    journal.append('clerk#1', {
      kind: 'tool',
      step: 0,
      callId: 'c1',
      name: 'append_ledger',
      result: { ok: false, content: 'interrupted', error: { code: 'tool.failed', message: 'x' } },
    });
    journal.flush();
    await journal.durable?.();
    journal.close();

    await expectRebuiltAs(nats, elsewhere, ['model', 'tool.started', 'tool']);
  });

  it('sends a range JetStream did not store again, refusing intents until it is stored, and the mirror stays whole', async () => {
    const nats = await link();
    let failures = 1;
    // The header's range is refused once (a timeout, say); the next ones go through.
    const flaky: NatsLink = {
      ...nats,
      writer: {
        publish: (subject: string, data: Uint8Array) =>
          failures-- > 0
            ? Promise.reject(new Error('no answer within 10 s'))
            : nats.writer.publish(subject, data),
      } as NatsLink['writer'],
    };
    const path = journalPath();
    const mirror = new JournalMirror(flaky, RUN.runId, 0);
    const journal = new FileJournal(path, RUN, { mirror });
    // Sent before the header's refusal is known: stored first, it waits in the mirror for the header.
    journal.note({ kind: 'spawn', key: 'clerk#1', id: 'clerk-1', role: 'clerk', parentKey: '' });
    journal.flush();
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(journal.failure?.message).toMatch(/cannot mirror the run journal to NATS/);
    await journal.durable?.();
    expect(journal.failure).toBeUndefined();
    journal.close();
    const elsewhere = journalPath();
    await openJournalMirror(nats, RUN.runId, elsewhere);
    expect(readFileSync(elsewhere).toString()).toBe(readFileSync(path).toString());
  });

  it('refuses a longer journal file whose beginning is not the mirrored run', async () => {
    const nats = await link();
    await writeJournal(journalPath(), nats);
    const other = journalPath();
    const journal = new FileJournal(other, { runId: RUN.runId, task: 'Another, longer task.' });
    for (let step = 0; step < 20; step += 1)
      journal.note({
        kind: 'spawn',
        key: `k${step}`,
        id: `a${step}`,
        role: 'clerk',
        parentKey: '',
      });
    journal.close();
    await expect(openJournalMirror(nats, RUN.runId, other)).rejects.toThrow(
      /differ: they are not the same run's/,
    );
  });

  it('refuses a journal file that is not the mirrored run, saying what to do', async () => {
    const nats = await link();
    await writeJournal(journalPath(), nats);
    const other = journalPath();
    const journal = new FileJournal(other, { runId: RUN.runId, task: 'Another task.' });
    journal.close();
    await expect(openJournalMirror(nats, RUN.runId, other)).rejects.toThrow(
      /differ: they are not the same run's\. Move the file away/,
    );
    expect(existsSync(other)).toBe(true);
  });
});
