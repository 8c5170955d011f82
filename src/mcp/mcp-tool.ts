import { createHash } from 'node:crypto';
import { z } from 'zod';
import { TroupeError } from '../errors.js';
import { type AnyTool, type PermissionTier, TOOL_NAME_PATTERN } from '../tools/tool.js';

/**
 * Turns the tools an MCP server lists into troupe tools named
 * `<server>__<tool>`, with the server's JSON Schema for the model and a zod
 * schema built from it, so the registry validates and coerces arguments as
 * it does for any tool.
 */

/** A tool as an MCP server lists it (the fields troupe uses). */
export interface McpToolInfo {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

/** One content block of an MCP tool result (the fields troupe renders). */
export interface McpContentBlock {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; text?: string; mimeType?: string; blob?: string };
}

/** An MCP tool result (the fields troupe renders). */
export interface McpCallResult {
  content?: readonly McpContentBlock[];
  structuredContent?: unknown;
  isError?: boolean;
}

/** Calls one tool on a server; rejects when the server cannot answer. */
export type McpCaller = (
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<McpCallResult>;

/** The separator between server and tool in troupe tool names. */
export const MCP_TOOL_SEPARATOR = '__';

/**
 * The troupe name of an MCP tool: `<server>__<tool>`, with characters
 * providers refuse replaced by `_`, cut to 64 characters with a short hash
 * when longer (so two long names stay distinct).
 *
 * @example
 * mcpToolName('fs', 'read_text_file'); // 'fs__read_text_file'
 */
export function mcpToolName(server: string, tool: string): string {
  const name = `${server}${MCP_TOOL_SEPARATOR}${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
  if (name.length <= 64) return name;
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}

/** Builds the troupe tool for one MCP tool. */
export function createMcpTool(options: {
  server: string;
  info: McpToolInfo;
  tiers: readonly PermissionTier[];
  call: McpCaller;
}): AnyTool {
  const { server, info, call } = options;
  const name = mcpToolName(server, info.name);
  if (!TOOL_NAME_PATTERN.test(name)) {
    throw new TroupeError(
      'usage.invalid_option',
      `MCP tool "${info.name}" of ${server} has no usable name.`,
    );
  }
  const jsonSchema = objectSchema(info.inputSchema);
  const title = info.title !== undefined && info.title !== info.name ? `${info.title}. ` : '';
  return {
    name,
    description:
      `${title}${info.description ?? ''}`.trim() ||
      `The ${info.name} tool of the MCP server ${server}.`,
    parameters: zodFromJsonSchema(jsonSchema),
    tiers: [...options.tiers],
    jsonSchema,
    execute: async (input: Record<string, unknown>, context) => {
      const result = await call(info.name, input ?? {}, context.signal);
      const text = renderMcpResult(result);
      if (result.isError === true) {
        throw new TroupeError('tool.failed', `${name} reported an error: ${text}`);
      }
      return text;
    },
  };
}

function objectSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...schema };
  delete copy['$schema'];
  if (copy['type'] !== 'object') copy['type'] = 'object';
  if (copy['properties'] === undefined) copy['properties'] = {};
  return copy;
}

// Servers write schemas zod cannot always mirror (remote $refs, odd keywords);
// then any object passes here and the server validates, answering with an error result.
function zodFromJsonSchema(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]) as z.ZodType<
      Record<string, unknown>
    >;
  } catch {
    return z.looseObject({});
  }
}

/**
 * An MCP tool result as text for the model: text blocks as they are,
 * resources by their text or URI, images and audio as a short note, and the
 * structured content as JSON when there is no text.
 */
export function renderMcpResult(result: McpCallResult): string {
  const parts: string[] = [];
  for (const block of result.content ?? []) {
    switch (block.type) {
      case 'text':
        parts.push(block.text ?? '');
        break;
      case 'image':
      case 'audio':
        parts.push(
          `[${block.type} ${block.mimeType ?? ''}, ${approximateBytes(block.data)} bytes, not shown]`,
        );
        break;
      case 'resource':
        parts.push(
          block.resource?.text ??
            `[resource ${block.resource?.uri ?? ''} ${block.resource?.mimeType ?? ''}, binary, not shown]`,
        );
        break;
      case 'resource_link':
        parts.push(`[resource link ${block.name ?? ''} ${block.uri ?? ''}]`.replace(/\s+/g, ' '));
        break;
      default:
        parts.push(`[${block.type} content, not shown]`);
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) {
    return JSON.stringify(result.structuredContent, null, 2);
  }
  return parts.join('\n') || '(no output)';
}

function approximateBytes(base64: string | undefined): number {
  return base64 === undefined ? 0 : Math.floor((base64.length * 3) / 4);
}
