import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Command } from 'commander';
import { errorMessage } from '../../errors.js';
import { loadMcpConfig } from '../../mcp/config.js';
import { describeModel } from '../../model/model.js';
import { builtinRoles } from '../../roles/builtin.js';
import type { AnyRole } from '../../roles/role.js';
import { DEFAULT_GRANTS } from '../../tools/permissions.js';
import type { PermissionTier } from '../../tools/tool.js';
import { type CliIo, EXIT, exitWith } from '../context.js';
import { defaultOutDir, OUT_FLAG_HELP } from '../default-out.js';
import { JobBoard } from '../mcp-jobs.js';
import {
  loadRoles,
  type ProviderFlags,
  parseAllow,
  parsePositiveInteger,
  resolveFolder,
  resolveModelSpec,
} from './options.js';
import type { JobSettings } from './run.js';

interface McpFlags extends ProviderFlags {
  roles?: string | undefined;
  threads?: number | undefined;
  maxSteps?: number | undefined;
  workspace: string;
  allow?: PermissionTier[] | undefined;
  out: string;
  mcp?: string | undefined;
  unsafeNoSandbox?: boolean | undefined;
  port?: number | undefined;
  host: string;
}

/** `troupe mcp`: troupe as an MCP server (run_job, run_status, cancel_run, list_roles). */
export function registerMcpCommand(program: Command, io: CliIo): void {
  program
    .command('mcp')
    .description(
      'serve troupe to MCP clients (Claude Code, Cursor, …) over stdio, or Streamable HTTP with --port: run_job, run_status, cancel_run, list_roles',
    )
    .option(
      '--provider <name>',
      'openai, anthropic or offline (default: from ANTHROPIC_API_KEY, then OPENAI_API_KEY)',
    )
    .option('--model <name>', 'model name for the provider')
    .option('--base-url <url>', 'an OpenAI-compatible server (Ollama, vLLM, LM Studio…)')
    .option('--roles <file>', 'an ES module exporting custom roles (made with defineRole)')
    .option(
      '--threads <n>',
      'the most worker threads per run for the agents (default: cores, at most 4; one starts, more while all are saturated)',
      parsePositiveInteger,
    )
    .option('--max-steps <n>', "the coordinator's model calls (default 20)", parsePositiveInteger)
    .option('--workspace <dir>', 'the folder file tools may read', '.')
    .option(
      '--allow <tiers>',
      `permission tiers to grant: read, write, exec, network or all (default ${DEFAULT_GRANTS.join(',')})`,
      parseAllow,
    )
    .option('--out <dir>', OUT_FLAG_HELP, defaultOutDir(io.env))
    .option('--mcp <file>', 'MCP servers (mcpServers JSON) for the roles that name them')
    .option(
      '--unsafe-no-sandbox',
      "run the sub-agents' shell and python WITHOUT the OS sandbox (bubblewrap)",
    )
    .option(
      '--port <n>',
      'serve Streamable HTTP on this port (at /mcp) instead of stdio',
      parsePositiveInteger,
    )
    .option('--host <address>', 'the address --port listens on', '127.0.0.1')
    .action(async (flags: McpFlags) => {
      const cwd = io.cwd ?? process.cwd();
      const custom = flags.roles === undefined ? [] : await loadRoles(cwd, flags.roles);
      const settings: JobSettings = {
        task: undefined,
        spec: resolveModelSpec(flags, io.env),
        workspace: resolveFolder(cwd, flags.workspace, '--workspace'),
        out: resolve(cwd, flags.out),
        grants: flags.allow ?? [...DEFAULT_GRANTS],
        roles: custom,
        threads: flags.threads,
        maxSteps: flags.maxSteps,
        mode: 'json',
        approve: false,
        env: io.env,
        unsafeNoSandbox: flags.unsafeNoSandbox === true,
        mcp: flags.mcp === undefined ? undefined : loadMcpConfig(resolve(cwd, flags.mcp)),
      };
      const customNames = new Set(custom.map((role) => role.name));
      const roles: AnyRole[] = [
        ...builtinRoles().filter((role) => !customNames.has(role.name)),
        ...custom,
      ];
      exitWith(await serve(io, settings, roles, flags));
    });
}

async function serve(
  io: CliIo,
  settings: JobSettings,
  roles: readonly AnyRole[],
  flags: McpFlags,
): Promise<number> {
  // The MCP SDK's server side loads only for this command, not on every troupe start.
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const { createTroupeMcpServer } = await import('../mcp-server.js');
  const board = new JobBoard(settings);
  const stopped = new Promise<void>((resolveStopped) => {
    if (io.signal?.aborted === true) resolveStopped();
    io.signal?.addEventListener('abort', () => resolveStopped(), { once: true });
  });
  const where = `model ${describeModel(settings.spec)}, workspace ${settings.workspace}, runs in ${settings.out}`;
  try {
    if (flags.port === undefined) {
      // stdout carries the protocol: everything else goes to stderr.
      const server = createTroupeMcpServer(board, roles);
      const closed = new Promise<void>((resolveClosed) => {
        server.server.onclose = () => resolveClosed();
        // The SDK's stdio transport does not watch for the end of input: a client that closes it is gone.
        process.stdin.once('end', () => resolveClosed());
      });
      await server.connect(new StdioServerTransport());
      io.stderr.write(`troupe mcp: serving over stdio (${where})\n`);
      await Promise.race([closed, stopped]);
      await server.close();
    } else {
      const { StreamableHTTPServerTransport } = await import(
        '@modelcontextprotocol/sdk/server/streamableHttp.js'
      );
      const http = createServer((request, response) => {
        if (new URL(request.url ?? '/', 'http://localhost').pathname !== '/mcp') {
          response
            .writeHead(404, { 'content-type': 'text/plain' })
            .end('troupe mcp serves at /mcp\n');
          return;
        }
        const server = createTroupeMcpServer(board, roles);
        const transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: undefined,
          enableDnsRebindingProtection: true,
          allowedHosts: [
            `${flags.host}:${flags.port}`,
            `localhost:${flags.port}`,
            `127.0.0.1:${flags.port}`,
          ],
        });
        void handleHttp(server, transport, request, response);
      });
      await new Promise<void>((resolveListening, reject) => {
        http.once('error', reject);
        http.listen(flags.port, flags.host, () => resolveListening());
      });
      io.stderr.write(
        `troupe mcp: serving Streamable HTTP at http://${flags.host}:${flags.port}/mcp (${where})\n`,
      );
      await stopped;
      http.closeAllConnections();
      await new Promise<void>((resolveClosed) => http.close(() => resolveClosed()));
    }
  } finally {
    await board.close();
  }
  return EXIT.ok;
}

// Stateless Streamable HTTP: a fresh server and transport per request, one shared JobBoard,
// so run_status and cancel_run reach runs started by earlier requests.
async function handleHttp(
  server: McpServer,
  transport: StreamableHTTPServerTransport,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  response.on('close', () => {
    void transport.close();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(request, response);
  } catch (error) {
    if (!response.headersSent) {
      response.writeHead(500, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32603, message: errorMessage(error) },
          id: null,
        }),
      );
    }
  }
}
