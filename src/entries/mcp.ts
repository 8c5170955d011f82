/** `troupe/mcp`: MCP servers as tool sources for agents and roles. */

export type { AttachedMcpTools } from '../mcp/agent-tools.js';
export { attachMcpTools } from '../mcp/agent-tools.js';
export type {
  McpHttpServer,
  McpRoleAccess,
  McpServerConfig,
  McpServers,
  McpStdioServer,
  McpTroupeSettings,
} from '../mcp/config.js';
export {
  loadMcpConfig,
  McpServerConfigSchema,
  parseMcpConfig,
  serverTiers,
} from '../mcp/config.js';
export type { McpHubOptions } from '../mcp/hub.js';
export { McpHub } from '../mcp/hub.js';
export { mcpToolName } from '../mcp/mcp-tool.js';
export { McpToolRegistry } from '../mcp/tool-registry.js';
