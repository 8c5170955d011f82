import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { JournalEntry } from '../../../src/agent/journal.js';
import type { TroupeError } from '../../../src/errors.js';
import { agentJournal, FileJournal, readJournal } from '../../../src/runtime/resume/journal.js';
import { CAN_MOUNT, mountTmpfs, type Tmpfs } from '../../helpers/tmpfs.js';

const mounts: Tmpfs[] = [];
afterEach(() => {
  for (const mount of mounts.splice(0)) mount.unmount();
});

const RUN = { runId: 'run-1', task: 'the task' };
const model = (step: number): JournalEntry => ({
  kind: 'model',
  step,
  hash: `h${step}`,
  response: {
    content: `answer ${step} ${'y'.repeat(2000)}`,
    toolCalls: [],
    usage: { inputTokens: 3, outputTokens: 4 },
    stopReason: 'end',
  },
});

describe.skipIf(!CAN_MOUNT)('FileJournal on a full disk (a real tmpfs)', () => {
  it('keeps its records, refuses intents while it cannot write, and loses nothing once there is room', async () => {
    const disk = mountTmpfs(32) as Tmpfs;
    mounts.push(disk);
    const path = join(disk.path, 'journal.jsonl');
    const errors: TroupeError[] = [];
    const journal = new FileJournal(path, RUN, { onError: (error) => errors.push(error) });
    for (let step = 0; step < 40; step += 1) {
      journal.append('agent-a', model(step));
      expect(() => journal.flush()).not.toThrow();
    }
    expect(errors.map((error) => error.message)).toEqual([
      `cannot write the journal to ${path}: disk full`,
    ]);
    // A tool that is not idempotent must not run without its durable intent.
    const intent = agentJournal(journal, 'agent-a').intend({
      kind: 'tool.started',
      step: 40,
      callId: 'c1',
      name: 'write_file',
    });
    await expect(intent).rejects.toMatchObject({ code: 'io.write_failed' });
    // What reached the disk so far reads as a journal whose torn tail is dropped.
    expect(readJournal(path).entries.get('agent-a')?.length ?? 0).toBeLessThan(40);

    disk.resize(1024);
    journal.close();
    const contents = readJournal(path);
    expect(contents.droppedLines).toBe(0);
    expect(contents.entries.get('agent-a')?.map((entry) => entry.step)).toEqual([
      ...Array.from({ length: 40 }, (_, step) => step),
      40,
    ]);
  });
});
