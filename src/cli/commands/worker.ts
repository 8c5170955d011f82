import { availableParallelism, hostname } from 'node:os';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { startWorkerNode } from '../../runtime/nats-setup.js';
import { troupePackage } from '../../util/package-files.js';
import { type CliIo, EXIT, exitWith, usageError } from '../context.js';
import { parsePositiveInteger, resolveFolder } from './options.js';

// Coordinators beat every second: a node that waits less than two beats counts a live one as gone.
const MIN_DEAD_AFTER_MS = 2000;

function parseDeadAfter(value: string): number {
  const ms = parsePositiveInteger(value);
  if (ms < MIN_DEAD_AFTER_MS) {
    throw new InvalidArgumentError(
      `it is in milliseconds and must be at least ${MIN_DEAD_AFTER_MS} (coordinators beat every second); for ${ms} seconds, pass ${ms * 1000}.`,
    );
  }
  return ms;
}

interface WorkerFlags {
  nats?: string | undefined;
  threads?: number | undefined;
  toolThreads?: number | undefined;
  name?: string | undefined;
  maxActors?: number | undefined;
  workspace?: string | undefined;
  deadAfter?: number | undefined;
  drain?: number | undefined;
}

/**
 * `troupe worker --nats <url>`: a worker node. It takes spawns from the
 * JetStream work queue and hosts their actors on its own threads until
 * SIGTERM or Ctrl-C, then drains: running actors get `--drain` seconds to
 * finish and the rest are handed back to the queue for other nodes.
 */
export function registerWorkerCommand(program: Command, io: CliIo): void {
  program
    .command('worker')
    .description('run a worker node: host sub-agents of runs started with troupe run --nats')
    .option('--nats <url>', 'the NATS server with JetStream (nats://host:4222, tls://… for TLS)')
    .option(
      '--threads <n>',
      'worker threads per run (default: cores, at most 4)',
      parsePositiveInteger,
    )
    .option(
      '--tool-threads <n>',
      "the most threads per run for the run's user tools on this node (default 2; one starts, more while all are busy)",
      parsePositiveInteger,
    )
    .option('--name <id>', "this node's name, unique on the server (default: host name and pid)")
    .option('--max-actors <n>', 'actors hosted at once (default 5000)', parsePositiveInteger)
    .option(
      '--workspace <dir>',
      "where file tools read on this machine (default: the coordinator's workspace path)",
    )
    .option(
      '--dead-after <ms>',
      'silence after which a node counts as dead and its actors move, in ms (default 15000, at least 2000)',
      parseDeadAfter,
    )
    .option(
      '--drain <seconds>',
      'on SIGTERM, time running actors get to finish (default 30)',
      parsePositiveInteger,
    )
    .action(async (flags: WorkerFlags) => {
      if (flags.nats === undefined) {
        throw usageError(
          'troupe worker needs --nats <url>, e.g. troupe worker --nats nats://127.0.0.1:4222 (start the server with nats-server -js).',
        );
      }
      const cwd = io.cwd ?? process.cwd();
      const name = flags.name ?? `${hostname()}-${process.pid}`;
      const threads = flags.threads ?? Math.min(4, Math.max(1, availableParallelism()));
      const node = await startWorkerNode(
        { url: flags.nats, env: io.env },
        {
          name,
          threads,
          toolThreads: flags.toolThreads,
          maxActors: flags.maxActors ?? 5000,
          deadAfterMs: flags.deadAfter,
          ...(flags.workspace === undefined
            ? {}
            : { workspace: resolveFolder(cwd, flags.workspace, '--workspace') }),
          version: troupePackage().version,
          log: (line) => io.stderr.write(`troupe worker ${name}: ${line}\n`),
        },
      );
      io.stderr.write(
        `troupe worker ${name}: taking work from ${flags.nats} (${threads} threads per run, up to ${flags.maxActors ?? 5000} actors)\n`,
      );
      await new Promise<void>((resolve) => {
        if (io.signal === undefined) return;
        if (io.signal.aborted) resolve();
        io.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      io.stderr.write(`troupe worker ${name}: draining (${node.actors} actors running)\n`);
      await node.stop((flags.drain ?? 30) * 1000);
      io.stderr.write(`troupe worker ${name}: stopped\n`);
      exitWith(EXIT.ok);
    });
}
