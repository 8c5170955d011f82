import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { errorMessage, isTroupeError, TroupeError } from '../errors.js';
import { resolveProgram } from '../tools/builtin/run-process.js';
import { bwrapArgs, programMount, requireSandbox } from '../tools/os-sandbox.js';
import { existingProtectedPaths } from '../tools/protected-paths.js';
import { scrubEnv } from '../tools/scrub-env.js';
import type { PermissionTier } from '../tools/tool.js';
import {
  expandEnv,
  isStdioServer,
  type McpHttpServer,
  type McpServerConfig,
  type McpStdioServer,
} from './config.js';
import type { McpCallResult, McpToolInfo } from './mcp-tool.js';

/** Where and how a connection starts its server. */
export interface McpConnectionOptions {
  /** The server's name in the config. */
  name: string;
  server: McpServerConfig;
  /** Absolute workspace path: a sandboxed stdio server may write only here. */
  workspace: string;
  grants: readonly PermissionTier[];
  /** The environment `${VAR}` in the config expands from; a stdio server gets a scrubbed copy. */
  env: NodeJS.ProcessEnv;
  /** Start stdio servers without bubblewrap (the run's `--unsafe-no-sandbox`). */
  unsafeNoSandbox?: boolean | undefined;
  /** First restart delay, doubled per restart (default 200 ms). */
  backoffMs?: number | undefined;
  /** Longest restart delay (default 10,000 ms). */
  maxBackoffMs?: number | undefined;
  /** Restarts within `periodMs` before the server is given up (default 5 within 60,000 ms). */
  maxRestarts?: number | undefined;
  periodMs?: number | undefined;
}

const DEFAULT_CALL_TIMEOUT_MS = 60_000;
const STDERR_TAIL_CHARS = 2_000;
const CLIENT_INFO = { name: 'troupe', version: '0.1.0' };

/**
 * One MCP server, as one client: started once, its tool list kept current
 * (tools/list_changed), restarted with backoff when it dies (calls in flight
 * get error results; calls that arrive during the restart wait for it), and
 * given up after too many restarts in a period, as a supervisor does.
 */
export class McpConnection {
  readonly name: string;
  readonly #options: McpConnectionOptions;
  #client: Client | undefined;
  #tools: McpToolInfo[] = [];
  // The current (re)connect attempt; calls wait on it.
  #ready: Promise<void> | undefined;
  #closed = false;
  #failure: TroupeError | undefined;
  #restarts: number[] = [];
  #stderr = '';
  readonly #listeners = new Set<() => void>();
  readonly #stop = new AbortController();

  constructor(options: McpConnectionOptions) {
    this.name = options.name;
    this.#options = options;
  }

  /** The server's tools, as last listed. */
  get tools(): readonly McpToolInfo[] {
    return this.#tools;
  }

  /** Starts the server once; later calls return the same promise. Rejects with `mcp.unavailable`. */
  start(): Promise<void> {
    this.#ready ??= this.#connect();
    return this.#ready;
  }

  /** Calls `listener` after each change of the tool list; returns the unsubscribe function. */
  onToolsChanged(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Calls a tool. Rejects with a TroupeError the registry turns into an error result. */
  async call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallResult> {
    await this.start();
    if (this.#client === undefined) await this.#ready;
    const client = this.#client;
    if (this.#closed)
      throw new TroupeError('runtime.closed', `MCP server "${this.name}" was closed.`);
    if (client === undefined) {
      throw (
        this.#failure ??
        new TroupeError('mcp.unavailable', `MCP server "${this.name}" is not connected.`)
      );
    }
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: this.#options.server.troupe?.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
      })) as McpCallResult;
    } catch (error) {
      if (signal.aborted) throw error;
      if (this.#client !== client) {
        throw new TroupeError(
          'mcp.unavailable',
          `MCP server "${this.name}" stopped during the call to ${tool} (${errorMessage(error)})${this.#stderrNote()}; it is being restarted, so the call may be tried again.`,
        );
      }
      throw new TroupeError(
        'tool.failed',
        `MCP server "${this.name}": ${tool} failed: ${errorMessage(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /** Stops the server (and any restart); idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop.abort();
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    let client: Client | undefined;
    try {
      const transport = await this.#transport();
      // Loaded on first use: every worker thread imports this module, few start a server.
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      client = new Client(CLIENT_INFO, {
        listChanged: {
          tools: { autoRefresh: false, debounceMs: 0, onChanged: () => void this.#refresh(client) },
        },
      });
      const current = client;
      client.onclose = () => this.#lost(current);
      await client.connect(transport, { signal: this.#stop.signal });
      if (this.#closed) {
        await client.close();
        return;
      }
      this.#client = client;
      this.#failure = undefined;
      await this.#refresh(client);
    } catch (error) {
      await client?.close().catch(() => undefined);
      if (this.#closed) return;
      const failure = isTroupeError(error)
        ? error
        : new TroupeError(
            'mcp.unavailable',
            `MCP server "${this.name}" could not start: ${errorMessage(error)}${this.#stderrNote()}. Check its entry in the MCP config (run the command by hand to see why).`,
            { cause: error },
          );
      this.#failure = failure;
      throw failure;
    }
  }

  async #refresh(client: Client | undefined): Promise<void> {
    if (client === undefined || client !== this.#client) return;
    try {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor });
        tools.push(...(page.tools as McpToolInfo[]));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      if (client !== this.#client) return;
      this.#tools = tools;
    } catch {
      // A failed listing keeps the last list; a dead server is handled by #lost.
      return;
    }
    for (const listener of this.#listeners) listener();
  }

  // The transport closed: by us (close or a replaced client) or because the server died.
  #lost(client: Client): void {
    if (this.#closed || client !== this.#client) return;
    this.#client = undefined;
    this.#lose();
  }

  #lose(): void {
    const now = Date.now();
    const period = this.#options.periodMs ?? 60_000;
    this.#restarts = [...this.#restarts.filter((at) => now - at < period), now];
    const maxRestarts = this.#options.maxRestarts ?? 5;
    if (this.#restarts.length > maxRestarts) {
      this.#failure = new TroupeError(
        'mcp.unavailable',
        `MCP server "${this.name}" stopped ${this.#restarts.length} times within ${period} ms and was given up${this.#stderrNote()}. Do the task without its tools.`,
      );
      this.#ready = Promise.reject(this.#failure);
      this.#ready.catch(() => undefined);
      return;
    }
    const delay = Math.min(
      (this.#options.backoffMs ?? 200) * 2 ** (this.#restarts.length - 1),
      this.#options.maxBackoffMs ?? 10_000,
    );
    this.#ready = sleep(delay, undefined, { signal: this.#stop.signal, ref: false }).then(
      () =>
        this.#connect().catch((error: unknown) => {
          // A restart that fails counts as one more loss; the calls waiting on it get the error.
          if (!this.#closed) this.#lose();
          throw error;
        }),
      () => undefined,
    );
    this.#ready.catch(() => undefined);
  }

  async #transport(): Promise<Transport> {
    const server = this.#options.server;
    return isStdioServer(server) ? this.#stdio(server) : this.#http(server);
  }

  async #http(server: McpHttpServer): Promise<Transport> {
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    const where = `MCP server "${this.name}"`;
    const env = this.#options.env;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(server.headers ?? {})) {
      headers[name] = expandEnv(value, env, `${where} header ${name}`);
    }
    return new StreamableHTTPClientTransport(new URL(expandEnv(server.url, env, `${where} url`)), {
      requestInit: { headers },
    });
  }

  async #stdio(server: McpStdioServer): Promise<Transport> {
    const where = `MCP server "${this.name}"`;
    const { env: base, workspace } = this.#options;
    const env: Record<string, string> = { ...scrubEnv(base, { set: { TMPDIR: '/tmp' } }) };
    // The config's own env is the user's explicit choice (often a key for that server), so it passes.
    for (const [name, value] of Object.entries(server.env ?? {})) {
      env[name] = expandEnv(value, base, `${where} env ${name}`);
    }
    const args = (server.args ?? []).map((arg) => expandEnv(arg, base, `${where} args`));
    const cwd = path.resolve(workspace, server.cwd ?? '.');
    const command = expandEnv(server.command, base, `${where} command`);
    const program = command.includes('/')
      ? path.resolve(cwd, command)
      : resolveProgram(command, env, workspace);
    if (program === undefined) {
      throw new TroupeError(
        'mcp.unavailable',
        `${where} could not start: "${command}" was not found on PATH. Install it or give an absolute path in the MCP config.`,
      );
    }
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    let transport: StdioClientTransport;
    if (this.#options.unsafeNoSandbox === true) {
      transport = new StdioClientTransport({ command: program, args, env, cwd, stderr: 'pipe' });
    } else {
      const sandbox = await requireSandbox(where);
      const real = realpathSync(workspace);
      const programFolder = programMount(program);
      transport = new StdioClientTransport({
        command: sandbox.bwrapPath,
        // A long-lived server: the filesystem view of the exec tools, its protected paths
        // read-only, but the host's network when granted and no CPU-time limit (SECURITY.md).
        args: bwrapArgs({
          program,
          args,
          workspace: real,
          cwd,
          env,
          writable: [real],
          readOnlyOver: existingProtectedPaths(real),
          readOnly: [
            ...(programFolder === undefined ? [] : [programFolder]),
            ...configuredFolders(args, real),
          ],
          shareNetwork: this.#options.grants.includes('network'),
        }),
        env,
        cwd,
        stderr: 'pipe',
      });
    }
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    return transport;
  }

  #stderrNote(): string {
    const tail = this.#stderr.trim();
    return tail === '' ? '' : `; its stderr ends: ${tail.slice(-500)}`;
  }
}

/**
 * Folders outside the workspace that a server's configured arguments name
 * (the user's own config, so trusted): an existing absolute path is mounted
 * read-only in the sandbox, from its enclosing node_modules when it lies in
 * one (so its dependencies resolve), else its project (see projectOf).
 */
function configuredFolders(args: readonly string[], workspace: string): string[] {
  const folders: string[] = [];
  for (const arg of args) {
    if (!path.isAbsolute(arg) || !existsSync(arg)) continue;
    const real = realpathSync(arg);
    if (real === workspace || real.startsWith(`${workspace}${path.sep}`)) continue;
    const parts = real.split(path.sep);
    const at = parts.indexOf('node_modules');
    folders.push(at > 0 ? parts.slice(0, at + 1).join(path.sep) : projectOf(real));
  }
  return folders;
}

/**
 * The nearest folder above a script that has a `node_modules`, where Node
 * resolves the script's imports (a server written in the user's project);
 * the script's own folder when there is none. Without it a project the
 * sandbox masks (one under /tmp) would be invisible to its own server.
 */
function projectOf(file: string): string {
  const own = path.dirname(file);
  for (let folder = own; ; folder = path.dirname(folder)) {
    if (existsSync(path.join(folder, 'node_modules'))) return folder;
    if (path.dirname(folder) === folder) return own;
  }
}
