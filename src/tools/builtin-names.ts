import type { PermissionTier } from './tool.js';

/**
 * The built-in tools' names and tiers, without the tools: what the main
 * thread checks roles and grants against. Kept apart from catalogue.ts so
 * that checking a role does not load every tool's code (the shell's
 * sandbox, the fetch tool's egress proxy, …), which only the threads that
 * run tools need.
 */

/** Names of the built-in tools, in catalogue order. */
export const builtinToolNames = [
  'read_file',
  'list_dir',
  'search_files',
  'write_file',
  'shell',
  'fetch_url',
  'python',
  'report_progress',
] as const;

/** A built-in tool name. */
export type BuiltinToolName = (typeof builtinToolNames)[number];

/** The tiers each built-in tool needs, known without building the tools. */
export const BUILTIN_TOOL_TIERS: Readonly<Record<BuiltinToolName, readonly PermissionTier[]>> = {
  read_file: ['read'],
  list_dir: ['read'],
  search_files: ['read'],
  write_file: ['write'],
  shell: ['exec'],
  fetch_url: ['network'],
  python: ['exec'],
  report_progress: [],
};

/** True when `name` is a built-in tool name. */
export function isBuiltinToolName(name: string): name is BuiltinToolName {
  return (builtinToolNames as readonly string[]).includes(name);
}
