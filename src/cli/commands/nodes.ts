import type { Command } from 'commander';
import { listNodes } from '../../runtime/nats-setup.js';
import { type CliIo, usageError } from '../context.js';

/** `troupe nodes --nats <url>`: the live worker nodes with their capacity, load and version. */
export function registerNodesCommand(program: Command, io: CliIo): void {
  program
    .command('nodes')
    .description('list the live worker nodes on a NATS server')
    .option('--nats <url>', 'the NATS server')
    .option('--json', 'one JSON object per node')
    .action(async (flags: { nats?: string | undefined; json?: boolean | undefined }) => {
      if (flags.nats === undefined) {
        throw usageError(
          'troupe nodes needs --nats <url>, e.g. troupe nodes --nats nats://127.0.0.1:4222',
        );
      }
      const nodes = await listNodes({ url: flags.nats, env: io.env });
      if (flags.json === true) {
        for (const node of nodes) io.stdout.write(`${JSON.stringify(node)}\n`);
        return;
      }
      if (nodes.length === 0) {
        io.stdout.write(
          `no worker nodes answered on ${flags.nats}; start one with troupe worker --nats ${flags.nats}\n`,
        );
        return;
      }
      const rows = [
        ['node', 'actors', 'max', 'threads', 'runs', 'version', 'up'],
        ...nodes.map((node) => [
          node.node,
          String(node.actors),
          String(node.maxActors),
          String(node.threads),
          String(node.runs),
          node.version,
          `${Math.round((Date.now() - node.startedAt) / 1000)} s`,
        ]),
      ];
      const widths =
        rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
      for (const row of rows) {
        io.stdout.write(
          `${row
            .map((cell, column) => cell.padEnd(widths[column] ?? 0))
            .join('  ')
            .trimEnd()}\n`,
        );
      }
    });
}
