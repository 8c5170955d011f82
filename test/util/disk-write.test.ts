import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TroupeError } from '../../src/errors.js';
import { encodeLines, FileAppender } from '../../src/util/disk-write.js';

describe('FileAppender', () => {
  it('appends in order and closes twice without complaint', () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-appender-'));
    try {
      const path = join(dir, 'log.jsonl');
      const file = new FileAppender(openSync(path, 'a'), path, 'log');
      file.append(['one', 'twö']);
      file.append([]);
      file.append(['three\n', 'four\n'], true);
      file.close();
      file.close();
      // After close nothing is written and nothing throws.
      file.append(['five']);
      expect(readFileSync(path, 'utf8')).toBe('one\ntwö\nthree\nfour\n');
      expect(file.failure).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // /dev/full answers every write with ENOSPC: a full disk without mounting anything.
  it.skipIf(!existsSync('/dev/full'))(
    'never throws on a full disk, keeps what it could not write and says so once',
    () => {
      const errors: TroupeError[] = [];
      const file = new FileAppender(openSync('/dev/full', 'a'), '/dev/full', 'journal', (error) =>
        errors.push(error),
      );
      expect(() => file.append(['a line'])).not.toThrow();
      expect(() => file.append(['another'])).not.toThrow();
      // Told once, with the file and the cause in words; still failing, still kept.
      expect(errors).toHaveLength(1);
      expect(errors[0]?.code).toBe('io.write_failed');
      expect(errors[0]?.message).toBe('cannot write the journal to /dev/full: disk full');
      expect(file.failure).toBe(errors[0]);
      // Nothing to write besides what is kept: it tries the kept bytes again.
      file.append([]);
      expect(file.failure).toBe(errors[0]);
      expect(() => file.close()).not.toThrow();
    },
  );
});

describe('encodeLines', () => {
  it('is the UTF-8 of the lines joined, with or without their newlines', () => {
    const lines = ['plain', 'ünïcödé ✓ 𝄞', '', '{"a":"b"}'];
    expect(encodeLines(lines, false).toString('utf8')).toBe(`${lines.join('\n')}\n`);
    const terminated = lines.map((line) => `${line}\n`);
    expect(encodeLines(terminated, true).equals(Buffer.from(terminated.join('')))).toBe(true);
    expect(encodeLines([], false)).toHaveLength(0);
  });
});
