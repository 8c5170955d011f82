import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  compactIds,
  evenShare,
  formatDelegationResults,
  saveDelegationResults,
} from '../../src/roles/delegation-digest.js';
import { formatWaitResults } from '../../src/roles/delegation-tools.js';
import type { ActorResult } from '../../src/roles/result.js';

const usage = { inputTokens: 1, outputTokens: 1 };

function completed(id: string, final: string): ActorResult {
  return {
    agentId: id,
    role: id.replace(/-\d+$/, ''),
    status: 'completed',
    final,
    usage,
    steps: 1,
  };
}

function failed(
  id: string,
  message: string,
  status: ActorResult['status'] = 'failed',
): ActorResult {
  return {
    agentId: id,
    role: id.replace(/-\d+$/, ''),
    status,
    final: '',
    error: { name: 'TroupeError', code: 'model.bad_request', message },
    usage,
    steps: 1,
  };
}

// A seeded fan-out: n workers, failures at the given positions with distinct reasons.
function fanOut(
  n: number,
  failing: ReadonlySet<number>,
  answer = (i: number) => `answer ${i} `.repeat(20),
) {
  return Array.from({ length: n }, (_, index) => {
    const i = index + 1;
    return failing.has(i)
      ? failed(
          `worker-${i}`,
          `worker-${i} was refused: the request named a file that is not there (missing-${i}.txt); check the path and delegate again.`,
        )
      : completed(`worker-${i}`, answer(i));
  });
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('formatDelegationResults', () => {
  it('gives small fan-outs whole, answers verbatim, failures first with their reasons', () => {
    const text = formatDelegationResults([
      completed('researcher-1', 'Line one.\nLine two.'),
      failed('researcher-2', 'model.http: 500 from the provider'),
      completed('analyst-1', 'Themes: a, b.'),
    ]);
    expect(text).toBe(
      [
        '3 sub-agents: 2 completed, 1 failed.',
        '',
        'Not completed (1):',
        '- researcher-2 failed: model.http: 500 from the provider',
        '',
        'Answers (2):',
        '[researcher-1] Line one.\nLine two.',
        '',
        '[analyst-1] Themes: a, b.',
      ].join('\n'),
    );
  });

  it('accounts for 1,000 results within the budget, every failure listed with its whole reason', () => {
    const failing = new Set([137, 138, 139, 400, 512, 777, 901, 999]);
    const results = fanOut(1000, failing);
    // A stretch of time-outs alike: one line for all of them.
    for (let i = 600; i <= 640; i += 1) {
      results[i - 1] = failed(`worker-${i}`, 'timed out after 3000 ms', 'timed_out');
    }
    const text = formatDelegationResults(results, { maxChars: 12_000 });
    expect(text.length).toBeLessThanOrEqual(12_000);
    const counts = /^1000 sub-agents: (\d+) completed, (\d+) failed, (\d+) timed out\.$/m.exec(
      text,
    );
    expect(counts?.slice(1).map(Number)).toEqual([951, 8, 41]);
    for (const i of failing) {
      expect(text).toContain(
        `- worker-${i} failed: worker-${i} was refused: the request named a file that is not there (missing-${i}.txt); check the path and delegate again.`,
      );
    }
    expect(text).toContain('- worker-600 … worker-640 timed out (41): timed out after 3000 ms');
    // Failures come before any answer.
    expect(text.indexOf('worker-999 failed')).toBeLessThan(text.indexOf('[worker-1]'));
    // Answers that do not fit are named, never dropped silently.
    const shown = text.match(/^\[worker-\d+\] /gm) ?? [];
    const more = /^- (\d+) more completed, read them with wait_agents/m.exec(text);
    expect(shown.length + Number(more?.[1] ?? 0)).toBe(951);
  });

  it('cuts answers to one even share, short ones whole', () => {
    const results = [
      completed('w-1', 'short'),
      completed('w-2', 'x'.repeat(5000)),
      completed('w-3', 'y'.repeat(5000)),
    ];
    const text = formatDelegationResults(results, { maxChars: 2000 });
    expect(text.length).toBeLessThanOrEqual(2000);
    expect(text).toContain('[w-1] short\n');
    const long = [...text.matchAll(/^\[w-[23]\] ([xy]+…)$/gm)].map((match) => match[1]?.length);
    expect(long).toHaveLength(2);
    expect(long[0]).toBe(long[1]);
    expect(text).toContain('cut evenly to fit; wait_agents {"ids": [...]} gives any whole');
  });

  it('says where every result is kept whole, or why it could not be', () => {
    const results = [completed('w-1', 'a')];
    expect(formatDelegationResults(results, { saved: { path: '/runs/r/d/c-1.jsonl' } })).toContain(
      'Every result in full: /runs/r/d/c-1.jsonl (one JSON line per sub-agent).',
    );
    expect(formatDelegationResults(results, { saved: { error: 'disk full' } })).toContain(
      'Note: disk full; wait_agents still returns them.',
    );
  });
});

describe('saveDelegationResults', () => {
  it('writes one JSON line per result, secrets redacted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-digest-'));
    dirs.push(dir);
    const results = [completed('w-1', 'the key is sk-test-123456789abcdef'), failed('w-2', 'no')];
    const saved = await saveDelegationResults(join(dir, 'delegations'), 'c-1.jsonl', results, {
      OPENAI_API_KEY: 'sk-test-123456789abcdef',
    });
    expect(saved).toEqual({ path: join(dir, 'delegations', 'c-1.jsonl') });
    const lines = readFileSync(join(dir, 'delegations', 'c-1.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((line) => JSON.parse(line).agentId)).toEqual(['w-1', 'w-2']);
    expect(lines[0]).not.toContain('sk-test-123456789abcdef');
    expect(JSON.parse(lines[1] as string).error).toEqual({
      code: 'model.bad_request',
      message: 'no',
    });
  });

  it('says why when the folder cannot be written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-digest-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'blocker'), 'a file where the folder should be');
    const saved = await saveDelegationResults(join(dir, 'blocker'), 'c-1.jsonl', []);
    expect(saved).toMatchObject({ error: expect.stringContaining('could not be saved') });
  });
});

describe('formatWaitResults', () => {
  const results = fanOut(250, new Set([10, 20, 30]), (i) => `answer ${i}`);

  it('pages through every result without ids, saying how to get the next page', () => {
    const first = formatWaitResults(results, {});
    expect(first).toMatch(
      /^Results 1–100 of 250 \(of 250 waited for\)\. Next page: wait_agents \{"offset":100\}\./,
    );
    const last = formatWaitResults(results, { offset: 200 });
    expect(last).toMatch(/^Results 201–250 of 250/);
    expect(last).toContain('[worker-250] answer 250');
    expect(formatWaitResults(results, { offset: 300 })).toContain('offset 300 is past them');
  });

  it('filters by status', () => {
    const text = formatWaitResults(results, { status: 'not_completed' });
    expect(text.split('\n')[0]).toBe('3 sub-agents: 3 failed.');
    expect(text).toContain('- worker-20 failed: worker-20 was refused');
  });

  it('gives results asked for by id whole', () => {
    const long = [completed('w-1', 'z'.repeat(9000))];
    expect(formatWaitResults(long, { ids: ['w-1'] })).toContain(`[w-1] ${'z'.repeat(9000)}`);
  });
});

describe('compactIds and evenShare', () => {
  it('joins runs of consecutive ids', () => {
    expect(compactIds(['w-1', 'w-2', 'w-3', 'w-5', 'w-6', 'a-9', 'odd'])).toBe(
      'w-1 … w-3, w-5, w-6, a-9, odd',
    );
  });

  it('finds the largest share that fits, short texts whole', () => {
    expect(evenShare([10, 100, 100], 1000)).toBe(Number.POSITIVE_INFINITY);
    expect(evenShare([10, 100, 100], 110)).toBe(50);
    expect(evenShare([10, 100, 100], 5)).toBe(1);
  });
});
