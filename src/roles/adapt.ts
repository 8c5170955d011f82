import { BUILTIN_TOOL_TIERS, isBuiltinToolName } from '../tools/builtin-names.js';
import type { PermissionTier } from '../tools/tool.js';
import type { AnyRole } from './role.js';

/** What adapting a role to a run's grants took away. */
export interface RoleAdaptation {
  /** The role's name. */
  role: string;
  /** The built-in tools it runs without. */
  dropped: string[];
  /** The tiers those tools need that the run does not grant. */
  tiers: PermissionTier[];
}

/**
 * A role fitted to a run's grants: the built-in tools that need an ungranted
 * tier are dropped (its prompt and description say so), unless the role
 * marks one of them as required; then the role is left as it is, and a spawn
 * of it fails before any model call with the `--allow` fix. User tools are
 * not dropped (their tiers are known only once their modules load): they are
 * checked at spawn.
 */
export function adaptRole(
  role: AnyRole,
  grants: readonly PermissionTier[],
): { role: AnyRole; adaptation?: RoleAdaptation } {
  const dropped: string[] = [];
  const tiers = new Set<PermissionTier>();
  for (const name of role.tools) {
    if (!isBuiltinToolName(name)) continue;
    const missing = BUILTIN_TOOL_TIERS[name].filter((tier) => !grants.includes(tier));
    if (missing.length === 0) continue;
    dropped.push(name);
    for (const tier of missing) tiers.add(tier);
  }
  if (dropped.length === 0) return { role };
  if (
    dropped.some(
      (name) => (role.requiredTools as readonly string[] | undefined)?.includes(name) === true,
    )
  )
    return { role };
  const without = dropped.join(', ');
  const needs = [...tiers].join(', ');
  const adapted: AnyRole = Object.freeze({
    ...role,
    tools: Object.freeze(role.tools.filter((name) => !dropped.includes(name))),
    description: `${role.description} (In this run without ${without}: the ${needs} permission is not granted.)`,
    system: `${role.system.trim()}\n\nNot available in this run: ${without} (it needs the ${needs} permission, which the user did not grant). Where your instructions mention ${dropped.length === 1 ? 'it' : 'them'}, do the task without: use the tools you have, and put in your final answer what you would have written or fetched.`,
  });
  return { role: adapted, adaptation: { role: role.name, dropped, tiers: [...tiers] } };
}
