import { TroupeError } from '../errors.js';
import { closestName } from '../util/closest.js';
import { BUILTIN_TOOL_TIERS, isBuiltinToolName } from './builtin-names.js';
import { type AnyTool, type PermissionTier, PermissionTierSchema } from './tool.js';

/**
 * Permission tiers: what a run grants (`--allow read,network`), the safe
 * defaults, and the spawn-time check that a role's tools are covered.
 */

/** Every tier, in canonical order. */
export const PERMISSION_TIERS: readonly PermissionTier[] = PermissionTierSchema.options;

/**
 * The tiers a run grants when the user passes no `--allow`: read and fetch
 * (researchers), and write (the reporter, whose writes the runtime confines
 * to the run's output folder through `ToolContext.outputDir`). Never exec:
 * nobody runs shell or python unless the user grants it.
 */
export const DEFAULT_GRANTS: readonly PermissionTier[] = Object.freeze([
  'read',
  'write',
  'network',
] as const);

/** The flag that grants tiers, for messages. */
export const ALLOW_FLAG = '--allow';

/**
 * Parses a comma-separated tier list (`"read,network"`): trimmed,
 * case-insensitive, duplicates dropped, canonical order. `all` grants every
 * tier. An unknown tier throws `usage.invalid_option` naming the known ones.
 *
 * @example
 * parseTiers('network, read'); // ['read', 'network']
 */
export function parseTiers(text: string): PermissionTier[] {
  const words = text
    .split(',')
    .map((word) => word.trim().toLowerCase())
    .filter((word) => word !== '');
  if (words.includes('all')) return [...PERMISSION_TIERS];
  const granted = new Set<PermissionTier>();
  for (const word of words) {
    const parsed = PermissionTierSchema.safeParse(word);
    if (!parsed.success) {
      const guess = closestName(word, PERMISSION_TIERS);
      throw new TroupeError(
        'usage.invalid_option',
        `Unknown permission tier "${word}" in ${ALLOW_FLAG}. Known tiers: ${PERMISSION_TIERS.join(', ')} (or all)${guess === undefined ? '' : `; did you mean "${guess}"?`}`,
      );
    }
    granted.add(parsed.data);
  }
  return PERMISSION_TIERS.filter((tier) => granted.has(tier));
}

function tiersOf(tool: AnyTool | string): readonly PermissionTier[] {
  if (typeof tool !== 'string') return tool.tiers;
  if (isBuiltinToolName(tool)) return BUILTIN_TOOL_TIERS[tool];
  throw new TroupeError(
    'usage.unknown_tool',
    `Cannot check the permissions of "${tool}": it is not a built-in tool; pass the tool itself.`,
  );
}

/**
 * Throws `permission.denied` when a role's tools need a tier the run did not
 * grant, naming the role, the tier, the tools that need it and the `--allow`
 * value that would grant it. Call it at spawn, before anything runs. Tools
 * are tool objects or built-in tool names.
 */
export function assertRoleGranted(
  roleName: string,
  tools: readonly (AnyTool | string)[],
  grants: readonly PermissionTier[],
): void {
  const missing = new Map<PermissionTier, string[]>();
  for (const tool of tools) {
    for (const tier of tiersOf(tool)) {
      if (grants.includes(tier)) continue;
      missing.set(tier, [
        ...(missing.get(tier) ?? []),
        typeof tool === 'string' ? tool : tool.name,
      ]);
    }
  }
  if (missing.size === 0) return;
  const needs = [...missing]
    .map(([tier, names]) => `${tier} (for ${names.join(', ')})`)
    .join(' and ');
  const suggested = PERMISSION_TIERS.filter((tier) => grants.includes(tier) || missing.has(tier));
  const tiers = [...missing.keys()];
  throw new TroupeError(
    'permission.denied',
    `Role "${roleName}" needs the ${needs} permission${tiers.length > 1 ? 's' : ''}, which this run does not grant. Rerun with ${ALLOW_FLAG} ${suggested.join(',')}, or remove those tools from the role.`,
    { details: { role: roleName, missing: tiers } },
  );
}

/** The grants of a run, from its `--allow` option. */
export interface RunGrants {
  grants: PermissionTier[];
  /**
   * True when writes must stay in the run's output folder: the user did not
   * grant write explicitly, so the runtime sets `ToolContext.outputDir` for
   * every agent that can write, not only the reporter.
   */
  confineWritesToOutput: boolean;
}

/**
 * The grants for a run: `DEFAULT_GRANTS` with writes confined to the output
 * folder when `allow` is undefined, else exactly the parsed tiers (writes
 * anywhere in the workspace only when `write` is among them).
 *
 * @example
 * resolveGrants(undefined); // { grants: ['read', 'write', 'network'], confineWritesToOutput: true }
 * resolveGrants('read,exec'); // { grants: ['read', 'exec'], confineWritesToOutput: true }
 */
export function resolveGrants(allow: string | undefined): RunGrants {
  if (allow === undefined) return { grants: [...DEFAULT_GRANTS], confineWritesToOutput: true };
  const grants = parseTiers(allow);
  return { grants, confineWritesToOutput: !grants.includes('write') };
}
