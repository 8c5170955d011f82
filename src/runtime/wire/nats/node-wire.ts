import { z } from 'zod';
import { JournalEntrySchema as AgentJournalEntrySchema } from '../../../agent/journal.js';
import { TroupeError } from '../../../errors.js';
import { compileCheck } from '../../../events/event-check.js';
import { ModelSpecSchema } from '../../../model/model.js';
import { ModelResponseSchema } from '../../../model/types.js';
import {
  ActorStartSchema,
  HostConfigSchema,
  MainToWorkerSchema,
  RoleSpecSchema,
} from '../protocol.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * What crosses NATS between a coordinator and its worker nodes, on top of
 * the worker protocol (protocol.ts): the spawn request in the work queue,
 * the batches each way, journals and node reports. Every message is JSON
 * and parsed with these schemas on receipt; worker-protocol items inside
 * are parsed by the protocol's own parsers, as they are between threads.
 */

/** The version of this wire; a node refuses work of another one with an error that says so. */
export const NATS_WIRE_VERSION = 5;

/**
 * One coordinator process of a run. A resumed coordinator is a new session
 * of the same run; the later `startedAt` wins, so work and heartbeats of the
 * session it replaced are recognised as stale wherever they arrive late.
 */
export const SessionSchema = z.object({ id: z.string(), startedAt: z.number() });
export type Session = z.infer<typeof SessionSchema>;

/** A user tool module a node must load: its path and the sha256 of its content. */
export const ToolModuleRefSchema = z.object({ path: z.string(), sha256: z.string() });
export type ToolModuleRef = z.infer<typeof ToolModuleRefSchema>;

/** A run's host config as it crosses to nodes: no environment (a node uses its own, keys included). */
export const RemoteHostConfigSchema = HostConfigSchema.omit({
  env: true,
  toolModules: true,
}).extend({ toolModules: z.array(ToolModuleRefSchema) });
export type RemoteHostConfig = z.infer<typeof RemoteHostConfigSchema>;

/**
 * One spawn in the work queue (`troupe.spawns.<runId>`): everything a node
 * needs to host the actor, self-contained, so whichever node takes it (the
 * first, or another after the first died) can start it.
 */
export const WorkItemSchema = z.object({
  wire: z.number().int(),
  runId: z.string(),
  /** The coordinator process that queued it; a resumed coordinator is a new session. */
  session: SessionSchema,
  config: RemoteHostConfigSchema,
  roleKey: z.string(),
  role: RoleSpecSchema,
  modelKey: z.string(),
  model: ModelSpecSchema,
  start: ActorStartSchema,
  /** Which queuing of this attempt it is: a spawn queued again replaces the one before. */
  generation: z.number().int().nonnegative(),
  /** Read the actor's journal before starting it (a resumed run, or a later attempt). */
  readJournal: z.boolean(),
});
export type WorkItem = z.infer<typeof WorkItemSchema>;
export type WorkItemInput = z.input<typeof WorkItemSchema>;

// What a node checks of every spawn; the parts a session repeats in each (config, role, model) once per key.
const WorkHeaderSchema = WorkItemSchema.omit({ config: true, role: true, model: true });
type WorkHeader = z.infer<typeof WorkHeaderSchema>;

// The header's check compiled from its schema (zod's rules, no output built): zod parses only a
// header it refuses, and says why. Made on first use.
let headerCheck: ((value: unknown) => boolean) | undefined;

function decodeHeader(data: Uint8Array): WorkHeader {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    throw new TroupeError('runtime.protocol', 'A spawn request is not JSON.');
  }
  headerCheck ??= compileCheck(WorkHeaderSchema);
  if (headerCheck(json)) return json as WorkHeader;
  const parsed = WorkHeaderSchema.safeParse(json);
  if (!parsed.success) {
    throw new TroupeError(
      'runtime.protocol',
      `A spawn request is invalid: ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}

// The parts of a spawn a session repeats in each: one JSON line, the same bytes every time.
const WorkDefsSchema = z.object({ config: z.unknown(), role: z.unknown(), model: z.unknown() });

// Between a spawn's header and its parts: JSON text never holds a raw newline (one in a string is escaped).
const NEWLINE = 10;

/**
 * Spawn requests as bytes: a JSON header (the start item and what places
 * it), a newline, and the config, role and model as a second JSON line.
 * The second line is the same for every spawn of a role and model, so it is
 * serialized once, and a node that knows the session's keys never parses it.
 */
export class WorkEncoder {
  readonly #defs = new Map<string, Uint8Array>();

  encode(work: WorkItemInput): Uint8Array {
    const cacheKey = `${work.roleKey}\n${work.modelKey}`;
    let defs = this.#defs.get(cacheKey);
    if (defs === undefined) {
      defs = encoder.encode(
        `\n${JSON.stringify({ config: work.config, role: work.role, model: work.model })}`,
      );
      this.#defs.set(cacheKey, defs);
    }
    // Field by field, not a rest spread (the spread was the larger part of encoding a spawn).
    const head = encoder.encode(
      JSON.stringify({
        wire: work.wire,
        runId: work.runId,
        session: work.session,
        roleKey: work.roleKey,
        modelKey: work.modelKey,
        start: work.start,
        generation: work.generation,
        readJournal: work.readJournal,
      }),
    );
    const bytes = new Uint8Array(head.length + defs.length);
    bytes.set(head);
    bytes.set(defs, head.length);
    return bytes;
  }
}

/**
 * Spawns a coordinator queues in one event-loop turn share a message of the
 * work queue, up to this many (wire 5). Per message the server stores,
 * acknowledges and delivers once and a node handles one delivery: per spawn,
 * these were most of the NATS fan-out's messages.
 */
export const SPAWNS_PER_MESSAGE = 16;

// Between the spawns of one message: JSON text never holds a raw control character.
const RECORD_SEPARATOR = 0x1e;

/** The spawns (each as WorkEncoder makes it) as one message of the work queue. */
export function joinSpawns(spawns: readonly Uint8Array[]): Uint8Array {
  if (spawns.length === 1) return spawns[0] as Uint8Array;
  let size = spawns.length - 1;
  for (const spawn of spawns) size += spawn.length;
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const spawn of spawns) {
    if (at > 0) {
      bytes[at] = RECORD_SEPARATOR;
      at += 1;
    }
    bytes.set(spawn, at);
    at += spawn.length;
  }
  return bytes;
}

/** The spawns of one message of the work queue (views of its bytes; one, for a message of one). */
export function splitSpawns(data: Uint8Array): Uint8Array[] {
  const spawns: Uint8Array[] = [];
  let from = 0;
  for (;;) {
    const end = data.indexOf(RECORD_SEPARATOR, from);
    if (end === -1) break;
    spawns.push(data.subarray(from, end));
    from = end + 1;
  }
  spawns.push(data.subarray(from));
  return spawns;
}

const UNREAD = encoder.encode(',"readJournal":false}');
const READ = encoder.encode(',"readJournal":true }');

/**
 * The spawn, as WorkEncoder made it, saying to read the actor's journal
 * first: a spawn a node hands back after its actor ran there (the next
 * node continues from the journal), as a redelivered message says by its
 * delivery count. The header's last field is `readJournal`; the flag is
 * rewritten in place (the same length), nothing else is touched.
 */
export function withJournalRead(spawn: Uint8Array): Uint8Array {
  const split = spawn.indexOf(NEWLINE);
  const headerEnd = split === -1 ? spawn.length : split;
  const at = headerEnd - UNREAD.length;
  if (at < 0) return spawn;
  for (let index = 0; index < UNREAD.length; index += 1) {
    if (spawn[at + index] !== UNREAD[index]) return spawn;
  }
  const copy = spawn.slice();
  copy.set(READ, at);
  return copy;
}

/**
 * Parses spawn requests. The header is checked whole every time; the
 * config, role and model are parsed and checked the first time a session
 * names them (by its keys, which name one value per session) and reused
 * after, so a thousand spawns of one role cost one parse of them.
 */
export class WorkDecoder {
  readonly #parts = new Map<string, unknown>();

  decode(data: Uint8Array): WorkItem {
    const split = data.indexOf(NEWLINE);
    if (split === -1)
      throw new TroupeError('runtime.protocol', 'A spawn request has no parts line.');
    const header = decodeHeader(data.subarray(0, split));
    const session = header.session.id;
    const keys = {
      config: `${session}\nconfig`,
      role: `${session}\nrole\n${header.roleKey}`,
      model: `${session}\nmodel\n${header.modelKey}`,
    };
    let defs: z.infer<typeof WorkDefsSchema> | undefined;
    if (
      !this.#parts.has(keys.config) ||
      !this.#parts.has(keys.role) ||
      !this.#parts.has(keys.model)
    ) {
      defs = decode(data.subarray(split + 1), WorkDefsSchema, "A spawn request's parts");
    }
    return this.#item(header, keys, defs);
  }

  #item(
    header: WorkHeader,
    keys: { config: string; role: string; model: string },
    defs: z.infer<typeof WorkDefsSchema> | undefined,
  ): WorkItem {
    // Field by field: a spread of the header followed by new keys took ~30 µs per spawn in V8
    // (Node 20), half of a node's cost of taking one; this is well under one.
    return {
      wire: header.wire,
      runId: header.runId,
      session: header.session,
      config: this.#part(keys.config, defs?.config, RemoteHostConfigSchema, 'config'),
      roleKey: header.roleKey,
      role: this.#part(keys.role, defs?.role, RoleSpecSchema, 'role'),
      modelKey: header.modelKey,
      model: this.#part(keys.model, defs?.model, ModelSpecSchema, 'model'),
      start: header.start,
      generation: header.generation,
      readJournal: header.readJournal,
    };
  }

  #part<TSchema extends z.ZodType>(
    key: string,
    value: unknown,
    schema: TSchema,
    what: string,
  ): z.infer<TSchema> {
    if (this.#parts.has(key)) return this.#parts.get(key) as z.infer<TSchema>;
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      throw new TroupeError(
        'runtime.protocol',
        `A spawn request's ${what} is invalid: ${z.prettifyError(parsed.error)}`,
      );
    }
    // Bounded: a long-lived node sees many sessions; starting over costs one parse per key.
    if (this.#parts.size >= 4096) this.#parts.clear();
    this.#parts.set(key, parsed.data);
    return parsed.data;
  }
}

/** Node-level items a node sends up besides the worker protocol's. */
export const NodeUpItemSchema = z.discriminatedUnion('type', [
  /** The node took the actor's spawn and starts it; everything of that actor comes after this. */
  z.object({
    type: z.literal('node.claimed'),
    actorId: z.string(),
    attempt: z.number().int().positive(),
    generation: z.number().int().nonnegative(),
    /** The session whose spawn it took (a claim of a replaced coordinator's spawn is refused). */
    session: z.string(),
    replayed: z.number().int().nonnegative(),
  }),
]);
export type NodeUpItem = z.infer<typeof NodeUpItemSchema>;

/** A batch from a node to a run's coordinator (`troupe.run.<runId>.up`). */
export const UpBatchSchema = z.object({ node: z.string(), items: z.array(z.unknown()) });

/** Node-level items the coordinator sends down besides the worker protocol's. */
export const NodeDownItemSchema = z.discriminatedUnion('type', [
  /** Stop hosting this attempt silently: it runs elsewhere now, or it is stale. */
  z.object({
    type: z.literal('node.drop'),
    actorId: z.string(),
    /** The spawn meant (attempt, generation, session): a later spawn of the actor is left alone. */
    attempt: z.number().int().positive(),
    generation: z.number().int().nonnegative(),
    session: z.string(),
    reason: z.string(),
    /** Stop the thread it runs in (it ignored its cancel); the thread's actors end as lost. */
    kill: z.boolean().optional(),
    /** The attempt is over: its spawn is removed from the queue (else another node holds it now). */
    done: z.boolean().optional(),
  }),
  /** The run is over: cancel what is left of it and free its threads. */
  z.object({ type: z.literal('node.run_closed') }),
]);
export type NodeDownItem = z.infer<typeof NodeDownItemSchema>;

/** A batch from a coordinator to one node (`troupe.run.<runId>.node.<node>`). */
export const DownBatchSchema = z.object({
  items: z.array(z.union([NodeDownItemSchema, MainToWorkerSchema])),
});
export type DownItem = z.infer<typeof DownBatchSchema>['items'][number];
export type DownItemInput = z.input<typeof DownBatchSchema>['items'][number];

/**
 * Model responses of one actor, from call `from` (1-based) on, written by
 * one chain: one node's hosting of one spawn of the actor. A chain's first
 * entry starts at call 1 (the responses it replayed, then its own).
 */
export const JournalEntrySchema = z.object({
  /** The actor's result key (its id when it has none): the same for every attempt and node. */
  key: z.string(),
  chain: z.string(),
  from: z.number().int().positive(),
  responses: z.array(ModelResponseSchema),
  /**
   * The order the actor took its messages in (the run journal's `inbox`
   * records, when the run keeps one), recorded since the chain's last
   * write; a chain's first write holds every one from the start, as for
   * responses. A node that takes the actor over replays it (InboxOrder).
   */
  inbox: z.array(AgentJournalEntrySchema).optional(),
});
export type JournalEntry = z.infer<typeof JournalEntrySchema>;

/** One message of a node's journal batches (`troupe.responses.<runId>.<node>`): what one turn recorded. */
export const JournalBatchSchema = z.object({ entries: z.array(JournalEntrySchema) });

/** What a node reports about itself (heartbeats and `troupe nodes`). */
export const NodeInfoSchema = z.object({
  node: z.string(),
  version: z.string(),
  wire: z.number().int(),
  threads: z.number().int().positive(),
  maxActors: z.number().int().positive(),
  actors: z.number().int().nonnegative(),
  runs: z.number().int().nonnegative(),
  startedAt: z.number(),
});
export type NodeInfo = z.infer<typeof NodeInfoSchema>;

/** The coordinator's heartbeat on `troupe.run.<runId>.beat`: nodes drop a run whose coordinator is silent. */
export const BeatSchema = z.object({ session: SessionSchema });

/** JSON bytes for a NATS payload. */
export function encode(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Parses a NATS payload with `schema`; throws `runtime.protocol` saying what was wrong. */
export function decode<TSchema extends z.ZodType>(
  data: Uint8Array,
  schema: TSchema,
  what: string,
): z.infer<TSchema> {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    throw new TroupeError('runtime.protocol', `${what} is not JSON.`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new TroupeError(
      'runtime.protocol',
      `${what} is invalid: ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}
