import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TroupeError } from '../../src/errors.js';
import { EventBus } from '../../src/events/bus.js';
import { readTrace, TraceWriter } from '../../src/events/trace.js';
import { CAN_MOUNT, mountTmpfs, type Tmpfs } from '../helpers/tmpfs.js';

const mounts: Tmpfs[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const mount of mounts.splice(0)) mount.unmount();
});

function progress(bus: EventBus, count: number, note = 'x'.repeat(400)): void {
  for (let index = 0; index < count; index += 1) {
    bus.publish({
      v: 1,
      ts: index,
      runId: 'r',
      agentId: 'a',
      type: 'agent.progress',
      note: `${index} ${note}`,
    });
  }
}

describe('TraceWriter on a failing disk', () => {
  // /dev/full answers every write with ENOSPC: a full disk without mounting anything.
  it.skipIf(!existsSync('/dev/full'))(
    'never throws from its timer or a flush, keeps the lines and says once why',
    () => {
      vi.useFakeTimers();
      const errors: TroupeError[] = [];
      const writer = new TraceWriter('/dev/full', {
        env: {},
        flushIntervalMs: 10,
        onError: (error) => errors.push(error),
      });
      const bus = new EventBus();
      writer.attach(bus);
      progress(bus, 3);
      // The timer's flush fails: no uncaught error, the failure is kept.
      expect(() => vi.advanceTimersByTime(50)).not.toThrow();
      expect(() => writer.flush()).not.toThrow();
      expect(errors).toHaveLength(1);
      expect(errors[0]?.code).toBe('io.write_failed');
      expect(errors[0]?.message).toBe('cannot write the trace to /dev/full: disk full');
      expect(writer.failure).toBe(errors[0]);
      expect(() => writer.close()).not.toThrow();
    },
  );

  it.skipIf(!CAN_MOUNT)(
    'writes every kept line once the disk has room again: nothing lost, nothing torn',
    () => {
      const disk = mountTmpfs(64) as Tmpfs;
      mounts.push(disk);
      const path = join(disk.path, 'trace.jsonl');
      const errors: TroupeError[] = [];
      const writer = new TraceWriter(path, { env: {}, onError: (error) => errors.push(error) });
      const bus = new EventBus();
      writer.attach(bus);
      progress(bus, 300);
      writer.flush();
      expect(errors.map((error) => error.message)).toEqual([
        `cannot write the trace to ${path}: disk full`,
      ]);
      // Some lines reached the disk, the last one torn; the rest wait in memory.
      const partial = readFileSync(path, 'utf8');
      expect(partial.length).toBeGreaterThan(0);
      expect(partial.length).toBeLessThan(300 * 400);

      disk.resize(1024);
      progress(bus, 10, 'after');
      writer.flush();
      expect(writer.failure).toBeUndefined();
      writer.close();
      const { events, invalidLines } = readTrace(path);
      expect(invalidLines).toEqual([]);
      expect(events.map((event) => event.seq)).toEqual(
        Array.from({ length: 310 }, (_, index) => index),
      );
      expect(errors).toHaveLength(1);
    },
  );

  it.skipIf(!CAN_MOUNT)(
    'keeps its lines when the disk fills while a file already holds them',
    () => {
      const disk = mountTmpfs(64) as Tmpfs;
      mounts.push(disk);
      const path = join(disk.path, 'trace.jsonl');
      const writer = new TraceWriter(path, { env: {} });
      const bus = new EventBus();
      writer.attach(bus);
      progress(bus, 10);
      writer.flush();
      // Something else takes the rest of the disk.
      const filler = join(disk.path, 'filler');
      try {
        writeFileSync(filler, Buffer.alloc(64 * 1024));
      } catch {
        // Full: what fitted stays.
      }
      progress(bus, 20);
      writer.flush();
      expect(writer.failure?.message).toContain('disk full');
      rmSync(filler);
      writer.close();
      const { events, invalidLines } = readTrace(path);
      expect(invalidLines).toEqual([]);
      expect(events).toHaveLength(30);
    },
  );
});
