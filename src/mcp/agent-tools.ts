import { errorMessage } from '../errors.js';
import type { ToolRegistry } from '../tools/registry.js';
import { checkRoleMcp, type McpRoleAccess } from './config.js';
import { McpHub, type McpHubOptions } from './hub.js';

/** What attachMcpTools gives back. */
export interface AttachedMcpTools {
  /** `base` plus the tools of every server that started. */
  tools: ToolRegistry;
  /** Close it when the agent is done: it stops the servers. */
  hub: McpHub;
  /** One line per server left out: not granted (with the `--allow` fix) or failed to start. */
  notes: string[];
}

/**
 * Gives one in-process agent (such as `troupe chat`) every configured MCP
 * server the grants cover, started now. A server that is not granted or
 * cannot start is left out with a note, so the agent still runs.
 */
export async function attachMcpTools(
  base: ToolRegistry,
  agentName: string,
  options: McpHubOptions,
): Promise<AttachedMcpTools> {
  const hub = new McpHub(options);
  const notes: string[] = [];
  const granted: McpRoleAccess[] = [];
  for (const server of Object.keys(options.servers)) {
    const refusal = checkRoleMcp(agentName, [{ server }], options.servers, options.grants);
    if (refusal === undefined) granted.push({ server });
    else notes.push(`MCP server "${server}" left out: ${refusal.message}`);
  }
  const started: McpRoleAccess[] = [];
  await Promise.all(
    granted.map(async (access) => {
      try {
        await hub.ensure([access]);
        started.push(access);
      } catch (error) {
        notes.push(`MCP server "${access.server}" left out: ${errorMessage(error)}`);
      }
    }),
  );
  const order = Object.keys(options.servers);
  started.sort((a, b) => order.indexOf(a.server) - order.indexOf(b.server));
  return { tools: hub.registry(base, started), hub, notes };
}
