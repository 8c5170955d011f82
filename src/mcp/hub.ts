import { TroupeError } from '../errors.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { PermissionTier } from '../tools/tool.js';
import { type McpRoleAccess, type McpServers, roleMcpAccess, serverTiers } from './config.js';
import { McpConnection, type McpConnectionOptions } from './connection.js';
import { McpToolRegistry } from './tool-registry.js';

/** What an McpHub starts its servers with. */
export interface McpHubOptions {
  servers: McpServers;
  /** Absolute workspace path (a sandboxed stdio server may write only here). */
  workspace: string;
  grants: readonly PermissionTier[];
  env: NodeJS.ProcessEnv;
  unsafeNoSandbox?: boolean | undefined;
  /** Restart policy of every connection (see McpConnectionOptions). */
  restart?: Pick<McpConnectionOptions, 'backoffMs' | 'maxBackoffMs' | 'maxRestarts' | 'periodMs'>;
}

/**
 * The MCP clients of one host (a worker thread, or the main thread): each
 * server is started the first time an actor needs it, once per host however
 * many actors use it, and closed with the host.
 */
export class McpHub {
  readonly #options: McpHubOptions;
  readonly #connections = new Map<string, McpConnection>();
  #closed = false;

  constructor(options: McpHubOptions) {
    this.#options = options;
  }

  /** The servers a role may use: what it declares plus the servers whose `troupe.roles` name it. */
  access(roleName: string, declared: readonly McpRoleAccess[]): McpRoleAccess[] {
    return roleMcpAccess(roleName, declared, this.#options.servers);
  }

  /** The connection to `name`, created (not started) on first use. */
  connection(name: string): McpConnection {
    if (this.#closed) throw new TroupeError('runtime.closed', 'The MCP servers were closed.');
    let connection = this.#connections.get(name);
    if (connection === undefined) {
      const server = this.#options.servers[name];
      if (server === undefined) {
        throw new TroupeError(
          'usage.unknown_tool',
          `There is no MCP server "${name}" in the run's config. Configured: ${Object.keys(this.#options.servers).join(', ') || '(none)'}.`,
        );
      }
      connection = new McpConnection({
        name,
        server,
        workspace: this.#options.workspace,
        grants: this.#options.grants,
        env: this.#options.env,
        unsafeNoSandbox: this.#options.unsafeNoSandbox,
        ...this.#options.restart,
      });
      this.#connections.set(name, connection);
    }
    return connection;
  }

  /** Starts the servers `access` names (each once); rejects with the first that cannot start. */
  async ensure(access: readonly McpRoleAccess[]): Promise<void> {
    await Promise.all(access.map((entry) => this.connection(entry.server).start()));
  }

  /**
   * `base` plus the MCP tools `access` allows, kept current as servers
   * change their tool lists.
   */
  registry(base: ToolRegistry, access: readonly McpRoleAccess[]): McpToolRegistry {
    const sources = access.map((entry) => {
      const server = this.#options.servers[entry.server];
      return {
        access: entry,
        connection: this.connection(entry.server),
        tiers: server === undefined ? [] : serverTiers(server),
      };
    });
    return new McpToolRegistry(base, sources);
  }

  /** Closes every server; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const connections = [...this.#connections.values()];
    this.#connections.clear();
    await Promise.all(connections.map((connection) => connection.close()));
  }
}
