import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { z } from 'zod';
import { Agent } from '../../agent/agent.js';
import { compressionFor } from '../../agent/history.js';
import { errorMessage, TroupeError } from '../../errors.js';
import { EventBus } from '../../events/bus.js';
import { attachMcpTools } from '../../mcp/agent-tools.js';
import { loadMcpConfig } from '../../mcp/config.js';
import { createModel, describeModel, type ModelSpec } from '../../model/model.js';
import {
  addUsage,
  emptyUsage,
  type Message,
  MessageSchema,
  totalTokens,
} from '../../model/types.js';
import { chatLayout } from '../../render/chat-layout.js';
import { formatTokens } from '../../render/run-state.js';
import { createToolPool } from '../../runtime/pool-transport.js';
import { toolsOnPool } from '../../runtime/pooled-tools.js';
import {
  BUILTIN_TOOL_TIERS,
  builtinToolNames,
  createBuiltinRegistry,
} from '../../tools/catalogue.js';
import { DEFAULT_GRANTS } from '../../tools/permissions.js';
import type { ApprovalRequest, PermissionTier } from '../../tools/tool.js';
import { loadToolModules } from '../../tools/tool-modules.js';
import { createRunId } from '../../util/ids.js';
import { createRedactor } from '../../util/redact.js';
import { captureWarnings } from '../../util/warnings.js';
import { askPaged, showControls } from '../approve.js';
import { ChatSession, chatSessionsDir } from '../chat-session.js';
import { type CliIo, EXIT, exitWith } from '../context.js';
import { chatHistoryPath, Repl, type ReplHandlers } from '../repl.js';
import {
  addCompressionOptions,
  addSandboxOptions,
  type CompressionFlags,
  collect,
  compressionSettingOf,
  loadToolFlags,
  type ProviderFlags,
  parseAllow,
  parsePositiveInteger,
  resolveFolder,
  resolveModelSpec,
  type SandboxFlags,
  sandboxPolicyOf,
  THINKING_FLAG_HELP,
} from './options.js';

/** Chat grants no write by default: the agent would write straight into the workspace. */
export const CHAT_DEFAULT_GRANTS: readonly PermissionTier[] = DEFAULT_GRANTS.filter(
  (tier) => tier !== 'write',
);

const EXIT_WORDS = new Set(['exit', 'quit', ':q', '/exit', '/quit']);

interface ChatFlags extends ProviderFlags, SandboxFlags, CompressionFlags {
  workspace: string;
  allow?: PermissionTier[] | undefined;
  maxSteps?: number | undefined;
  approve?: boolean | undefined;
  unsafeNoSandbox?: boolean | undefined;
  mcp?: string | undefined;
  tools?: string[] | undefined;
  resume?: string | true | undefined;
}

/** Lines from stdin, one at a time, shared by the prompt loop and approval questions. */
class LineReader {
  readonly #lines: string[] = [];
  readonly #waiting: Array<(line: string | undefined) => void> = [];
  #closed = false;
  readonly #close: () => void;

  constructor(input: NodeJS.ReadableStream) {
    const reader = createInterface({ input, terminal: false, crlfDelay: Number.POSITIVE_INFINITY });
    reader.on('line', (line) => {
      const waiter = this.#waiting.shift();
      if (waiter === undefined) this.#lines.push(line);
      else waiter(line);
    });
    reader.on('close', () => this.#end());
    this.#close = () => reader.close();
  }

  /** The next line, or undefined at end of input. */
  next(): Promise<string | undefined> {
    const line = this.#lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  close(): void {
    this.#close();
    this.#end();
  }

  #end(): void {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0)) waiter(undefined);
  }
}

/** `troupe chat`: one agent with the built-in tools the granted tiers allow, history kept across turns. */
export function registerChatCommand(program: Command, io: CliIo): void {
  const command = program
    .command('chat')
    .description(
      'talk to one agent with the built-in tools the granted tiers allow; exit, quit, end of input or Ctrl-C leave',
    )
    .option(
      '--provider <name>',
      'openai, anthropic or offline (default: from ANTHROPIC_API_KEY, then OPENAI_API_KEY)',
    )
    .option('--model <name>', 'model name for the provider')
    .option('--base-url <url>', 'an OpenAI-compatible server (Ollama, vLLM, LM Studio…)')
    .option('--workspace <dir>', 'the folder file tools may read', '.')
    .option('--thinking [budget]', THINKING_FLAG_HELP)
    .option(
      '--allow <tiers>',
      `permission tiers to grant: read, write, exec, network or all (default ${CHAT_DEFAULT_GRANTS.join(',')})`,
      parseAllow,
    )
    .option('--max-steps <n>', 'model calls per turn (default 10)', parsePositiveInteger)
    .option('--approve', 'ask y/n before risky actions (writes, shell, python)')
    .option('--unsafe-no-sandbox', 'UNSAFE: run shell and python without the OS sandbox')
    .option('--mcp <file>', 'MCP servers (mcpServers JSON) whose tools the agent gets, as granted')
    .option(
      '--tools <module>',
      'an ES module exporting tools (made with defineTool) the agent gets; they run on a tool thread apart from the chat (repeatable)',
      collect,
    )
    .option(
      '--resume [id]',
      'continue a saved chat session with its history (default: the latest); an interrupted turn goes on without repeating finished calls',
    );
  addSandboxOptions(addCompressionOptions(command)).action(async (flags: ChatFlags) => {
    exitWith(await runChat(io, flags));
  });
}

async function runChat(io: CliIo, flags: ChatFlags): Promise<number> {
  const spec = resolveModelSpec(flags, io.env);
  // On by default for a model whose context window is known: a long session never outgrows it.
  const compression = compressionFor(compressionSettingOf(flags), spec);
  const cwd = io.cwd ?? process.cwd();
  const workspace = resolveFolder(cwd, flags.workspace, '--workspace');
  const grants = flags.allow ?? [...CHAT_DEFAULT_GRANTS];
  const sandbox = sandboxPolicyOf(flags);
  // --tools: the user's tools, checked before anything opens (a bad module is a usage error); they run on a tool thread.
  const modules = await loadToolFlags(cwd, flags.tools ?? []);
  const userTools = modules.paths.length === 0 ? [] : await loadToolModules(modules.paths);
  // report_progress speaks to a supervisor; in a chat the person reads the answer itself.
  const names = builtinToolNames.filter(
    (name) =>
      name !== 'report_progress' && BUILTIN_TOOL_TIERS[name].every((tier) => grants.includes(tier)),
  );
  const redact = createRedactor(io.env);
  const sessionsDir = chatSessionsDir(io.env);
  if (sessionsDir === undefined && flags.resume !== undefined) {
    throw new TroupeError(
      'usage.invalid_option',
      'troupe chat --resume needs HOME or XDG_STATE_HOME to find saved sessions; set one of them.',
    );
  }
  const session =
    sessionsDir === undefined
      ? undefined
      : ChatSession.open(sessionsDir, flags.resume === true ? 'latest' : flags.resume, redact);
  // On a terminal (stdin and stdout both TTYs) chat is a readline REPL; otherwise it reads lines.
  const repl =
    io.stdin?.isTTY === true && io.stdoutStream !== undefined && io.stdout.isTTY
      ? new Repl({
          input: io.stdin,
          output: io.stdoutStream,
          historyFile: chatHistoryPath(io.env),
        })
      : undefined;
  const out = (text: string): void => {
    if (repl !== undefined) repl.print(redact(text));
    else io.stdout.write(`${redact(text)}\n`);
  };
  if (flags.unsafeNoSandbox === true) {
    io.stderr.write('WARNING: --unsafe-no-sandbox: shell and python run WITHOUT the OS sandbox.\n');
  }

  const reader =
    io.stdin === undefined || repl !== undefined ? undefined : new LineReader(io.stdin);
  const interactive = io.stdin?.isTTY === true;
  const approve =
    flags.approve === true
      ? async (request: ApprovalRequest): Promise<boolean> => {
          if (repl !== undefined) {
            const answer = await repl.ask(`? ${request.tool}: ${request.summary}\n  Allow? [y/N] `);
            return /^\s*y(es)?\s*$/i.test(answer ?? '');
          }
          if (reader === undefined || !interactive) {
            io.stderr.write(
              `refused (no terminal to ask on): ${request.tool}: ${showControls(request.summary)}\n`,
            );
            return false;
          }
          return askPaged(
            request,
            (text) => io.stderr.write(text),
            () => reader.next(),
          );
        }
      : undefined;

  const mcp =
    flags.mcp === undefined
      ? undefined
      : await attachMcpTools(createBuiltinRegistry({ names }), 'chat', {
          servers: loadMcpConfig(resolve(cwd, flags.mcp)),
          workspace,
          grants,
          env: io.env,
          unsafeNoSandbox: flags.unsafeNoSandbox === true,
        });
  for (const note of mcp?.notes ?? []) io.stderr.write(`troupe: ${note}\n`);
  const runId = createRunId();
  const pool =
    userTools.length === 0
      ? undefined
      : createToolPool(runId, {
          model: spec,
          workspace,
          grants,
          toolModules: modules.paths,
          toolThreads: 1,
          env: io.env,
          ...(approve === undefined ? {} : { approve }),
          ...(flags.unsafeNoSandbox === true ? { unsafeNoSandbox: true } : {}),
          ...(sandbox === undefined ? {} : { sandbox }),
        });
  const close = async (): Promise<void> => {
    await mcp?.hub.close();
    await pool?.close();
    session?.close();
  };
  const builtins = mcp?.tools ?? createBuiltinRegistry({ names });
  let tools = builtins;
  try {
    if (pool !== undefined) tools = builtins.with(toolsOnPool(pool, userTools));
  } catch (error) {
    await close();
    throw error;
  }
  const bus = new EventBus();
  bus.onAny((event) => {
    for (const line of chatLayout(event)) out(line);
  });
  const agent = new Agent({
    name: 'chat',
    role: 'chat',
    runId,
    model: createModel(spec, io.env),
    tools,
    system: `You are a helpful assistant working in the user's workspace (${workspace}). Use your tools to look at files before you answer questions about them, and say so when you cannot find something. Be concise.`,
    maxSteps: flags.maxSteps ?? 10,
    compression,
    events: bus,
    ...(session === undefined ? {} : { journal: session.agentJournal }),
    toolContext: {
      workspace,
      grants,
      env: io.env,
      ...(approve === undefined ? {} : { approve }),
      ...(flags.unsafeNoSandbox === true ? { unsafeNoSandbox: true } : {}),
      ...(sandbox === undefined ? {} : { sandbox }),
    },
  });

  out(
    `troupe chat · ${describeModel(spec)} · workspace ${workspace}\ntools: ${tools.names.join(', ') || '(none)'} · ${repl === undefined ? 'type exit or quit to leave' : '/help for commands · Ctrl-C cancels a turn · Ctrl-D leaves'}`,
  );
  if (session !== undefined) {
    agent.resetHistory(session.history);
    for (const line of transcript(session.history)) out(line);
    out(
      `session ${session.id}${flags.resume === undefined ? '' : ' (resumed)'} · saved as it goes; continue it with troupe chat --resume ${session.id}`,
    );
  }
  if (repl !== undefined) {
    const releaseWarnings = captureWarnings((warning) => {
      out(`⚠ ${warning.message}`);
      return undefined;
    });
    const onInterrupt = (): void => repl.close();
    io.signal?.addEventListener('abort', onInterrupt, { once: true });
    try {
      const handlers = chatHandlers({
        agent,
        repl,
        bus,
        spec,
        cwd,
        redact,
        stderr: io.stderr,
        session,
      });
      if (session?.interrupted !== undefined) {
        out(`> ${session.interrupted}  (interrupted; going on)`);
        await handlers.turn(session.interrupted, new AbortController().signal);
      }
      await repl.run(handlers);
    } finally {
      io.signal?.removeEventListener('abort', onInterrupt);
      releaseWarnings();
      await close();
    }
    return EXIT.ok;
  }
  if (reader === undefined) {
    await close();
    return EXIT.ok;
  }
  const turn = new AbortController();
  const onInterrupt = (): void => {
    turn.abort(new Error('interrupted'));
    reader.close();
  };
  io.signal?.addEventListener('abort', onInterrupt, { once: true });
  // A library's warning shows as a ⚠ line (once, from the agent's event), not raw on the terminal.
  const releaseWarnings = captureWarnings((warning) => {
    out(`⚠ ${warning.message}`);
    return undefined;
  });
  let pending = session?.interrupted;
  if (pending !== undefined) out(`> ${pending}  (interrupted; going on)`);
  try {
    for (;;) {
      let input: string;
      if (pending !== undefined) {
        input = pending;
        pending = undefined;
      } else {
        if (interactive) io.stdout.write('> ');
        const line = await reader.next();
        if (line === undefined || turn.signal.aborted) break;
        input = line.trim();
        if (input === '') continue;
        if (EXIT_WORDS.has(input.toLowerCase())) break;
        session?.turnStarted(input);
      }
      try {
        const result = await agent
          .run(input, { signal: turn.signal })
          .finally(() => session?.saveHistory(agent.history));
        if (result.stopReason === 'cancelled') break;
        if (result.stopReason === 'error') {
          io.stderr.write(`error: ${redact(result.error?.message ?? 'the model call failed')}\n`);
          continue;
        }
        if (result.final !== '') out(result.final);
        if (result.stopReason !== 'final') {
          io.stderr.write(`(stopped: ${result.stopReason.replace('_', ' ')})\n`);
        }
      } catch (error) {
        io.stderr.write(`error: ${redact(errorMessage(error))}\n`);
      }
    }
  } finally {
    io.signal?.removeEventListener('abort', onInterrupt);
    releaseWarnings();
    reader.close();
    await close();
  }
  if (interactive) io.stdout.write('\n');
  return EXIT.ok;
}

/** The conversation so far as a person reads it: their inputs and the answers. */
function transcript(history: readonly Message[]): string[] {
  const lines: string[] = [];
  for (const message of history) {
    if (message.role === 'user') lines.push(`> ${message.content}`);
    else if (message.role === 'assistant' && message.content.trim() !== '') {
      lines.push(message.content);
    }
  }
  return lines;
}

/** The turn and the slash commands of the chat REPL. */
function chatHandlers(context: {
  agent: Agent;
  repl: Repl;
  bus: EventBus;
  spec: ModelSpec;
  cwd: string;
  redact: (text: string) => string;
  stderr: CliIo['stderr'];
  session: ChatSession | undefined;
}): ReplHandlers {
  const { agent, repl, redact } = context;
  let session = emptyUsage();
  let turnUsage = emptyUsage();
  let resuming = context.session?.interrupted !== undefined;
  context.bus.onAny((event) => {
    // A history summary's call costs tokens too (history.compressed carries its usage).
    const usage =
      event.type === 'model.response' || event.type === 'history.compressed'
        ? event.usage
        : undefined;
    if (usage === undefined) return;
    session = addUsage(session, usage);
    turnUsage = addUsage(turnUsage, usage);
  });
  const say = (text: string): void => repl.print(redact(text));
  const commands: Record<string, { help: string; run: (argument: string) => 'exit' | undefined }> =
    {
      help: {
        help: 'this list',
        run: () => {
          for (const [name, entry] of Object.entries(commands))
            say(`  /${name.padEnd(14)} ${entry.help}`);
          say(
            '  Ctrl-C cancels the running turn (twice leaves) · Ctrl-D leaves · ↑/↓ history · Ctrl-R search',
          );
          return undefined;
        },
      },
      clear: {
        help: 'forget the conversation so far',
        run: () => {
          agent.resetHistory();
          context.session?.saveHistory(agent.history);
          say('(conversation cleared)');
          return undefined;
        },
      },
      'save <file>': {
        help: 'save the conversation as JSON',
        run: (argument) => {
          if (argument === '') return void say('usage: /save <file>');
          const path = resolve(context.cwd, argument);
          writeFileSync(path, `${JSON.stringify(agent.history, null, 2)}\n`);
          say(`(saved ${agent.history.length} messages to ${path})`);
          return undefined;
        },
      },
      'load <file>': {
        help: 'continue a conversation saved with /save',
        run: (argument) => {
          if (argument === '') return void say('usage: /load <file>');
          const path = resolve(context.cwd, argument);
          try {
            const messages = z.array(MessageSchema).parse(JSON.parse(readFileSync(path, 'utf8')));
            agent.resetHistory(messages);
            context.session?.saveHistory(agent.history);
            say(`(loaded ${messages.length} messages from ${path})`);
          } catch (error) {
            say(`cannot load ${path}: ${errorMessage(error)} (it must be a file written by /save)`);
          }
          return undefined;
        },
      },
      model: {
        help: 'the model in use',
        run: () => void say(describeModel(context.spec)),
      },
      tokens: {
        help: 'tokens used in this session',
        run: () =>
          void say(
            `${formatTokens(totalTokens(session))} tokens this session (${formatTokens(session.inputTokens)} in, ${formatTokens(session.outputTokens)} out) · ${agent.history.length} messages in the conversation`,
          ),
      },
      exit: { help: 'leave (also /quit, exit, Ctrl-D)', run: () => 'exit' },
    };
  return {
    status: () => `${formatTokens(totalTokens(turnUsage))} tok`,
    command: (name, argument) => {
      if (name === 'quit') return 'exit';
      const entry = Object.entries(commands).find(([key]) => key.split(' ')[0] === name)?.[1];
      if (entry === undefined) {
        say(`Unknown command /${name}. /help lists the commands.`);
        return undefined;
      }
      return entry.run(argument);
    },
    turn: async (input, signal) => {
      turnUsage = emptyUsage();
      // The interrupted turn going on again (always the first) was noted when it first started.
      if (!resuming) context.session?.turnStarted(input);
      resuming = false;
      try {
        const result = await agent
          .run(input, { signal })
          .finally(() => context.session?.saveHistory(agent.history));
        if (result.stopReason === 'cancelled') return;
        if (result.stopReason === 'error') {
          say(`error: ${result.error?.message ?? 'the model call failed'}`);
          return;
        }
        if (result.final !== '') say(result.final);
        if (result.stopReason !== 'final') say(`(stopped: ${result.stopReason.replace('_', ' ')})`);
      } catch (error) {
        say(`error: ${errorMessage(error)}`);
      }
    },
  };
}
