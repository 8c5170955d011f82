import type { Command } from 'commander';
import { type CliIo, EXIT, exitWith } from '../context.js';

/** `troupe worker`: the NATS worker node is not part of this build; it says so and exits 2. */
export function registerWorkerCommand(program: Command, io: CliIo): void {
  program
    .command('worker')
    .description('run a worker node for the NATS transport (not available in this build)')
    .option('--nats <url>', 'the NATS server')
    .allowUnknownOption()
    .action(() => {
      io.stderr.write(
        'error: the NATS transport is not available in this build, so troupe worker cannot run.\n' +
          'Runs use local worker threads (troupe run --threads N). The distributed transport is planned\n' +
          'in DESIGN.md ("Scaling out"); it has not been built yet.\n',
      );
      exitWith(EXIT.usage);
    });
}
