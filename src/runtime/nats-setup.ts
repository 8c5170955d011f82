import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage, TroupeError } from '../errors.js';
import { compareNatural } from '../util/text-order.js';
import { hostConfigOf } from './pool-transport.js';
import { type StoredResult, StoredResultSchema, writeStoredResult } from './resume/result-store.js';
import type { RuntimeOptions } from './runtime-options.js';
import type { JournalMirror } from './wire/nats/journal-mirror.js';
import type { NatsConnectOptions, NatsLink } from './wire/nats/nats-link.js';
import type { NatsTransport, NatsTransportOptions } from './wire/nats/nats-transport.js';
import type { NodeInfo, RemoteHostConfig } from './wire/nats/node-wire.js';
import type { WorkerNode, WorkerNodeOptions } from './wire/nats/worker-node.js';

/** Where the NATS server is and how long to wait for things, for a run on worker nodes. */
export interface NatsRunOptions extends Omit<NatsTransportOptions, 'link' | 'runId' | 'config'> {
  /** `nats://host:port` (or `tls://…`); credentials come from `TROUPE_NATS_*` in the environment. */
  url: string;
  /** Where `TROUPE_NATS_*` credentials are read (default process.env). */
  env?: NodeJS.ProcessEnv | undefined;
}

/**
 * A transport that places a run's actors on NATS worker nodes
 * (`troupe worker --nats <url>`), for `RuntimeOptions.transport`. The
 * nodes load the run's tool modules from the same paths and refuse to run
 * them if their content differs (sha256). The environment never crosses:
 * nodes use their own, keys included.
 *
 * @example
 * const transport = await createNatsTransport(runId, options, { url: 'nats://127.0.0.1:4222' });
 * const runtime = new Runtime({ ...options, runId, transport });
 */
export async function createNatsTransport(
  runId: string,
  options: RuntimeOptions,
  nats: NatsRunOptions,
): Promise<NatsTransport> {
  const { env: _env, toolModules, ...rest } = hostConfigOf(runId, options);
  const config: RemoteHostConfig = {
    ...rest,
    toolModules: toolModules.map((path) => ({ path, sha256: sha256Of(path) })),
  };
  const [{ connectNats, ensureStreams, purgeWork, readResults }, { NatsTransport }] =
    await Promise.all([
      import('./wire/nats/nats-link.js'),
      import('./wire/nats/nats-transport.js'),
    ]);
  const link = await connectNats({ url: nats.url, name: `troupe run ${runId}`, env: nats.env });
  try {
    await ensureStreams(link, nats.deadAfterMs ?? 15_000);
    // A resumed run queues its own spawns: the ones its killed coordinator left are stale.
    if (nats.resume === true) await purgeWork(link, runId);
    // Resumed where its run folder lacks them (another machine): finished results come from NATS.
    if (nats.resume === true && options.results !== undefined) {
      restoreResults(options.results.dir, await readResults(link, runId));
    }
  } catch (error) {
    await link.nc.close();
    throw error;
  }
  const { url: _url, env: _natsEnv, ...transportOptions } = nats;
  return new NatsTransport({ ...transportOptions, link, runId, config });
}

/**
 * The mirror of run `runId`'s journal file at `path` in JetStream, on a
 * connection of its own (see JournalMirror): opened before the FileJournal
 * that writes the file, which it first makes agree with what NATS holds (a
 * resume on a machine without the file gets it from NATS). Give it to the
 * FileJournal as `mirror`; `close()` it after the journal.
 */
export async function openNatsJournalMirror(
  runId: string,
  path: string,
  nats: Pick<NatsRunOptions, 'url' | 'env' | 'deadAfterMs'>,
): Promise<JournalMirror> {
  const { link, mirrors } = await journalLink(runId, nats);
  try {
    return (await mirrors.openJournalMirror(link, runId, path)).mirror;
  } catch (error) {
    await link.nc.close();
    throw error;
  }
}

/**
 * For `--resume <runId> --nats` on a machine whose `out` has no folder for
 * the run: writes the run's journal from its NATS mirror into a new run
 * folder, so the resume replays the coordinator's turns and finds the task.
 * False (nothing written) when NATS holds no journal of the run.
 */
export async function restoreRunJournal(
  runId: string,
  path: string,
  nats: Pick<NatsRunOptions, 'url' | 'env' | 'deadAfterMs'>,
): Promise<boolean> {
  if (existsSync(path)) return false;
  const { link, mirrors } = await journalLink(runId, nats);
  try {
    // Only read: the session that writes (startRun's mirror) sends its mark when it opens.
    return (await mirrors.restoreFromMirror(link, runId, path)).restored;
  } finally {
    await link.nc.close();
  }
}

// A connection of its own for a run's journal mirror, its streams ensured (closed if that fails).
async function journalLink(
  runId: string,
  nats: Pick<NatsRunOptions, 'url' | 'env' | 'deadAfterMs'>,
): Promise<{ link: NatsLink; mirrors: typeof import('./wire/nats/journal-mirror.js') }> {
  const [{ connectNats, ensureStreams }, mirrors] = await Promise.all([
    import('./wire/nats/nats-link.js'),
    import('./wire/nats/journal-mirror.js'),
  ]);
  const link = await connectNats({
    url: nats.url,
    name: `troupe run ${runId} journal`,
    env: nats.env,
  });
  try {
    await ensureStreams(link, nats.deadAfterMs ?? 15_000);
  } catch (error) {
    await link.nc.close();
    throw error;
  }
  return { link, mirrors };
}

/** Connects and starts a worker node; `stop(graceMs)` drains it. */
export async function startWorkerNode(
  connect: Omit<NatsConnectOptions, 'name'>,
  options: Omit<WorkerNodeOptions, 'link'>,
): Promise<WorkerNode> {
  const [{ connectNats }, { WorkerNode }] = await Promise.all([
    import('./wire/nats/nats-link.js'),
    import('./wire/nats/worker-node.js'),
  ]);
  const link = await connectNats({ ...connect, name: `troupe worker ${options.name}` });
  const node = new WorkerNode({ ...options, link });
  try {
    await node.start();
  } catch (error) {
    await link.nc.close();
    throw error;
  }
  return node;
}

/** The live worker nodes on a NATS server: each answers within `waitMs` (default 1,000 ms). */
export async function listNodes(
  connect: Omit<NatsConnectOptions, 'name'>,
  waitMs = 1000,
): Promise<NodeInfo[]> {
  const [{ connectNats, subjects }, { NodeInfoSchema, decode }] = await Promise.all([
    import('./wire/nats/nats-link.js'),
    import('./wire/nats/node-wire.js'),
  ]);
  const link = await connectNats({ ...connect, name: 'troupe nodes' });
  const nodes: NodeInfo[] = [];
  try {
    const replies = await link.nc.requestMany(subjects.nodesPing, undefined, {
      maxWait: waitMs,
      strategy: 'timer',
    });
    for await (const reply of replies) {
      try {
        nodes.push(decode(reply.data, NodeInfoSchema, 'A node report'));
      } catch {
        // A reply that is not a node report is not a node.
      }
    }
  } catch (error) {
    if (!/no responders/i.test(errorMessage(error))) throw error;
  } finally {
    await link.nc.close();
  }
  // node-2 before node-10, the same on every machine (no locale, no ICU data loaded).
  return nodes.sort((a, b) => compareNatural(a.node, b.node));
}

// Writes the results kept on NATS that the run folder lacks; an unreadable one is skipped (it runs again).
function restoreResults(dir: string, payloads: readonly Uint8Array[]): void {
  const decoder = new TextDecoder();
  for (const payload of payloads) {
    let stored: StoredResult;
    try {
      stored = StoredResultSchema.parse(JSON.parse(decoder.decode(payload)));
    } catch {
      continue;
    }
    if (!existsSync(join(dir, `${stored.key}.json`))) writeStoredResult(dir, stored);
  }
}

function sha256Of(path: string): string {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch (error) {
    throw new TroupeError(
      'usage.invalid_option',
      `Cannot read the tool module ${path}: ${errorMessage(error)}`,
    );
  }
}
