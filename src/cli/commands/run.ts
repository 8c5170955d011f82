import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import type { CompressionSetting } from '../../agent/history.js';
import { errorMessage, isTroupeError } from '../../errors.js';
import { EventBus } from '../../events/bus.js';
import {
  type RunOutcome,
  type RunSession,
  resolveRun,
  type StartRunOptions,
  startRun,
} from '../../job/run-session.js';
import { loadMcpConfig, type McpServers, unreachableServers } from '../../mcp/config.js';
import { describeModel, type ModelSpec } from '../../model/model.js';
import type { LiveRenderer } from '../../render/live.js';
import type { AnyRole } from '../../roles/role.js';
import type { ModelPrice } from '../../runtime/budget/usage-ledger.js';
import {
  createNatsTransport,
  type NatsRunOptions,
  openNatsJournalMirror,
  restoreRunJournal,
} from '../../runtime/nats-setup.js';
import { DEFAULT_GRANTS, PERMISSION_TIERS } from '../../tools/permissions.js';
import type { SandboxPolicy } from '../../tools/sandbox-policy.js';
import type { ApprovalRequest, PermissionTier } from '../../tools/tool.js';
import { captureWarnings } from '../../util/warnings.js';
import { createTerminalApprover } from '../approve.js';
import {
  type CliIo,
  chooseOutputMode,
  createRenderer,
  EXIT,
  exitWith,
  type OutputMode,
  usageError,
} from '../context.js';
import { defaultOutDir, OUT_FLAG_HELP } from '../default-out.js';
import { displayPath } from '../display-path.js';
import { canReadKeys, readLiveKeys } from '../live-keys.js';
import { createPriceFunction, loadPriceTable } from '../prices.js';
import { OTEL_FLAG_HELP, startRunObservers } from './observe.js';
import {
  addCompressionOptions,
  addSandboxOptions,
  type CompressionFlags,
  checkRunRoles,
  collect,
  compressionSettingOf,
  loadRoles,
  loadToolFlags,
  type ProviderFlags,
  parseAllow,
  parseDuration,
  parsePositiveInteger,
  parseTokenCount,
  resolveFolder,
  resolveModelSpec,
  type SandboxFlags,
  sandboxPolicyOf,
  THINKING_FLAG_HELP,
} from './options.js';

/** Everything a job run needs, resolved from flags (run) or fixed (demo). */
export interface JobSettings {
  task: string | undefined;
  spec: ModelSpec;
  workspace: string;
  /** Absolute path of the folder holding run folders. */
  out: string;
  grants: readonly PermissionTier[];
  roles: readonly AnyRole[];
  threads?: number | undefined;
  maxSteps?: number | undefined;
  budgetTokens?: number | undefined;
  timeoutMs?: number | undefined;
  /** History compression (`--context-window`, `--compress-at`, `--no-compress`); default on for known models. */
  compression?: CompressionSetting | undefined;
  /** Resume this run id instead of starting a new run. */
  resume?: string | undefined;
  mode: OutputMode;
  approve: boolean;
  /** The environment models and tools see. */
  env: NodeJS.ProcessEnv;
  /** Run the sub-agents' shell and python without the OS sandbox (`--unsafe-no-sandbox`). */
  unsafeNoSandbox?: boolean | undefined;
  /** Limits, protected-path writes and egress domains (`--exec-limit`, `--allow-protected-writes`, `--allow-domain`). */
  sandbox?: SandboxPolicy | undefined;
  /** US dollars per million tokens by model name (`--prices`); cost shows where known. */
  prices?: Readonly<Record<string, ModelPrice>> | undefined;
  /** MCP servers by name (`--mcp <config.json>`). */
  mcp?: McpServers | undefined;
  /** Export OpenTelemetry spans while running (`--otel`). */
  otel?: boolean | undefined;
  /** Place sub-agents on NATS worker nodes at this URL (`--nats`) instead of local threads. */
  nats?: string | undefined;
  /** User tool modules (absolute paths, `--tools`): their tools run on the tool pool, for roles that name them. */
  toolModules?: readonly string[] | undefined;
  /** Read keys for the interactive live view when stdin is a terminal (default true; `--no-interactive`). */
  interactive?: boolean | undefined;
}

interface RunFlags extends ProviderFlags, SandboxFlags, CompressionFlags {
  roles?: string | undefined;
  threads?: number | undefined;
  maxSteps?: number | undefined;
  budget?: number | undefined;
  timeout?: number | undefined;
  workspace: string;
  allow?: PermissionTier[] | undefined;
  out: string;
  json?: boolean | undefined;
  quiet?: boolean | undefined;
  resume?: string | undefined;
  approve?: boolean | undefined;
  unsafeNoSandbox?: boolean | undefined;
  prices?: string | undefined;
  mcp?: string | undefined;
  otel?: boolean | undefined;
  nats?: string | undefined;
  interactive?: boolean | undefined;
  tools?: string[] | undefined;
}

/** Help of `--no-interactive` (run and demo). */
export const INTERACTIVE_FLAG_HELP =
  'do not read keys in the live view (by default, when stdin is a terminal: ↑↓ select an agent, Enter opens its transcript, f filters, c cancels it, q stops the run)';

/** `troupe run "<task>"`: a coordinator splits the task among sub-agents; watch it live. */
export function registerRunCommand(program: Command, io: CliIo): void {
  const command = program
    .command('run')
    .description('run a task: a coordinator splits it among sub-agents that work in parallel')
    .argument('[task]', 'what to do (optional with --resume: the original task is reused)')
    .option(
      '--provider <name>',
      'openai, anthropic or offline (default: from ANTHROPIC_API_KEY, then OPENAI_API_KEY)',
    )
    .option('--model <name>', 'model name for the provider')
    .option('--base-url <url>', 'an OpenAI-compatible server (Ollama, vLLM, LM Studio…)')
    .option('--thinking [budget]', THINKING_FLAG_HELP)
    .option('--roles <file>', 'an ES module exporting custom roles (made with defineRole)')
    .option(
      '--tools <module>',
      'an ES module exporting tools (made with defineTool) for the roles that name them; they run on a tool pool apart from the agents (repeatable)',
      collect,
    )
    .option(
      '--threads <n>',
      'the most worker threads for the agents (default: cores, at most 4; one starts, more while all are saturated)',
      parsePositiveInteger,
    )
    .option('--max-steps <n>', "the coordinator's model calls (default 20)", parsePositiveInteger)
    .option('--budget <tokens>', 'token budget for the whole run (e.g. 200k)', parseTokenCount)
    .option('--timeout <duration>', 'wall-time limit for the run (90, 90s, 10m, 1h)', parseDuration)
    .option('--workspace <dir>', 'the folder file tools may read', '.')
    .option(
      '--allow <tiers>',
      `permission tiers to grant: read, write, exec, network or all (default ${DEFAULT_GRANTS.join(',')})`,
      parseAllow,
    )
    .option('--out <dir>', OUT_FLAG_HELP, defaultOutDir(io.env))
    .option(
      '--prices <file>',
      'a JSON price table, { "<model>": { "inputPerMTok": n, "outputPerMTok": n } } in USD, to show costs',
    )
    .option(
      '--mcp <file>',
      'MCP servers in the mcpServers JSON format; roles use those that name them or that list the role in "troupe": { "roles": [...] }',
    )
    .option('--json', 'print every event as NDJSON on stdout (progress goes to stderr)')
    .option('--quiet', 'plain lines instead of the live view')
    .option('--no-interactive', INTERACTIVE_FLAG_HELP)
    .option(
      '--resume <runId>',
      'continue an interrupted run: replay its journal (no finished model call or tool call is paid for twice) and reuse the results of sub-agents that finished',
    )
    .option(
      '--approve',
      'ask y/n on the terminal before risky actions (refused without a terminal)',
    )
    .option('--otel', OTEL_FLAG_HELP)
    .option(
      '--nats <url>',
      'place the sub-agents on worker nodes (troupe worker --nats <url>) through NATS JetStream',
    )
    .option(
      '--unsafe-no-sandbox',
      "run the sub-agents' shell and python WITHOUT the OS sandbox (bubblewrap); only where none can start",
    );
  addSandboxOptions(addCompressionOptions(command)).action(
    async (task: string | undefined, flags: RunFlags) => {
      const cwd = io.cwd ?? process.cwd();
      if (task === undefined && flags.resume === undefined) {
        throw usageError(
          'troupe run needs a task, e.g. troupe run "Compare the reports in docs/" (or --resume <runId>).',
        );
      }
      if (task !== undefined && task.trim() === '') throw usageError('The task is empty.');
      const tools = await loadToolFlags(cwd, flags.tools ?? []);
      const roles = flags.roles === undefined ? [] : await loadRoles(cwd, flags.roles);
      // A tool no role names is never called: say so before the run, not after.
      const named = new Set<string>(roles.flatMap((role) => role.tools));
      for (const [file, names] of tools.names) {
        const unused = names.filter((name) => !named.has(name));
        if (unused.length === 0) continue;
        io.stderr.write(
          `troupe: --tools ${file}: ${unused.map((name) => `"${name}"`).join(', ')} ${unused.length === 1 ? 'is' : 'are'} named by no role, so no agent can call ${unused.length === 1 ? 'it' : 'them'}; list ${unused.length === 1 ? 'it' : 'them'} in a role's tools (--roles <file>).\n`,
        );
      }
      const settings: JobSettings = {
        task,
        spec: resolveModelSpec(flags, io.env),
        workspace: resolveFolder(cwd, flags.workspace, '--workspace'),
        out: resolve(cwd, flags.out),
        grants: flags.allow ?? [...DEFAULT_GRANTS],
        roles,
        toolModules: tools.paths,
        threads: flags.threads,
        maxSteps: flags.maxSteps,
        budgetTokens: flags.budget,
        timeoutMs: flags.timeout,
        compression: compressionSettingOf(flags),
        resume: flags.resume,
        mode: chooseOutputMode(io, flags),
        approve: flags.approve === true,
        env: io.env,
        unsafeNoSandbox: flags.unsafeNoSandbox === true,
        sandbox: sandboxPolicyOf(flags),
        prices: flags.prices === undefined ? undefined : loadPriceTable(cwd, flags.prices),
        mcp: flags.mcp === undefined ? undefined : loadMcpConfig(resolve(cwd, flags.mcp)),
        otel: flags.otel === true,
        nats: flags.nats,
        interactive: flags.interactive !== false,
      };
      // Role mistakes are usage errors here, before the run starts and before any model call.
      checkRunRoles(settings, tools.tools);
      exitWith(await executeJob(io, settings));
    },
  );
}

// What became of the agents, as counted from their agent.finished events: "51 agents cancelled, 2 completed".
function describeEnds(ends: ReadonlyMap<string, string>): string {
  const counts = new Map<string, number>();
  for (const status of ends.values()) counts.set(status, (counts.get(status) ?? 0) + 1);
  const order = ['cancelled', 'completed', 'failed', 'timed_out'];
  const parts = [...counts.entries()]
    .sort(([a], [b]) => order.indexOf(a) - order.indexOf(b))
    .map(([status, count], index) =>
      index === 0
        ? `${count} agent${count === 1 ? '' : 's'} ${status.replace('_', ' ')}`
        : `${count} ${status.replace('_', ' ')}`,
    );
  return parts.length === 0 ? 'no agent had started' : parts.join(', ');
}

/** The runtime options of a job run from its settings: what `startRun` passes on to the Runtime. */
export function jobRuntimeParts(
  settings: JobSettings,
  approve?: ((request: ApprovalRequest) => Promise<boolean>) | undefined,
): Omit<StartRunOptions, 'out' | 'task'> {
  return {
    model: settings.spec,
    roles: [...settings.roles],
    ...(settings.threads === undefined ? {} : { threads: settings.threads }),
    workspace: settings.workspace,
    grants: [...settings.grants],
    ...(settings.budgetTokens === undefined && settings.timeoutMs === undefined
      ? {}
      : {
          budget: {
            ...(settings.budgetTokens === undefined ? {} : { tokens: settings.budgetTokens }),
            ...(settings.timeoutMs === undefined ? {} : { timeMs: settings.timeoutMs }),
          },
        }),
    ...(settings.compression === undefined ? {} : { compression: settings.compression }),
    ...(approve === undefined ? {} : { approve }),
    env: settings.env,
    ...(settings.unsafeNoSandbox === true ? { unsafeNoSandbox: true } : {}),
    ...(settings.sandbox === undefined ? {} : { sandbox: settings.sandbox }),
    ...(settings.prices === undefined ? {} : { prices: settings.prices }),
    ...(settings.mcp === undefined ? {} : { mcp: settings.mcp }),
    ...(settings.toolModules === undefined || settings.toolModules.length === 0
      ? {}
      : { toolModules: [...settings.toolModules] }),
  };
}

/**
 * Runs the research job through `startRun` and shows it: renders every
 * event, prints where the trace, report and answer are, and returns the exit
 * code (0 completed, 3 partial, 4 the run's files could not be written,
 * 130 interrupted, 1 otherwise: failed, budget, timed out).
 */
export async function executeJob(io: CliIo, settings: JobSettings): Promise<number> {
  const cwd = io.cwd ?? process.cwd();
  // Footer paths: relative inside the working folder, else with ~ for the home folder.
  const show = (path: string): string => displayPath(path, cwd, io.env);
  if (settings.task === undefined && settings.resume === undefined) {
    throw usageError('troupe run needs a task.');
  }
  // Resumed on a machine that has no folder for the run: its journal comes from its NATS mirror.
  if (settings.resume !== undefined && settings.nats !== undefined) {
    await restoreRunJournal(settings.resume, join(settings.out, settings.resume, 'journal.jsonl'), {
      url: settings.nats,
      env: io.env,
      ...natsTimings(io.env),
    });
  }
  // Checked before anything is shown or written: a bad --resume is a usage error.
  resolveRun({ out: settings.out, resume: settings.resume, task: settings.task });
  if (settings.unsafeNoSandbox === true) {
    io.stderr.write(
      `WARNING: --unsafe-no-sandbox: the sub-agents' shell and python run WITHOUT the OS sandbox (bubblewrap), with your user's access to this machine.${settings.grants.includes('exec') ? '' : ' (exec is not granted, so none runs in this run.)'}\n`,
    );
  }

  for (const name of unreachableServers(settings.mcp ?? {}, settings.roles)) {
    io.stderr.write(
      `troupe: MCP server "${name}" is named by no role, so no agent gets its tools; add "troupe": { "roles": ["researcher"] } to its entry, or name it in a role's mcp.\n`,
    );
  }
  const bus = new EventBus();
  const price = settings.prices === undefined ? undefined : createPriceFunction(settings.prices);
  const observers = await startRunObservers(io, { otel: settings.otel, price }, bus);
  // The interactive view's c and q act on the run's runtime and on the run, made below.
  let session: RunSession | undefined;
  const interactive = settings.mode === 'live' && settings.interactive !== false && canReadKeys(io);
  const renderer = await createRenderer(settings.mode, io, {
    model: describeModel(settings.spec),
    price,
    actions: interactive
      ? {
          stop: () => (io.interrupt ?? onInterrupt)(),
          cancel: (agentId) => session?.runtime.cancel(agentId, 'cancelled from the live view (c)'),
        }
      : undefined,
  });
  bus.onAny(
    renderer.writesJson === true
      ? (event) => renderer.handle(event, bus.json(event))
      : (event) => renderer.handle(event),
  );
  const ends = new Map<string, string>();
  bus.on('agent.finished', (event) => ends.set(event.agentId, event.status));
  const spawnedRoles = new Set<string>();
  bus.on('agent.spawned', (event) => {
    if (event.role !== undefined) spawnedRoles.add(event.role);
  });
  const progress = settings.mode === 'json' ? io.stderr : io.stdout;

  const interrupt = new AbortController();
  function onInterrupt(): void {
    interrupt.abort(new Error('interrupted (Ctrl-C)'));
  }
  if (io.signal?.aborted === true) onInterrupt();
  io.signal?.addEventListener('abort', onInterrupt, { once: true });
  // The live mode's renderer is the LiveRenderer.
  const live = settings.mode === 'live' ? (renderer as LiveRenderer) : undefined;
  const keys = live?.interactive === true ? readLiveKeys(io, (key) => live.press(key)) : undefined;
  const approve = settings.approve
    ? createTerminalApprover(io, {
        pause: () => {
          keys?.suspend();
          live?.pause();
        },
        resume: () => {
          live?.resume();
          keys?.resume();
        },
      })
    : undefined;
  try {
    session = await startRun({
      ...jobRuntimeParts(settings, approve),
      task: settings.task,
      out: settings.out,
      resume: settings.resume,
      bus,
      signal: interrupt.signal,
      maxSteps: settings.maxSteps,
      ...(settings.nats === undefined
        ? {}
        : {
            // The journal is mirrored in JetStream too: a resume on another machine replays it.
            mirrorJournal: ({ runId, path }) =>
              openNatsJournalMirror(runId, path, {
                url: settings.nats as string,
                env: io.env,
                ...natsTimings(io.env),
              }),
            transport: ({ runId, options, resumed }) =>
              createNatsTransport(runId, options, {
                url: settings.nats as string,
                env: io.env,
                resume: resumed,
                ...natsTimings(io.env),
              }),
          }),
    });
  } catch (error) {
    io.signal?.removeEventListener('abort', onInterrupt);
    keys?.close();
    renderer.finish();
    throw error;
  }
  const { runId, paths } = session;
  const tracePath = paths.trace;
  if (settings.mode === 'json') {
    io.stderr.write(
      `troupe: run ${runId}${session.resumed ? ' (resumed)' : ''} started; trace ${show(tracePath)}\n`,
    );
  }
  renderer.start?.();

  // Nothing but the renderer writes to the terminal during the run: a warning
  // raised in an agent's work is its event; any other is held and printed after.
  const heldWarnings = new Set<string>();
  const releaseWarnings = captureWarnings((warning) => {
    heldWarnings.add(warning.message);
    return undefined;
  });
  let outcome: RunOutcome;
  try {
    outcome = await session.done;
  } finally {
    io.signal?.removeEventListener('abort', onInterrupt);
    keys?.close();
    renderer.finish();
    releaseWarnings();
  }
  for (const message of heldWarnings) io.stderr.write(`warning: ${message}\n`);

  const final = outcome.result?.final ?? '';
  const footer = [
    `trace    ${show(tracePath)}`,
    ...(existsSync(paths.report) ? [`report   ${show(paths.report)}`] : []),
    ...(final.trim() !== '' ? [`answer   ${show(paths.answer)}`] : []),
    ...(await observers.finish(tracePath, (path) => show(path))),
  ];
  progress.write(`\n${footer.join('\n')}\n`);
  // After the run, not during it (the live view owns the terminal then): how to give adapted roles their tools back.
  for (const adaptation of session.runtime.roleAdaptations) {
    if (!spawnedRoles.has(adaptation.role)) continue;
    const fix = PERMISSION_TIERS.filter(
      (tier) => settings.grants.includes(tier) || adaptation.tiers.includes(tier),
    );
    io.stderr.write(
      `troupe: role "${adaptation.role}" ran without ${adaptation.dropped.join(', ')}: the ${adaptation.tiers.join(', ')} permission${adaptation.tiers.length === 1 ? ' is' : 's are'} not granted; rerun with --allow ${fix.join(',')} to give ${adaptation.dropped.length === 1 ? 'it' : 'them'} back.\n`,
    );
  }
  const resume = `troupe run --resume ${runId}${resolve(settings.out) === defaultOutDir(io.env) ? '' : ` --out ${show(settings.out)}`}`;
  if (interrupt.signal.aborted) {
    io.stderr.write(
      `\nInterrupted: ${describeEnds(ends)}; the trace was flushed to ${show(tracePath)}.\nResume with: ${resume}\n`,
    );
    return EXIT.interrupted;
  }
  if (isTroupeError(outcome.error, 'io.write_failed')) {
    io.stderr.write(
      `\nerror: ${outcome.error.message}; the run stopped.\nFree some space, then resume with: ${resume}\n`,
    );
    return EXIT.storage;
  }
  if (outcome.error !== undefined) {
    io.stderr.write(`error: ${errorMessage(outcome.error)}\n`);
    return isTroupeError(outcome.error) && outcome.error.code.startsWith('usage.')
      ? EXIT.usage
      : EXIT.failed;
  }
  const status = outcome.result?.status;
  return status === 'completed' ? EXIT.ok : status === 'partial' ? EXIT.partial : EXIT.failed;
}

// Timings of a run on worker nodes, from the environment (tests and operators shorten them).
function natsTimings(
  env: NodeJS.ProcessEnv,
): Pick<NatsRunOptions, 'deadAfterMs' | 'placeTimeoutMs' | 'reconnectForMs'> {
  const read = (name: string): number | undefined => {
    const text = env[name];
    if (text === undefined || text === '') return undefined;
    const value = Number(text);
    if (!Number.isInteger(value) || value <= 0) {
      throw usageError(`${name} must be a positive whole number of milliseconds, got "${text}".`);
    }
    return value;
  };
  const timings: Pick<NatsRunOptions, 'deadAfterMs' | 'placeTimeoutMs' | 'reconnectForMs'> = {};
  const deadAfterMs = read('TROUPE_NATS_DEAD_AFTER_MS');
  const placeTimeoutMs = read('TROUPE_NATS_PLACE_TIMEOUT_MS');
  const reconnectForMs = read('TROUPE_NATS_RECONNECT_FOR_MS');
  if (deadAfterMs !== undefined) timings.deadAfterMs = deadAfterMs;
  if (placeTimeoutMs !== undefined) timings.placeTimeoutMs = placeTimeoutMs;
  if (reconnectForMs !== undefined) timings.reconnectForMs = reconnectForMs;
  return timings;
}
