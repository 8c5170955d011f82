import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { OFFLINE_DELAY_ENV } from '../../model/providers/offline.js';
import { DEFAULT_GRANTS } from '../../tools/permissions.js';
import { type CliIo, chooseOutputMode, exitWith, usageError } from '../context.js';
import { defaultOutDir, OUT_FLAG_HELP } from '../default-out.js';
import { corpusDir } from '../package-root.js';
import { OTEL_FLAG_HELP } from './observe.js';
import { parsePositiveInteger } from './options.js';
import { executeJob, INTERACTIVE_FLAG_HELP } from './run.js';

/** The task the demo gives the coordinator. */
export const DEMO_TASK =
  'Research the documents in the workspace, compare what they say (common themes, figures side by side, which source says what) and write a report.';

/** Pause per offline model call in the live demo, so a person can watch it work (milliseconds). */
const LIVE_DEMO_DELAY_MS = 350;

interface DemoFlags {
  out: string;
  threads?: number | undefined;
  json?: boolean | undefined;
  quiet?: boolean | undefined;
  fast?: boolean | undefined;
  otel?: boolean | undefined;
  interactive?: boolean | undefined;
}

/** `troupe demo`: the main job on the built-in offline model over the bundled corpus; no key, no network. */
export function registerDemoCommand(program: Command, io: CliIo): void {
  program
    .command('demo')
    .description(
      'research → analysis → report over the bundled example corpus on the offline heuristic model (no key, no network)',
    )
    .option('--out <dir>', OUT_FLAG_HELP, defaultOutDir(io.env))
    .option(
      '--threads <n>',
      'the most worker threads for the agents (default: cores, at most 4; one starts, more while all are saturated)',
      parsePositiveInteger,
    )
    .option('--json', 'print every event as NDJSON on stdout (progress goes to stderr)')
    .option('--quiet', 'plain lines instead of the live view')
    .option('--fast', 'do not slow the offline model down for watching')
    .option('--no-interactive', INTERACTIVE_FLAG_HELP)
    .option('--otel', OTEL_FLAG_HELP)
    .action(async (flags: DemoFlags) => {
      const workspace = corpusDir();
      if (!existsSync(workspace)) {
        throw usageError(
          `The bundled corpus is missing (${workspace}); reinstall troupe from its repository.`,
        );
      }
      const mode = chooseOutputMode(io, flags);
      const documents = readdirSync(workspace).filter((name) => name.endsWith('.md'));
      io.stderr.write(
        `troupe demo: ${documents.length} documents in ${workspace}, on the offline heuristic model (extractive rules, not an LLM; no key, no network).\n`,
      );
      const paced =
        mode === 'live' && flags.fast !== true && io.env[OFFLINE_DELAY_ENV] === undefined;
      exitWith(
        await executeJob(io, {
          task: DEMO_TASK,
          spec: { provider: 'offline' },
          workspace,
          out: resolve(io.cwd ?? process.cwd(), flags.out),
          grants: [...DEFAULT_GRANTS],
          roles: [],
          threads: flags.threads,
          mode,
          approve: false,
          env: paced ? { ...io.env, [OFFLINE_DELAY_ENV]: String(LIVE_DEMO_DELAY_MS) } : io.env,
          otel: flags.otel === true,
          interactive: flags.interactive !== false,
        }),
      );
    });
}
