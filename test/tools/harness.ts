import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { probeSandbox } from '../../src/tools/os-sandbox.js';
import { ToolRegistry, type ToolResult } from '../../src/tools/registry.js';
import type { AnyTool, PermissionTier, ToolContext } from '../../src/tools/tool.js';

/** A temporary world: a workspace and a sibling folder outside it that must never change. */
export interface World {
  base: string;
  workspace: string;
  outside: string;
  cleanup(): Promise<void>;
}

/** Creates `<tmp>/troupe-tools-*` with `workspace/` and `outside/`. */
export async function createWorld(): Promise<World> {
  const base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'troupe-tools-')));
  const workspace = path.join(base, 'workspace');
  const outside = path.join(base, 'outside');
  await mkdir(workspace);
  await mkdir(outside);
  return {
    base,
    workspace,
    outside,
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

/** Every entry under `root` (files with contents, symlinks with targets, folders), for before/after comparison. */
export async function snapshot(root: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  async function walk(folder: string): Promise<void> {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const absolute = path.join(folder, entry.name);
      const key = path.relative(root, absolute);
      if (entry.isSymbolicLink()) result[key] = `symlink -> ${await readlink(absolute)}`;
      else if (entry.isDirectory()) {
        result[key] = 'dir';
        await walk(absolute);
      } else if (entry.isFile()) {
        const stats = await lstat(absolute);
        result[key] =
          stats.size > 1_000_000
            ? `file size ${stats.size}`
            : `file ${(await readFile(absolute)).toString('base64')}`;
      } else result[key] = 'special';
    }
  }
  await walk(root);
  return result;
}

/** A ToolContext for tests; every tier granted unless `grants` says otherwise. */
export function contextFor(workspace: string, overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    signal: new AbortController().signal,
    runId: 'run-test',
    agentId: 'agent-test',
    workspace,
    grants: ['read', 'write', 'exec', 'network'] satisfies PermissionTier[],
    ...overrides,
  };
}

/** Calls `tool` the way the agent loop does: through a registry, with JSON arguments. */
export function callTool(
  tool: AnyTool,
  input: unknown,
  context: ToolContext,
  registry: ToolRegistry = new ToolRegistry([tool]),
): Promise<ToolResult> {
  const raw = typeof input === 'string' ? input : JSON.stringify(input);
  return registry.call({ id: 'call-1', name: tool.name, arguments: input, raw }, context);
}

/** The error code of a result, or 'ok'. */
export function outcome(result: ToolResult): string {
  return result.ok ? 'ok' : result.error.code;
}

/** Whether bubblewrap can start here; tests of the exec tools need it. */
export const sandboxStatus = await probeSandbox();

/** True when sandboxed tests must be skipped. */
export const withoutSandbox = !sandboxStatus.available;

/** A test name that, when the test is skipped for want of a sandbox, says why and how to fix it. */
export function sandboxed(name: string): string {
  return withoutSandbox
    ? `${name} [skipped: ${sandboxStatus.reason ?? 'no sandbox'}; install with apt-get install bubblewrap]`
    : name;
}
