import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { errorMessage, TroupeError } from '../errors.js';
import { ALLOW_FLAG, PERMISSION_TIERS } from '../tools/permissions.js';
import { type PermissionTier, PermissionTierSchema } from '../tools/tool.js';

/**
 * MCP server configuration in the de-facto `mcpServers` format of Claude
 * Desktop, Claude Code, Cursor and VS Code: a stdio server is a command with
 * args and env, a Streamable HTTP server a URL with headers. troupe's own
 * settings sit in an optional `troupe` field that other clients ignore.
 */

/** Server names become tool-name prefixes (`<server>__<tool>`), so they use tool-name characters. */
export const MCP_SERVER_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9-]*(_[a-zA-Z0-9-]+)*$/;

/** troupe's settings for one server; other MCP clients ignore this field. */
export const McpTroupeSettingsSchema = z.object({
  /** The tiers the server needs (default exec and network for stdio, network for HTTP). */
  tiers: z.array(PermissionTierSchema).optional(),
  /** Roles that get every tool of this server, besides roles that name it in `mcp`. */
  roles: z.array(z.string()).optional(),
  /** How long one tool call may take, in milliseconds (default 60,000). */
  timeoutMs: z.number().int().positive().optional(),
});
export type McpTroupeSettings = z.infer<typeof McpTroupeSettingsSchema>;

/** A server started as a child process, spoken to over stdin/stdout. */
export const McpStdioServerSchema = z.object({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  troupe: McpTroupeSettingsSchema.optional(),
});
export type McpStdioServer = z.infer<typeof McpStdioServerSchema>;

/** A server reached over Streamable HTTP. */
export const McpHttpServerSchema = z.object({
  type: z.enum(['http', 'streamable-http', 'streamableHttp']).optional(),
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), z.string()).optional(),
  troupe: McpTroupeSettingsSchema.optional(),
});
export type McpHttpServer = z.infer<typeof McpHttpServerSchema>;

/** One entry of `mcpServers`. */
export const McpServerConfigSchema = z.union([McpStdioServerSchema, McpHttpServerSchema]);
export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

/** Server name to server: the value of `mcpServers`, and of `RuntimeOptions.mcp`. */
export type McpServers = Readonly<Record<string, McpServerConfig>>;

/** What a role may use of one server: all its tools, or only those named (MCP names, unprefixed). */
export const McpRoleAccessSchema = z.object({
  server: z.string(),
  tools: z.array(z.string()).optional(),
});
export type McpRoleAccess = z.infer<typeof McpRoleAccessSchema>;

/** True for a stdio server entry. */
export function isStdioServer(server: McpServerConfig): server is McpStdioServer {
  return 'command' in server;
}

/** The tiers a server needs: its `troupe.tiers`, else exec+network for stdio (local code) and network for HTTP. */
export function serverTiers(server: McpServerConfig): PermissionTier[] {
  const declared = server.troupe?.tiers;
  if (declared !== undefined) return PERMISSION_TIERS.filter((tier) => declared.includes(tier));
  return isStdioServer(server) ? ['exec', 'network'] : ['network'];
}

/**
 * Parses an `mcpServers` config (the whole file, `{ "mcpServers": {...} }`,
 * or the inner object). Throws `usage.invalid_option` saying which server
 * and field are wrong; `source` names the file in messages.
 *
 * @example
 * parseMcpConfig({ mcpServers: { fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] } } });
 */
export function parseMcpConfig(
  data: unknown,
  source = 'the MCP config',
): Record<string, McpServerConfig> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new TroupeError(
      'usage.invalid_option',
      `${source} must be a JSON object like { "mcpServers": { "<name>": { "command": "…", "args": [] } } }.`,
    );
  }
  const record = data as Record<string, unknown>;
  const servers = 'mcpServers' in record ? record['mcpServers'] : record;
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new TroupeError(
      'usage.invalid_option',
      `${source}: "mcpServers" must be an object of servers by name.`,
    );
  }
  const out: Record<string, McpServerConfig> = {};
  for (const [name, value] of Object.entries(servers)) {
    if (!MCP_SERVER_NAME_PATTERN.test(name) || name.length > 32) {
      throw new TroupeError(
        'usage.invalid_option',
        `${source}: server name "${name}" cannot prefix tool names; use at most 32 letters, digits, - and single _ (e.g. "${
          name
            .replace(/[^a-zA-Z0-9-]+/g, '-')
            .replace(/^-+/, '')
            .slice(0, 32) || 'server'
        }").`,
      );
    }
    if ((value as { type?: unknown } | null)?.type === 'sse') {
      throw new TroupeError(
        'usage.invalid_option',
        `${source}: server "${name}" uses the deprecated SSE transport; troupe speaks stdio and Streamable HTTP (most servers serve it at /mcp).`,
      );
    }
    const parsed = McpServerConfigSchema.safeParse(value);
    if (!parsed.success) {
      const hint =
        typeof value === 'object' && value !== null && ('command' in value || 'url' in value)
          ? z.prettifyError(parsed.error)
          : 'an entry needs "command" (stdio, with optional "args" and "env") or "url" (Streamable HTTP, with optional "headers").';
      throw new TroupeError('usage.invalid_option', `${source}: server "${name}": ${hint}`);
    }
    out[name] = parsed.data;
  }
  return out;
}

/** Reads and parses an `mcpServers` JSON file. Throws `usage.invalid_option` with the path. */
export function loadMcpConfig(path: string): Record<string, McpServerConfig> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TroupeError(
      'usage.invalid_option',
      `Cannot read the MCP config ${path}: ${errorMessage(error)}.`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new TroupeError(
      'usage.invalid_option',
      `The MCP config ${path} is not valid JSON: ${errorMessage(error)}.`,
    );
  }
  return parseMcpConfig(data, `The MCP config ${path}`);
}

/**
 * What a role may use of each server: the servers it names in `mcp`, plus
 * every server whose `troupe.roles` lists it (all tools). A server named
 * twice keeps the wider access.
 */
export function roleMcpAccess(
  roleName: string,
  declared: readonly McpRoleAccess[],
  servers: McpServers,
): McpRoleAccess[] {
  const access = new Map<string, McpRoleAccess>();
  const add = (entry: McpRoleAccess): void => {
    const known = access.get(entry.server);
    if (known === undefined) access.set(entry.server, entry);
    else if (known.tools !== undefined) {
      access.set(
        entry.server,
        entry.tools === undefined
          ? { server: entry.server }
          : { server: entry.server, tools: [...new Set([...known.tools, ...entry.tools])] },
      );
    }
  };
  for (const entry of declared) add(entry);
  for (const [name, server] of Object.entries(servers)) {
    if (server.troupe?.roles?.includes(roleName) === true) add({ server: name });
  }
  return [...access.values()];
}

/**
 * Checks a role's MCP servers against the run's config and grants, as
 * `assertRoleGranted` does for built-in tools: an error naming an unknown
 * server, or the missing tiers and the `--allow` value that grants them;
 * undefined when all is well.
 */
export function checkRoleMcp(
  roleName: string,
  access: readonly McpRoleAccess[],
  servers: McpServers,
  grants: readonly PermissionTier[],
): TroupeError | undefined {
  const unknown = access.filter((entry) => servers[entry.server] === undefined);
  if (unknown.length > 0) {
    const known = Object.keys(servers);
    return new TroupeError(
      'usage.unknown_tool',
      `Role "${roleName}" names MCP server${unknown.length > 1 ? 's' : ''} ${unknown.map((entry) => `"${entry.server}"`).join(', ')}, which the run's MCP config does not have. Configured servers: ${known.join(', ') || '(none; pass --mcp <config.json> or RuntimeOptions.mcp)'}.`,
    );
  }
  const missing = new Map<PermissionTier, string[]>();
  for (const entry of access) {
    const server = servers[entry.server] as McpServerConfig;
    for (const tier of serverTiers(server)) {
      if (grants.includes(tier)) continue;
      missing.set(tier, [...(missing.get(tier) ?? []), `MCP server ${entry.server}`]);
    }
  }
  if (missing.size === 0) return undefined;
  const needs = [...missing]
    .map(([tier, names]) => `${tier} (for ${names.join(', ')})`)
    .join(' and ');
  const suggested = PERMISSION_TIERS.filter((tier) => grants.includes(tier) || missing.has(tier));
  return new TroupeError(
    'permission.denied',
    `Role "${roleName}" needs the ${needs} permission${missing.size > 1 ? 's' : ''}, which this run does not grant. Rerun with ${ALLOW_FLAG} ${suggested.join(',')}, or set the server's "troupe": { "tiers": [...] } if it needs less.`,
    { details: { role: roleName, missing: [...missing.keys()] } },
  );
}

/**
 * Expands `${NAME}` and `${NAME:-default}` in a config value from `env`, as
 * Claude Code does, so keys stay in the environment and out of config files.
 * An unset variable without a default throws `usage.invalid_option`.
 */
export function expandEnv(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_, name: string, fallback?: string) => {
      const found = env[name];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      throw new TroupeError(
        'usage.invalid_option',
        `${where} uses \${${name}}, which is not set in the environment. Set it, or write \${${name}:-default}.`,
      );
    },
  );
}

/**
 * Servers no role can reach: neither a role's `mcp` nor the server's
 * `troupe.roles` names it, so its tools would never be offered. For a warning.
 */
export function unreachableServers(
  servers: McpServers,
  roles: readonly { name: string; mcp?: readonly McpRoleAccess[] | undefined }[],
): string[] {
  const named = new Set(roles.flatMap((role) => (role.mcp ?? []).map((access) => access.server)));
  return Object.entries(servers)
    .filter(([name, server]) => !named.has(name) && (server.troupe?.roles ?? []).length === 0)
    .map(([name]) => name);
}
