import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import type { AgentStatus } from '../events/schema.js';
import { createRedactor, redactStrings } from '../util/redact.js';
import { truncateEnd } from '../util/truncate.js';
import type { ActorResult } from './result.js';

/**
 * What a delegating model reads about many sub-agents at once: a digest that
 * fits a budget of characters whatever the number of results. Every result
 * is accounted for (counts by status that sum to the whole); results that
 * did not complete come first, grouped by reason, with their reasons whole
 * when they fit; answers share what is left evenly. The whole results are
 * kept elsewhere (a JSONL file in the run folder, and `wait_agents`).
 */

/** The digest's default size, in characters: under the tool registry's 16,000 cut, so nothing is cut blindly. */
export const DEFAULT_DIGEST_CHARS = 12_000;

// Below these an answer or a reason says too little to be worth its line.
const MIN_ANSWER_CHARS = 40;
const MIN_REASON_CHARS = 80;
// Failures may take this share of the room when the answers need the rest.
const FAILURE_SHARE = 2 / 3;

const STATUS_ORDER: readonly AgentStatus[] = ['failed', 'timed_out', 'cancelled', 'completed'];
const STATUS_WORDS: Record<AgentStatus, string> = {
  completed: 'completed',
  failed: 'failed',
  timed_out: 'timed out',
  cancelled: 'cancelled',
};

/** How a digest is written. */
export interface DigestOptions {
  /** At most this many characters (default DEFAULT_DIGEST_CHARS). */
  maxChars?: number | undefined;
  /** A line put first (a page of wait_agents says which page it is). */
  heading?: string | undefined;
  /** Where every result is kept whole, or why it could not be kept. */
  saved?: { path: string } | { error: string } | undefined;
}

/**
 * The results of a fan-out as the delegating model reads them, at most
 * `maxChars` long: counts by status, then everything not completed (failures
 * first, grouped by reason, ids compacted), then each answer, cut evenly
 * when they do not all fit. Whatever cannot be shown is named with a way to
 * read it (`wait_agents`).
 *
 * @example
 * formatDelegationResults(results, { saved: { path: '/runs/r1/delegations/coordinator-1.jsonl' } });
 */
export function formatDelegationResults(
  results: readonly ActorResult[],
  options: DigestOptions = {},
): string {
  const maxChars = options.maxChars ?? DEFAULT_DIGEST_CHARS;
  const top = [
    ...(options.heading === undefined ? [] : [options.heading]),
    countsLine(results),
    ...(options.saved === undefined ? [] : [savedLine(options.saved)]),
  ].join('\n');
  const groups = failureGroups(results);
  const answers = results
    .filter((result) => result.status === 'completed')
    .map((result) => ({ prefix: `[${result.agentId}] `, text: answerOf(result) }));
  const failuresTitle = groups.length === 0 ? '' : `Not completed (${notCompleted(results)}):`;
  const answersTitle = (cut: boolean): string =>
    answers.length === 0
      ? ''
      : `Answers (${answers.length})${cut ? ', cut evenly to fit; wait_agents {"ids": [...]} gives any whole' : ''}:`;
  // Titles, blank lines and the hint of a cut are paid for before the entries.
  let room = maxChars - top.length - failuresTitle.length - answersTitle(true).length - 8;
  const failureEntries = groups.map((group) => ({ prefix: group.prefix, text: group.reason }));
  const wholeFailures = entriesLength(failureEntries);
  const wholeAnswers = entriesLength(answers);
  let failureText: string;
  let answerText: string;
  let answersCut = false;
  if (wholeFailures + wholeAnswers <= room) {
    failureText = joinEntries(failureEntries);
    answerText = joinEntries(answers);
  } else {
    const failureRoom = Math.max(
      room - wholeAnswers,
      Math.min(wholeFailures, Math.floor(room * FAILURE_SHARE)),
    );
    failureText = fitEntries(failureEntries, failureRoom, MIN_REASON_CHARS, (shown) =>
      moreLine(
        groups.slice(shown).flatMap((group) => group.ids),
        'not completed',
        '{"status": "not_completed"}',
      ),
    );
    room -= failureText.length;
    answersCut = answers.length > 0;
    answerText = fitEntries(answers, room, MIN_ANSWER_CHARS, (shown) =>
      moreLine(
        results
          .filter((result) => result.status === 'completed')
          .slice(shown)
          .map((result) => result.agentId),
        'completed',
        '{"status": "completed"}',
      ),
    );
  }
  return [
    top,
    ...(groups.length === 0 ? [] : [`${failuresTitle}\n${failureText}`]),
    ...(answers.length === 0 ? [] : [`${answersTitle(answersCut)}\n${answerText}`]),
  ].join('\n\n');
}

/**
 * Writes every result whole to `<dir>/<agentId>-<n>.jsonl` (one JSON line
 * per sub-agent, secrets redacted) and returns what the digest says about
 * it: the path, or why it could not be written. Never rejects.
 */
export async function saveDelegationResults(
  dir: string,
  fileName: string,
  results: readonly ActorResult[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ path: string } | { error: string }> {
  const path = join(dir, fileName);
  const redact = createRedactor(env);
  const lines = results.map((result) =>
    JSON.stringify(
      redactStrings(
        {
          agentId: result.agentId,
          role: result.role,
          status: result.status,
          final: result.final,
          ...(result.output === undefined ? {} : { output: result.output }),
          ...(result.error === undefined
            ? {}
            : { error: { code: result.error.code, message: result.error.message } }),
          usage: result.usage,
          steps: result.steps,
          ...(result.reused === true ? { reused: true } : {}),
        },
        redact,
      ),
    ),
  );
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(path, `${lines.join('\n')}\n`);
    return { path };
  } catch (error) {
    return { error: `the full results could not be saved to ${path} (${errorMessage(error)})` };
  }
}

/**
 * Agent ids with consecutive numbers of one prefix joined:
 * `worker-1 … worker-40, worker-42`.
 */
export function compactIds(ids: readonly string[]): string {
  const parts: string[] = [];
  let index = 0;
  while (index < ids.length) {
    const first = ids[index] as string;
    const match = /^(.*?)(\d+)$/.exec(first);
    let end = index;
    if (match !== null) {
      const prefix = match[1] as string;
      let number = Number(match[2]);
      while (end + 1 < ids.length && ids[end + 1] === `${prefix}${number + 1}`) {
        end += 1;
        number += 1;
      }
    }
    if (end - index >= 2) parts.push(`${first} … ${ids[end]}`);
    else parts.push(...ids.slice(index, end + 1));
    index = end + 1;
  }
  return parts.join(', ');
}

function countsLine(results: readonly ActorResult[]): string {
  const counts = STATUS_ORDER.map(
    (status) => [status, results.filter((result) => result.status === status).length] as const,
  ).filter(([, count]) => count > 0);
  const ordered = [
    ...counts.filter(([status]) => status === 'completed'),
    ...counts.filter(([status]) => status !== 'completed'),
  ];
  const total = results.length;
  return `${total} sub-agent${total === 1 ? '' : 's'}: ${ordered.map(([status, count]) => `${count} ${STATUS_WORDS[status]}`).join(', ') || 'none'}.`;
}

function savedLine(saved: { path: string } | { error: string }): string {
  return 'path' in saved
    ? `Every result in full: ${saved.path} (one JSON line per sub-agent).`
    : `Note: ${saved.error}; wait_agents still returns them.`;
}

function notCompleted(results: readonly ActorResult[]): number {
  return results.filter((result) => result.status !== 'completed').length;
}

interface FailureGroup {
  status: AgentStatus;
  reason: string;
  ids: string[];
  prefix: string;
}

// Results that did not complete, grouped by status and reason (one line for
// a hundred agents that failed alike), failures before time-outs before
// cancellations, each group where its first member stands.
function failureGroups(results: readonly ActorResult[]): FailureGroup[] {
  const groups = new Map<string, FailureGroup>();
  for (const result of results) {
    if (result.status === 'completed') continue;
    const reason = result.error?.message ?? (result.final.trim() || 'no reason was given');
    const key = `${result.status}\u0000${reason}`;
    const group = groups.get(key);
    if (group === undefined)
      groups.set(key, { status: result.status, reason, ids: [result.agentId], prefix: '' });
    else group.ids.push(result.agentId);
  }
  const ordered = [...groups.values()].sort(
    (a, b) => STATUS_ORDER.indexOf(a.status) - STATUS_ORDER.indexOf(b.status),
  );
  for (const group of ordered) {
    const count = group.ids.length > 1 ? ` (${group.ids.length})` : '';
    group.prefix = `- ${compactIds(group.ids)} ${STATUS_WORDS[group.status]}${count}: `;
  }
  return ordered;
}

function answerOf(result: ActorResult): string {
  if (result.final.trim() !== '') return result.final;
  return result.output === undefined ? '(no answer)' : JSON.stringify(result.output);
}

interface Entry {
  prefix: string;
  text: string;
}

// Each entry costs its line and a blank line between entries.
function entriesLength(entries: readonly Entry[]): number {
  return entries.reduce((sum, entry) => sum + entry.prefix.length + entry.text.length + 2, 0);
}

// Entries on one line each, or with a blank line between them when one
// spans lines (a whole answer in several paragraphs).
function joinEntries(entries: readonly Entry[]): string {
  const separator = entries.some((entry) => entry.text.includes('\n')) ? '\n\n' : '\n';
  return entries.map((entry) => `${entry.prefix}${entry.text}`).join(separator);
}

/**
 * Entries within `room` characters: texts cut to one even share (the longest
 * first, short ones stay whole); when the share would fall under `floor`,
 * the first entries at `floor` and a line naming the rest (`more(shown)`).
 */
function fitEntries(
  entries: readonly Entry[],
  room: number,
  floor: number,
  more: (shown: number) => string,
): string {
  const fixed = entries.reduce((sum, entry) => sum + entry.prefix.length + 2, 0);
  const share = evenShare(
    entries.map((entry) => entry.text.length),
    room - fixed,
  );
  if (share >= floor) return joinEntries(entries.map((entry) => cut(entry, share)));
  const shown: Entry[] = [];
  let used = 0;
  for (const entry of entries) {
    const fitted = cut(entry, floor);
    const length = fitted.prefix.length + fitted.text.length + 1;
    // Room is kept for the line that names the rest.
    if (used + length > room - 400) break;
    shown.push(fitted);
    used += length;
  }
  const rest = more(shown.length);
  return [joinEntries(shown), truncateEnd(rest, Math.max(0, room - used - 1))]
    .filter((part) => part !== '')
    .join('\n');
}

function cut(entry: Entry, share: number): Entry {
  if (entry.text.length <= share) return entry;
  return { prefix: entry.prefix, text: truncateEnd(entry.text.replace(/\s+/g, ' ').trim(), share) };
}

/**
 * The largest share `c` such that texts of these lengths, each cut to `c`,
 * fit in `room`: short texts stay whole and the long ones share the rest.
 * Infinity when all fit whole.
 */
export function evenShare(lengths: readonly number[], room: number): number {
  const sorted = [...lengths].sort((a, b) => a - b);
  let rest = room;
  for (let index = 0; index < sorted.length; index += 1) {
    const share = Math.floor(rest / (sorted.length - index));
    const length = sorted[index] as number;
    if (length > share) return Math.max(0, share);
    rest -= length;
  }
  return Number.POSITIVE_INFINITY;
}

function moreLine(ids: readonly string[], what: string, page: string): string {
  if (ids.length === 0) return '';
  return `- ${ids.length} more ${what}, read them with wait_agents (by ids, or pages of ${page}): ${compactIds(ids)}`;
}
