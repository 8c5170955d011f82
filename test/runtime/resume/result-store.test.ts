import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActorResult } from '../../../src/runtime/actors/actor.js';
import { ResultStore } from '../../../src/runtime/resume/result-store.js';
import { createRedactor } from '../../../src/util/redact.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-results-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const result: ActorResult = {
  agentId: 'researcher-1',
  role: 'researcher',
  status: 'completed',
  final: 'found it',
  usage: { inputTokens: 1, outputTokens: 2 },
  steps: 3,
};

describe('ResultStore', () => {
  it('gives the same keys to the same spawns in the same order', () => {
    const a = new ResultStore({ dir: tempDir(), reuse: false });
    const b = new ResultStore({ dir: tempDir(), reuse: false });
    const keysA = [
      a.nextKey('researcher', 't', ''),
      a.nextKey('researcher', 't', ''),
      a.nextKey('analyst', 't', 'p'),
    ];
    const keysB = [
      b.nextKey('researcher', 't', ''),
      b.nextKey('researcher', 't', ''),
      b.nextKey('analyst', 't', 'p'),
    ];
    expect(keysA).toEqual(keysB);
    expect(new Set(keysA).size).toBe(3);
  });

  it('returns a stored completed result marked reused when reuse is on', () => {
    const dir = tempDir();
    const writer = new ResultStore({ dir, reuse: false });
    const key = writer.nextKey('researcher', 't', '');
    writer.put(key, { role: 'researcher', task: 't', parentKey: '' }, result);
    expect(writer.get(key)).toBeUndefined();
    expect(readdirSync(dir)).toEqual([`${key}.json`]);
    const reader = new ResultStore({ dir, reuse: true });
    expect(reader.get(reader.nextKey('researcher', 't', ''))).toEqual({
      result: { ...result, reused: true },
      published: [],
    });
  });

  it('keeps what an actor published, in order, beside its result', () => {
    const dir = tempDir();
    const writer = new ResultStore({ dir, reuse: false });
    const published = [
      { channel: 'findings', payload: { source: 'a.md' } },
      { channel: 'findings', payload: { source: 'b.md' } },
    ];
    writer.put(
      writer.nextKey('researcher', 't', ''),
      { role: 'researcher', task: 't', parentKey: '' },
      result,
      published,
    );
    const reader = new ResultStore({ dir, reuse: true });
    expect(reader.get(reader.nextKey('researcher', 't', ''))?.published).toEqual(published);
  });

  it('treats a torn file as no result', () => {
    const dir = tempDir();
    const store = new ResultStore({ dir, reuse: true });
    const key = store.nextKey('researcher', 't', '');
    writeFileSync(join(dir, `${key}.json`), '{"v":1,');
    expect(store.get(key)).toBeUndefined();
  });

  it('stores no secret in plain text: a key found in a workspace document and an environment secret are redacted', () => {
    const dir = tempDir();
    const envSecret = 'hunter2-database-password-0042';
    const store = new ResultStore({
      dir,
      reuse: true,
      redact: createRedactor({ DATABASE_PASSWORD: envSecret }),
    });
    const key = store.nextKey('researcher', 'read the .env', '');
    const leaked = 'sk-proj-abcdefghijklmnopqrstuvwxyz012345';
    store.put(
      key,
      { role: 'researcher', task: `read the .env (password ${envSecret})`, parentKey: '' },
      { ...result, final: `The key is ${leaked}; the password is ${envSecret}.` },
    );
    const text = readFileSync(join(dir, `${key}.json`), 'utf8');
    expect(text).not.toContain(leaked);
    expect(text).not.toContain(envSecret);
    expect(text).toContain('[redacted]');
    // The record stays usable for resume: its key is not mistaken for a secret.
    expect(store.get(key)?.result.final).toBe('The key is [redacted]; the password is [redacted].');
  });
});
