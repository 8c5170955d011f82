import { z } from 'zod';
import { ErrorCodeSchema } from '../errors.js';
import { type Message, ModelResponseSchema, type ToolSchema } from '../model/types.js';
import type { ToolResult } from '../tools/registry.js';
import { checkedJson, checkedLine } from '../util/checked-line.js';
import { RunningSha256, sha256Hex } from '../util/sha256.js';

/** A tool result as the journal keeps it (the registry's `ToolResult`). */
export const ToolResultSchema = z.union([
  z.object({ ok: z.literal(true), content: z.string() }),
  z.object({
    ok: z.literal(false),
    content: z.string(),
    error: z.object({ code: ErrorCodeSchema.catch('internal'), message: z.string() }),
  }),
]);

/**
 * One thing an agent did that a resume must not pay for again, keyed by the
 * agent's model-call index (`step`, counted over the agent's whole life, so
 * a subscriber's later runs go on counting):
 *
 * - `model`: a completed model response, whole (thinking and signatures
 *   included), with a hash of the request that produced it;
 * - `tool.started`: a tool call is about to run (written, and flushed,
 *   before a tool that is not idempotent runs);
 * - `tool`: the tool call's result;
 * - `inbox`: messages (channel messages, a parent's steering, close
 *   notices) the agent took into its history before model call `step`, by
 *   a hash of their text, in the order taken. A resumed subscriber is given
 *   its messages in this order, so its replayed requests match the record
 *   however its publishers' replays interleave. `reset` marks the first
 *   record of an attempt that went live: the earlier attempt's records
 *   from `step` on are stale.
 */
export const JournalEntrySchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('model'),
    step: z.number().int().nonnegative(),
    hash: z.string(),
    response: ModelResponseSchema,
  }),
  z.object({
    kind: z.literal('tool.started'),
    step: z.number().int().nonnegative(),
    callId: z.string(),
    name: z.string(),
  }),
  z.object({
    kind: z.literal('tool'),
    step: z.number().int().nonnegative(),
    callId: z.string(),
    name: z.string(),
    result: ToolResultSchema,
  }),
  z.object({
    kind: z.literal('inbox'),
    step: z.number().int().nonnegative(),
    hashes: z.array(z.string()).min(1),
    reset: z.literal(true).optional(),
  }),
]);
export type JournalEntry = z.infer<typeof JournalEntrySchema>;

/**
 * An agent's side of the run's journal. `recorded` is what an earlier
 * attempt recorded for this agent, replayed in order before the agent goes
 * live; `record` and `intend` add to the journal as the agent works.
 */
export interface AgentJournal {
  readonly recorded: readonly JournalEntry[];
  /** Records a completed model response or tool result (batched by the journal). */
  record(entry: JournalEntry): void;
  /** Records that a tool call starts; resolves once that is durable, and only then does the tool run. */
  intend(entry: Extract<JournalEntry, { kind: 'tool.started' }>): Promise<void>;
}

/**
 * A record of the agent `key` as a run journal's file holds it: the
 * checksummed line of `{"a": key, "e": entry}`. An actor thread encodes its
 * own records so (`actor.start` tells it its key), and the main thread
 * appends the text as it came instead of encoding every record again.
 */
export function journalLine(key: string, entry: JournalEntry): string {
  return checkedLine(JSON.stringify({ a: key, e: entry }));
}

/**
 * `journalLine` for the records of one agent, the very same text: the key's
 * part is encoded once, not with every record (an actor thread encodes
 * seven records or more per agent).
 */
export function journalLineEncoder(key: string): (entry: JournalEntry) => string {
  const text = JSON.stringify;
  const head = `{"a":${text(key)},"e":`;
  return (entry) =>
    checkedLine(
      // An intent, built from its fields (the same text): a walk of the object cost about twice this.
      entry.kind === 'tool.started'
        ? `${head}{"kind":"tool.started","step":${entry.step},"callId":${text(entry.callId)},"name":${text(entry.name)}}}`
        : `${head}${text(entry)}}`,
    );
}

/**
 * The key and entry of a line made by `journalLine` (newline or not), or
 * undefined when it fails its checksum or is no record. The entry's shape
 * is not checked here (a resume reading the file checks it whole).
 */
export function readJournalLine(line: string): { key: string; entry: JournalEntry } | undefined {
  const json = checkedJson(line.endsWith('\n') ? line.slice(0, -1) : line);
  if (json === undefined) return undefined;
  try {
    const value = JSON.parse(json) as { a?: unknown; e?: unknown };
    if (typeof value.a !== 'string' || typeof value.e !== 'object' || value.e === null)
      return undefined;
    return { key: value.a, entry: value.e as JournalEntry };
  } catch {
    return undefined;
  }
}

/** What the model reads for a call that a crash interrupted, when the tool is not idempotent. */
export const INTERRUPTED_RESULT: ToolResult = {
  ok: false,
  content:
    'This tool call was interrupted by a crash and its outcome is unknown: it may or may not have taken effect. It was not run again, because running it twice may not be safe. Check its effect if you can, then decide whether to call it again.',
  error: {
    code: 'tool.failed',
    message:
      'interrupted by a crash; outcome unknown (the tool is not idempotent, so it was not re-run)',
  },
};

// What the offered tools add to a request's hash, per tool list (a registry's list never changes).
const toolsParts = new WeakMap<readonly ToolSchema[], string>();

function toolsPart(tools: readonly ToolSchema[]): string {
  let part = toolsParts.get(tools);
  if (part === undefined) {
    part = tools
      .map((tool) => `\u0000${tool.name}\u0000${JSON.stringify(tool.parameters)}`)
      .join('');
    toolsParts.set(tools, part);
  }
  return part;
}

/**
 * A short, stable hash of a model request (its messages and the tools the
 * model is offered): a recorded response is replayed only for the same request.
 * The digest of the messages' JSON followed by, per tool, NUL, its name, NUL
 * and its parameters' JSON (what journals of earlier versions hold).
 */
export function requestHash(messages: readonly Message[], tools: readonly ToolSchema[]): string {
  return sha256Hex(JSON.stringify(messages) + toolsPart(tools)).slice(0, 24);
}

// Past this many characters of history JSON, a request's hash goes on from a running digest
// instead of hashing the whole text again on each call (and the text is no longer kept: an
// agent holds at most this much of it, besides its history).
const RUNNING_FROM_CHARS = 8_192;

/**
 * `requestHash` for the calls of one agent, whose history grows between
 * them: each message is encoded once, when it is first hashed, and a long
 * history is hashed on from a running digest, so a call costs what was
 * added since the last one, not the whole history again. The digest is
 * always what `requestHash` gives for the same request. When the history
 * was rewritten (another array, as compression and the nudge make, or one
 * that shrank or whose last hashed message changed), it starts again from
 * the first message.
 */
export class RequestHasher {
  #messages: readonly Message[] | undefined;
  #count = 0;
  #last: Message | undefined;
  // '[' and the hashed messages' JSON joined by ',', while short; then a running digest of it.
  #json = '';
  #running: RunningSha256 | undefined;

  hash(messages: readonly Message[], tools: readonly ToolSchema[]): string {
    const count = this.#count;
    if (
      messages !== this.#messages ||
      messages.length < count ||
      (count > 0 && messages[count - 1] !== this.#last)
    ) {
      this.#messages = messages;
      this.#count = 0;
      this.#json = '';
      this.#running = undefined;
    }
    for (let index = this.#count; index < messages.length; index += 1) {
      this.#add(`${index === 0 ? '[' : ','}${JSON.stringify(messages[index])}`);
    }
    this.#count = messages.length;
    this.#last = messages[messages.length - 1];
    const tail = `${messages.length === 0 ? '[' : ''}]${toolsPart(tools)}`;
    const running = this.#running;
    return (running === undefined ? sha256Hex(this.#json + tail) : running.digestWith(tail)).slice(
      0,
      24,
    );
  }

  #add(part: string): void {
    if (this.#running !== undefined) {
      this.#running.update(part);
      return;
    }
    this.#json += part;
    if (this.#json.length < RUNNING_FROM_CHARS) return;
    this.#running = new RunningSha256();
    this.#running.update(this.#json);
    this.#json = '';
  }
}

/** The hash an `inbox` record keeps of one message's text. */
export function messageHash(content: string): string {
  return sha256Hex(content).slice(0, 16);
}

/**
 * The order a resumed agent takes its messages in: for each model call,
 * the hashes of the messages it took before it, from the `inbox` records
 * (a `reset` record drops what an earlier attempt recorded from its step on).
 */
export function inboxPlan(entries: readonly JournalEntry[]): Map<number, string[]> {
  const plan = new Map<number, string[]>();
  for (const entry of entries) {
    if (entry.kind !== 'inbox') continue;
    if (entry.reset === true) {
      for (const step of [...plan.keys()]) if (step >= entry.step) plan.delete(step);
    }
    const list = plan.get(entry.step) ?? [];
    list.push(...entry.hashes);
    plan.set(entry.step, list);
  }
  return plan;
}

/**
 * What an agent replays: the latest record of each step. A model record for
 * step s makes every earlier record at step s or later stale (it was written
 * after a divergence or a retry went live from there).
 */
export class JournalReplay {
  readonly #models = new Map<number, Extract<JournalEntry, { kind: 'model' }>>();
  readonly #tools = new Map<string, Extract<JournalEntry, { kind: 'tool' }>>();
  readonly #started = new Set<string>();

  constructor(entries: readonly JournalEntry[]) {
    for (const entry of entries) {
      if (entry.kind === 'model') {
        this.#dropFrom(entry.step);
        this.#models.set(entry.step, entry);
      } else if (entry.kind === 'tool') {
        this.#tools.set(`${entry.step}\u0000${entry.callId}`, entry);
      } else if (entry.kind === 'tool.started') {
        this.#started.add(`${entry.step}\u0000${entry.callId}`);
      }
    }
  }

  /** True when nothing is left to replay from `step` on. */
  exhaustedAt(step: number): boolean {
    for (const recorded of this.#models.keys()) if (recorded >= step) return false;
    return true;
  }

  /** The recorded response of `step`. */
  model(step: number): Extract<JournalEntry, { kind: 'model' }> | undefined {
    return this.#models.get(step);
  }

  /** The recorded result of a call, or `started` when it began and no result was recorded. */
  tool(step: number, callId: string): ToolResult | 'started' | undefined {
    const key = `${step}\u0000${callId}`;
    const entry = this.#tools.get(key);
    if (entry !== undefined) return entry.result as ToolResult;
    return this.#started.has(key) ? 'started' : undefined;
  }

  #dropFrom(step: number): void {
    for (const recorded of [...this.#models.keys()])
      if (recorded >= step) this.#models.delete(recorded);
    for (const [key, entry] of [...this.#tools]) if (entry.step >= step) this.#tools.delete(key);
    for (const key of [...this.#started]) {
      if (Number(key.slice(0, key.indexOf('\u0000'))) >= step) this.#started.delete(key);
    }
  }
}
