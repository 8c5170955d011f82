import { isTroupeError, TroupeError } from '../errors.js';
import { checkRoleMcp, type McpServers, roleMcpAccess } from '../mcp/config.js';
import { builtinToolNames, isBuiltinToolName } from '../tools/builtin-names.js';
import { assertRoleGranted } from '../tools/permissions.js';
import type { AnyTool, PermissionTier } from '../tools/tool.js';
import { loadToolModules } from '../tools/tool-modules.js';
import { closestName } from '../util/closest.js';
import type { AnyRole } from './role.js';

/**
 * What the main thread knows of the tools workers will build: the built-in
 * names and the user tool modules (loaded here too, once, only to learn
 * their names and tiers). Spawns are checked against it, so a role with an
 * unknown tool or an ungranted tier fails at spawn, before anything runs.
 */
export class ToolIndex {
  readonly #modules: readonly string[];
  #user: Map<string, AnyTool> | undefined;
  #loadError: TroupeError | undefined;
  // Grants are fixed for a run, so a role's verdict is too.
  readonly #verdicts = new WeakMap<AnyRole, { error: TroupeError | undefined }>();
  #loading: Promise<void> | undefined;

  readonly #mcp: McpServers;

  constructor(modules: readonly string[], mcp: McpServers = {}) {
    this.#modules = modules;
    this.#mcp = mcp;
    if (modules.length === 0) this.#user = new Map();
  }

  /**
   * Checks a role's tools against the grants: an error when one is unknown or
   * needs an ungranted tier, undefined when all is well. Synchronous when it
   * can decide now, a promise when the user modules must load first.
   */
  check(
    role: AnyRole,
    grants: readonly PermissionTier[],
  ): TroupeError | undefined | Promise<TroupeError | undefined> {
    const known = this.#verdicts.get(role);
    if (known !== undefined) return known.error;
    if (role.tools.every(isBuiltinToolName)) return this.#decide(role, grants);
    if (this.#user !== undefined || this.#loadError !== undefined)
      return this.#decide(role, grants);
    return this.#load().then(() => this.#decide(role, grants));
  }

  /**
   * The tools of the user modules by name, loading them first if need be;
   * rejects with the load error (a usage error naming the module).
   */
  async userTools(): Promise<ReadonlyMap<string, AnyTool>> {
    if (this.#user === undefined && this.#loadError === undefined) await this.#load();
    if (this.#loadError !== undefined) throw this.#loadError;
    return this.#user ?? new Map();
  }

  // Loads the user modules once; a failure is kept as the verdict of every role that needs them.
  #load(): Promise<void> {
    this.#loading ??= loadToolModules(this.#modules).then(
      (tools) => {
        this.#user = new Map(tools.map((tool) => [tool.name, tool]));
      },
      (error: unknown) => {
        this.#loadError = isTroupeError(error)
          ? error
          : new TroupeError('usage.invalid_option', String(error));
      },
    );
    return this.#loading;
  }

  #decide(role: AnyRole, grants: readonly PermissionTier[]): TroupeError | undefined {
    const known = this.#verdicts.get(role);
    if (known !== undefined) return known.error;
    const error = this.#judge(role, grants);
    this.#verdicts.set(role, { error });
    return error;
  }

  #judge(role: AnyRole, grants: readonly PermissionTier[]): TroupeError | undefined {
    const tools: (AnyTool | string)[] = [];
    const unknown: string[] = [];
    for (const name of role.tools) {
      const user = this.#user?.get(name);
      if (user !== undefined) tools.push(user);
      else if (isBuiltinToolName(name)) tools.push(name);
      else unknown.push(name);
    }
    if (unknown.length > 0) {
      if (this.#loadError !== undefined) return this.#loadError;
      const known = [...builtinToolNames, ...(this.#user?.keys() ?? [])];
      return new TroupeError(
        'usage.unknown_tool',
        `Role "${role.name}" names unknown tool${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `"${name}"${suggest(name, known)}`).join(', ')}. Known tools: ${known.join(', ')}.`,
      );
    }
    try {
      assertRoleGranted(role.name, tools, grants);
      return checkRoleMcp(
        role.name,
        roleMcpAccess(role.name, role.mcp ?? [], this.#mcp),
        this.#mcp,
        grants,
      );
    } catch (error) {
      return isTroupeError(error) ? error : new TroupeError('permission.denied', String(error));
    }
  }
}

// " (did you mean "read_file"?)" for a name near a known one.
function suggest(name: string, known: readonly string[]): string {
  const guess = closestName(name, known);
  return guess === undefined ? '' : ` (did you mean "${guess}"?)`;
}
