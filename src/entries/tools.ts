/**
 * `troupe/tools`: the built-in tools, their permission tiers, the path scope
 * and the OS sandbox they run under, and the tool registry.
 */

export type { FetchToolOptions, HostResolver, ResolvedAddress } from '../tools/builtin/fetch.js';
export { createFetchTool, fetchUrlTool } from '../tools/builtin/fetch.js';
export { listDirTool } from '../tools/builtin/list-dir.js';
export type { PythonToolOptions } from '../tools/builtin/python.js';
export { createPythonTool, pythonTool } from '../tools/builtin/python.js';
export { readFileTool } from '../tools/builtin/read-file.js';
export type { SearchFilesToolOptions } from '../tools/builtin/search-files.js';
export { createSearchFilesTool, searchFilesTool } from '../tools/builtin/search-files.js';
export type { ShellToolOptions } from '../tools/builtin/shell.js';
export { createShellTool, shellTool } from '../tools/builtin/shell.js';
export type { ShellPolicy } from '../tools/builtin/shell-policy.js';
export {
  DEFAULT_GIT_SUBCOMMANDS,
  DEFAULT_SHELL_POLICY,
  DEFAULT_SHELL_PROGRAMS,
} from '../tools/builtin/shell-policy.js';
export type { WriteFileToolOptions } from '../tools/builtin/write-file.js';
export { createWriteFileTool, writeFileTool } from '../tools/builtin/write-file.js';
export type {
  BuiltinRegistryOptions,
  BuiltinToolName,
  BuiltinToolOptions,
} from '../tools/catalogue.js';
export {
  BUILTIN_TOOL_TIERS,
  builtinTool,
  builtinToolNames,
  builtinTools,
  createBuiltinRegistry,
  isBuiltinToolName,
  requiredTiers,
} from '../tools/catalogue.js';
export type { OsSandboxOptions, SandboxStatus } from '../tools/os-sandbox.js';
export { probeSandbox, SANDBOX_INSTALL_HINT } from '../tools/os-sandbox.js';
export type { RunGrants } from '../tools/permissions.js';
export {
  assertRoleGranted,
  DEFAULT_GRANTS,
  PERMISSION_TIERS,
  parseTiers,
  resolveGrants,
} from '../tools/permissions.js';
export type { ToolRegistryOptions, ToolResult } from '../tools/registry.js';
export { ToolRegistry } from '../tools/registry.js';
export type { PathScope, ResolvedPath } from '../tools/sandbox.js';
export { resolveInScope } from '../tools/sandbox.js';
export { scrubEnv } from '../tools/scrub-env.js';
export type {
  AnyTool,
  ApprovalRequest,
  PermissionTier,
  Tool,
  ToolContext,
  ToolDefinition,
} from '../tools/tool.js';
export { defineTool, PermissionTierSchema } from '../tools/tool.js';
export { truncateMiddle } from '../util/truncate.js';
