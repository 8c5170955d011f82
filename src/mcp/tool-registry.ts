import type { ToolCall, ToolSchema } from '../model/types.js';
import { ToolRegistry, type ToolResult } from '../tools/registry.js';
import type { AnyTool, PermissionTier, ToolContext } from '../tools/tool.js';
import type { McpRoleAccess } from './config.js';
import type { McpConnection } from './connection.js';
import { createMcpTool, type McpToolInfo } from './mcp-tool.js';

/** One server an McpToolRegistry takes tools from. */
export interface McpToolSource {
  access: McpRoleAccess;
  connection: McpConnection;
  tiers: readonly PermissionTier[];
}

/**
 * A role's tools: its registry of built-in and user tools plus the MCP
 * tools it may use, rebuilt whenever a server changes its tool list, so
 * the model's next request sees the new list. Calls go through an ordinary
 * ToolRegistry, so MCP tools get the same validation, permission checks,
 * truncation and error results as any tool.
 */
export class McpToolRegistry extends ToolRegistry {
  readonly #base: ToolRegistry;
  readonly #sources: readonly McpToolSource[];
  // Built tools by the listing object they came from: a list change rebuilds only what changed.
  #built = new WeakMap<McpToolInfo, AnyTool>();
  #current: ToolRegistry;
  #stale = true;

  constructor(base: ToolRegistry, sources: readonly McpToolSource[]) {
    super();
    this.#base = base;
    this.#sources = sources;
    this.#current = base;
    // Listeners live as long as the connection (the host's life); registries are per role, so few.
    for (const source of sources) {
      source.connection.onToolsChanged(() => {
        this.#stale = true;
      });
    }
  }

  #registry(): ToolRegistry {
    if (!this.#stale) return this.#current;
    this.#stale = false;
    const taken = new Set(this.#base.names);
    const tools: AnyTool[] = [];
    const built = new WeakMap<McpToolInfo, AnyTool>();
    for (const { access, connection, tiers } of this.#sources) {
      for (const info of connection.tools) {
        if (access.tools !== undefined && !access.tools.includes(info.name)) continue;
        let tool = this.#built.get(info);
        if (tool === undefined) {
          try {
            tool = createMcpTool({
              server: connection.name,
              info,
              tiers,
              call: (name, args, signal) => connection.call(name, args, signal),
            });
          } catch {
            continue;
          }
        }
        built.set(info, tool);
        if (taken.has(tool.name)) continue;
        taken.add(tool.name);
        tools.push(tool);
      }
    }
    this.#built = built;
    this.#current = this.#base.with(tools);
    return this.#current;
  }

  override get names(): string[] {
    return this.#registry().names;
  }

  override get size(): number {
    return this.#registry().size;
  }

  override get(name: string): AnyTool | undefined {
    return this.#registry().get(name);
  }

  override has(name: string): boolean {
    return this.#registry().has(name);
  }

  override list(): AnyTool[] {
    return this.#registry().list();
  }

  override schemas(): readonly ToolSchema[] {
    return this.#registry().schemas();
  }

  /** A fixed registry: the named tools as they are now. */
  override narrow(names: readonly string[]): ToolRegistry {
    return this.#registry().narrow(names);
  }

  /** A fixed registry: these tools added to the current ones. */
  override with(tools: readonly AnyTool[]): ToolRegistry {
    return this.#registry().with(tools);
  }

  override call(toolCall: ToolCall, context: ToolContext): Promise<ToolResult> {
    return this.#registry().call(toolCall, context);
  }
}
