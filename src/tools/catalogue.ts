import { TroupeError } from '../errors.js';
import { createFetchTool, type FetchToolOptions } from './builtin/fetch.js';
import { listDirTool } from './builtin/list-dir.js';
import { createPythonTool, type PythonToolOptions } from './builtin/python.js';
import { readFileTool } from './builtin/read-file.js';
import { reportProgressTool } from './builtin/report-progress.js';
import { createSearchFilesTool, type SearchFilesToolOptions } from './builtin/search-files.js';
import { createShellTool, type ShellToolOptions } from './builtin/shell.js';
import { createWriteFileTool, type WriteFileToolOptions } from './builtin/write-file.js';
import { builtinToolNames } from './builtin-names.js';
import { ToolRegistry, type ToolRegistryOptions } from './registry.js';
import type { PermissionTier } from './tool.js';
import { type AnyTool, PermissionTierSchema } from './tool.js';

export {
  BUILTIN_TOOL_TIERS,
  type BuiltinToolName,
  builtinToolNames,
  isBuiltinToolName,
} from './builtin-names.js';

/**
 * The built-in tool catalogue: tool names to tools, so workers can rebuild a
 * role's tools from names (functions never cross a thread).
 */

/** Options for the built-in tools. */
export interface BuiltinToolOptions {
  shell?: ShellToolOptions;
  python?: PythonToolOptions;
  fetch?: FetchToolOptions;
  searchFiles?: SearchFilesToolOptions;
  writeFile?: WriteFileToolOptions;
}

/** Every built-in tool, built with `options`, in catalogue order. */
export function builtinTools(options: BuiltinToolOptions = {}): AnyTool[] {
  return [
    readFileTool,
    listDirTool,
    createSearchFilesTool(options.searchFiles),
    createWriteFileTool(options.writeFile),
    createShellTool(options.shell),
    createFetchTool(options.fetch),
    createPythonTool(options.python),
    reportProgressTool,
  ];
}

/** The built-in tool called `name`; throws `usage.unknown_tool` naming the known tools. */
export function builtinTool(name: string, options: BuiltinToolOptions = {}): AnyTool {
  const tool = builtinTools(options).find((candidate) => candidate.name === name);
  if (tool === undefined) {
    throw new TroupeError(
      'usage.unknown_tool',
      `Unknown built-in tool "${name}". Built-in tools: ${builtinToolNames.join(', ')}.`,
    );
  }
  return tool;
}

/** Options for createBuiltinRegistry. */
export interface BuiltinRegistryOptions extends BuiltinToolOptions {
  /** Only these tools (default all); an unknown name throws `usage.unknown_tool`. */
  names?: readonly string[];
  /** Registry options (result size). */
  registry?: ToolRegistryOptions;
}

/**
 * A ToolRegistry of the built-in tools, narrowed to `options.names` when
 * given (a call to a built-in outside that set is answered "not in your
 * tool set").
 *
 * @example
 * const tools = createBuiltinRegistry({ names: ['read_file', 'fetch_url'] });
 */
export function createBuiltinRegistry(options: BuiltinRegistryOptions = {}): ToolRegistry {
  const registry = new ToolRegistry(builtinTools(options), options.registry);
  return options.names === undefined ? registry : registry.narrow(options.names);
}

/** The tiers a set of tools needs, deduplicated, in the order read, write, exec, network. */
export function requiredTiers(tools: readonly AnyTool[]): PermissionTier[] {
  const needed = new Set(tools.flatMap((tool) => tool.tiers));
  return PermissionTierSchema.options.filter((tier) => needed.has(tier));
}
