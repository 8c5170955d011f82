import { readFileSync } from 'node:fs';
import type { JetStreamClient, JetStreamManager, StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { errorMessage, TroupeError } from '../../../errors.js';
import { StreamWriter } from './stream-writer.js';

/**
 * Names on the NATS server. Everything of a run is under its run id; the
 * streams are shared by every run and keep what they hold for a bounded
 * time (`RETENTION_MS`), so nothing a crashed run left behind stays forever.
 */
export const STREAMS = {
  /**
   * Spawn requests, a message holding those a coordinator queued in one turn
   * (up to SPAWNS_PER_MESSAGE); each message is taken by exactly one node.
   * Wire 4's `TROUPE_WORK` (one spawn per message) is no longer written: its
   * nodes never see wire 5's spawns, and it ages out.
   */
  work: 'TROUPE_SPAWNS',
  /**
   * Actors' journals: batches of model responses, one message per node and
   * turn (see JournalLog). Wire 3's `TROUPE_JOURNAL` (the whole list per
   * actor subject) is no longer written; it ages out.
   */
  responses: 'TROUPE_RESPONSES',
  /** Finished actors' stored results: the last message per subject holds one, for a resume elsewhere. */
  results: 'TROUPE_RESULTS',
  /**
   * The coordinator's run journal (journal.jsonl), mirrored as it is written:
   * chunks of whole lines in file order (see JournalMirror), so a coordinator
   * resumed on another machine replays its own turns and its tools' intents.
   */
  runJournal: 'TROUPE_RUN_JOURNAL',
} as const;

/** The durable pull consumer every worker node takes work from: spawns for any node (`troupe.spawns.<runId>`). */
export const WORK_CONSUMER = 'troupe-spawns';

/** A node's own durable pull consumer: spawns placed on that node (`troupe.spawns.<runId>.<node>`). */
export function nodeConsumer(node: string): string {
  return `troupe-spawns-${token(node)}`;
}

/** How long the streams keep a message at most (7 days), in milliseconds. */
export const RETENTION_MS = 7 * 24 * 3600 * 1000;

/** Subjects; run ids and keys are `[A-Za-z0-9_-]`, so they are safe as subject tokens. */
export const subjects = {
  work: (runId: string): string => `troupe.spawns.${token(runId)}`,
  workOn: (runId: string, node: string): string => `troupe.spawns.${token(runId)}.${token(node)}`,
  /** A node's own consumer's filter: spawns of any run placed on it. */
  workOnAny: (node: string): string => `troupe.spawns.*.${token(node)}`,
  up: (runId: string): string => `troupe.run.${token(runId)}.up`,
  down: (runId: string, node: string): string => `troupe.run.${token(runId)}.node.${token(node)}`,
  downAll: (node: string): string => `troupe.run.*.node.${token(node)}`,
  beat: (runId: string): string => `troupe.run.${token(runId)}.beat`,
  beatAll: 'troupe.run.*.beat',
  responses: (runId: string, node: string): string =>
    `troupe.responses.${token(runId)}.${token(node)}`,
  responsesOf: (runId: string): string => `troupe.responses.${token(runId)}.*`,
  result: (runId: string, key: string): string => `troupe.results.${token(runId)}.${token(key)}`,
  runJournal: (runId: string): string => `troupe.runlog.${token(runId)}`,
  results: (runId: string): string => `troupe.results.${token(runId)}.>`,
  nodesPing: 'troupe.nodes.ping',
  nodesBeat: 'troupe.nodes.beat',
};

/** A name reduced to what a subject token may hold. */
export function token(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_-]/g, '_');
  return safe === '' ? '_' : safe;
}

/** How to reach the NATS server. Credentials come from the environment, never from a spec or an event. */
export interface NatsConnectOptions {
  /** `nats://host:port` or `tls://host:port` (TLS required); several may be comma-separated. */
  url: string;
  /** The connection's name on the server (shown by its monitoring). */
  name: string;
  /**
   * Where credentials are read: `TROUPE_NATS_CREDS` (a .creds file),
   * `TROUPE_NATS_NKEY` (an NKey seed file), `TROUPE_NATS_TOKEN`, or
   * `TROUPE_NATS_USER` with `TROUPE_NATS_PASSWORD` (default process.env).
   */
  env?: NodeJS.ProcessEnv | undefined;
  /** Give up after the server has been unreachable this long, in milliseconds (default: keep trying). */
  reconnectForMs?: number | undefined;
}

/** An open connection with its JetStream handles. */
export interface NatsLink {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Stream writes with their acknowledgements on one subscription (the hot paths use it). */
  writer: StreamWriter;
  /** The URL without credentials, for messages. */
  where: string;
}

/**
 * Connects (the NATS packages are loaded here, on first use, so a local
 * run never pays for them). Fails with `usage.invalid_option` saying what
 * to check when the server cannot be reached.
 */
export async function connectNats(options: NatsConnectOptions): Promise<NatsLink> {
  const [
    { connect, createInbox, credsAuthenticator, nkeyAuthenticator },
    { jetstream, jetstreamManager },
  ] = await Promise.all([import('@nats-io/transport-node'), import('@nats-io/jetstream')]);
  const env = options.env ?? process.env;
  const servers = options.url.split(',').map((url) => url.trim());
  const where = servers.map(withoutCredentials).join(',');
  const auth: Record<string, unknown> = {};
  const creds = env['TROUPE_NATS_CREDS'];
  const seed = env['TROUPE_NATS_NKEY'];
  try {
    if (creds !== undefined && creds !== '') {
      auth['authenticator'] = credsAuthenticator(readFileSync(creds));
    } else if (seed !== undefined && seed !== '') {
      auth['authenticator'] = nkeyAuthenticator(
        new TextEncoder().encode(readFileSync(seed, 'utf8').trim()),
      );
    }
  } catch (error) {
    throw new TroupeError(
      'usage.invalid_option',
      `Cannot read the NATS credentials (${creds !== undefined && creds !== '' ? 'TROUPE_NATS_CREDS' : 'TROUPE_NATS_NKEY'}): ${errorMessage(error)}`,
    );
  }
  if (env['TROUPE_NATS_TOKEN'] !== undefined) auth['token'] = env['TROUPE_NATS_TOKEN'];
  if (env['TROUPE_NATS_USER'] !== undefined) {
    auth['user'] = env['TROUPE_NATS_USER'];
    auth['pass'] = env['TROUPE_NATS_PASSWORD'] ?? '';
  }
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers,
      name: options.name,
      ...auth,
      ...(servers.some((url) => url.startsWith('tls://')) ? { tls: {} } : {}),
      // Keep trying through a server restart; the owner decides when it has waited too long.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      pingInterval: 5000,
      timeout: 5000,
      // No Error (with its stack) made ahead for every request: journal writes and spawns are
      // requests, thousands a second in a fan-out, and their failures are reported by message.
      noAsyncTraces: true,
    });
  } catch (error) {
    throw new TroupeError(
      'usage.invalid_option',
      `Cannot connect to NATS at ${where}: ${errorMessage(error)}. Start a server with JetStream (nats-server -js) or check --nats and the TROUPE_NATS_* credentials.`,
      { cause: error },
    );
  }
  const jsm = await jetstreamManager(nc, { timeout: 10_000 }).catch(async (error: unknown) => {
    await nc.close();
    throw new TroupeError(
      'usage.invalid_option',
      `NATS at ${where} has no JetStream: ${errorMessage(error)}. Start the server with -js.`,
      { cause: error },
    );
  });
  const writer = new StreamWriter(nc, { inbox: createInbox(), timeoutMs: 10_000 });
  void nc.closed().then(() => writer.close());
  return { nc, js: jetstream(nc, { timeout: 10_000 }), jsm, writer, where };
}

/**
 * Creates the streams and the work consumer when missing (idempotent, and
 * safe when several nodes start at once). `deadAfterMs` is the consumer's
 * ack wait: a node that stops heartbeating an actor's spawn for that long
 * has it handed to another node.
 */
export async function ensureStreams(link: NatsLink, deadAfterMs: number): Promise<void> {
  const { RetentionPolicy, StorageType } = await import('@nats-io/jetstream');
  const { nanos } = await import('@nats-io/transport-node');
  const maxAge = nanos(RETENTION_MS);
  // Every stream keeps a message at most the retention time, on disk.
  const stream = (name: string, subject: string, extra: Partial<StreamConfig> = {}) =>
    ensure(
      () =>
        link.jsm.streams.add({
          name,
          subjects: [subject],
          storage: StorageType.File,
          max_age: maxAge,
          ...extra,
        }),
      () => link.jsm.streams.info(name),
    );
  await stream(STREAMS.work, 'troupe.spawns.>', { retention: RetentionPolicy.Workqueue });
  await stream(STREAMS.responses, 'troupe.responses.>');
  await stream(STREAMS.results, 'troupe.results.>', { max_msgs_per_subject: 1 });
  await stream(STREAMS.runJournal, 'troupe.runlog.>');
  await ensureWorkConsumer(link, WORK_CONSUMER, 'troupe.spawns.*', deadAfterMs);
}

/**
 * Creates (or updates) a durable pull consumer of the work queue on
 * `filter`. The shared one takes `troupe.spawns.<runId>`, a node's own one
 * `troupe.spawns.*.<node>`: their subjects never overlap, as a work-queue
 * stream requires.
 */
export async function ensureWorkConsumer(
  link: NatsLink,
  name: string,
  filter: string,
  deadAfterMs: number,
): Promise<void> {
  const { AckPolicy, DeliverPolicy } = await import('@nats-io/jetstream');
  const { nanos } = await import('@nats-io/transport-node');
  const consumer = {
    durable_name: name,
    filter_subject: filter,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(deadAfterMs),
    // A spawn is never given up on: it waits for a node as long as the stream keeps it.
    max_deliver: -1,
    max_ack_pending: 100_000,
    max_waiting: 4096,
  };
  await ensure(
    () => link.jsm.consumers.add(STREAMS.work, consumer),
    () => link.jsm.consumers.update(STREAMS.work, name, { ack_wait: consumer.ack_wait }),
  );
}

/** The stored results of a run's finished actors (raw payloads, one per actor key). */
export async function readResults(link: NatsLink, runId: string): Promise<Uint8Array[]> {
  const info = await link.jsm.streams.info(STREAMS.results, {
    subjects_filter: subjects.results(runId),
  });
  const names = Object.keys(info.state.subjects ?? {});
  const payloads: Uint8Array[] = [];
  // A few at a time: a run of thousands of actors asks in slices, not all at once.
  for (let index = 0; index < names.length; index += 64) {
    const slice = await Promise.all(
      names
        .slice(index, index + 64)
        .map((subject) => link.jsm.streams.getMessage(STREAMS.results, { last_by_subj: subject })),
    );
    for (const stored of slice) if (stored !== null) payloads.push(stored.data);
  }
  return payloads;
}

/** Removes a run's spawns that no node has taken from the work queue. */
export async function purgeWork(link: NatsLink, runId: string): Promise<void> {
  await link.jsm.streams.purge(STREAMS.work, { filter: subjects.work(runId) });
  await link.jsm.streams.purge(STREAMS.work, { filter: `${subjects.work(runId)}.*` });
}

// Adds, or falls back when it exists already (another node made it first, or with other settings).
async function ensure(
  add: () => Promise<unknown>,
  fallback: () => Promise<unknown>,
): Promise<void> {
  try {
    await add();
  } catch (error) {
    try {
      await fallback();
    } catch {
      throw new TroupeError(
        'runtime.protocol',
        `Cannot set up the troupe streams on NATS: ${errorMessage(error)}`,
        { cause: error },
      );
    }
  }
}

function withoutCredentials(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//');
}
