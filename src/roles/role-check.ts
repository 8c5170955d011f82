import { z } from 'zod';
import { TroupeError } from '../errors.js';
import { checkRoleMcp, type McpServers, roleMcpAccess } from '../mcp/config.js';
import { ModelSpecSchema } from '../model/spec.js';
import { builtinToolNames, isBuiltinToolName } from '../tools/builtin-names.js';
import { assertRoleGranted } from '../tools/permissions.js';
import type { AnyTool, PermissionTier } from '../tools/tool.js';
import { closestName } from '../util/closest.js';
import type { AnyChannel } from './channel.js';
import type { AnyRole } from './role.js';

/** What a run's roles are checked against before anything is spent. */
export interface RoleCheckOptions {
  /** The tiers the run grants. */
  grants: readonly PermissionTier[];
  /**
   * The tools of the user's tool modules, by name; undefined while they are
   * not loaded: a name outside the built-in catalogue is then not judged
   * (the spawn-time check still is).
   */
  userTools?: ReadonlyMap<string, AnyTool> | undefined;
  /** The run's MCP servers. */
  mcp?: McpServers | undefined;
  /** Where API keys are read from (default process.env). */
  env?: NodeJS.ProcessEnv | undefined;
  /**
   * The roles are the whole set (the CLI's `--roles`): a channel they
   * subscribe to and none publishes is a mistake. A Runtime may be handed
   * publishers later (role objects given to `spawn()`), so it does not ask.
   */
  complete?: boolean | undefined;
}

/**
 * The mistakes in a run's roles that would otherwise surface only when an
 * agent of the role is spawned, after the coordinator has spent tokens:
 * unknown tools (with the nearest known name), tools whose tier the run
 * does not grant (after roles adapted to the grants, so these are the
 * required ones, with the `--allow` fix), MCP servers the run does not have,
 * channels that are not channels, that two roles define differently, or
 * (with `complete`) that a role subscribes to and no role publishes, and model specs that are
 * invalid or whose API key is not set. One line per problem.
 */
export function roleProblems(roles: readonly AnyRole[], options: RoleCheckOptions): string[] {
  const problems: string[] = [];
  const known = [...builtinToolNames, ...(options.userTools?.keys() ?? [])];
  for (const role of roles) {
    const tools: (AnyTool | string)[] = [];
    for (const name of role.tools) {
      const user = options.userTools?.get(name);
      if (user !== undefined) tools.push(user);
      else if (isBuiltinToolName(name)) tools.push(name);
      else if (options.userTools !== undefined) {
        const guess = closestName(name, known);
        problems.push(
          `Role ${role.name} names tool \`${name}\`, which neither the built-in tools nor the tool modules have${guess === undefined ? '' : `; did you mean \`${guess}\`?`} Known tools: ${known.join(', ')}.`,
        );
      }
    }
    try {
      assertRoleGranted(role.name, tools, options.grants);
    } catch (error) {
      problems.push((error as Error).message);
    }
    const mcp = options.mcp ?? {};
    const mcpError = checkRoleMcp(
      role.name,
      roleMcpAccess(role.name, role.mcp ?? [], mcp),
      mcp,
      options.grants,
    );
    if (mcpError !== undefined) problems.push(mcpError.message);
    const model = modelProblem(role, options.env ?? process.env);
    if (model !== undefined) problems.push(model);
  }
  problems.push(...channelProblems(roles, options.complete === true));
  return problems;
}

/**
 * Throws one TroupeError listing every problem `roleProblems` finds
 * (`usage.unknown_tool` when unknown tools are all there is, else
 * `usage.invalid_role`), so a run fails before its first model call.
 */
export function checkRoles(roles: readonly AnyRole[], options: RoleCheckOptions): void {
  const problems = roleProblems(roles, options);
  if (problems.length === 0) return;
  const onlyTools = problems.every((problem) => problem.includes('neither the built-in tools'));
  throw new TroupeError(
    onlyTools ? 'usage.unknown_tool' : 'usage.invalid_role',
    problems.length === 1
      ? (problems[0] as string)
      : `The roles have ${problems.length} problems:\n${problems.map((problem) => `- ${problem}`).join('\n')}`,
    { details: { problems } },
  );
}

function modelProblem(role: AnyRole, env: NodeJS.ProcessEnv): string | undefined {
  if (role.model === undefined) return undefined;
  const parsed = ModelSpecSchema.safeParse(role.model);
  if (!parsed.success) {
    return `Role ${role.name} has an invalid model spec: ${z.prettifyError(parsed.error).replaceAll('\n', ' ')}`;
  }
  const spec = parsed.data;
  // The keys the providers are sure to need: Anthropic's always, OpenAI's for its own endpoint.
  let keyEnv: string | undefined;
  let name = '';
  if (spec.provider === 'anthropic') {
    keyEnv = spec.apiKeyEnv ?? 'ANTHROPIC_API_KEY';
    name = spec.model;
  } else if (spec.provider === 'openai' && spec.baseURL === undefined && !env['OPENAI_BASE_URL']) {
    keyEnv = spec.apiKeyEnv ?? 'OPENAI_API_KEY';
    name = spec.model;
  }
  if (keyEnv === undefined || (env[keyEnv]?.trim() ?? '') !== '') return undefined;
  return `Role ${role.name} uses the ${spec.provider} model ${name}, whose API key variable ${keyEnv} is not set; set it, or give the role another model.`;
}

function channelProblems(roles: readonly AnyRole[], complete: boolean): string[] {
  const problems: string[] = [];
  const channels = new Map<string, { channel: AnyChannel; role: string }>();
  const published = new Set<string>();
  for (const role of roles) {
    for (const [list, channelsOf] of [
      ['publishes', role.publishes],
      ['subscribes', role.subscribes],
    ] as const) {
      for (const channel of channelsOf) {
        if (!isChannel(channel)) {
          problems.push(
            `Role ${role.name}: ${list} holds ${JSON.stringify(channel)}, which is not a channel; make it with defineChannel(name, schema) and pass that.`,
          );
          continue;
        }
        if (list === 'publishes') published.add(channel.name);
        const first = channels.get(channel.name);
        if (first === undefined) channels.set(channel.name, { channel, role: role.name });
        else if (
          first.channel !== channel &&
          JSON.stringify(first.channel.jsonSchema) !== JSON.stringify(channel.jsonSchema)
        ) {
          problems.push(
            `Channel "${channel.name}" is defined twice with different schemas (roles ${first.role} and ${role.name}); define it once and use it in both roles.`,
          );
        }
      }
    }
  }
  for (const role of complete ? roles : []) {
    for (const channel of role.subscribes) {
      if (!isChannel(channel) || published.has(channel.name)) continue;
      const guess = closestName(channel.name, [...published]);
      problems.push(
        `Role ${role.name} subscribes to channel "${channel.name}", which no role publishes${guess === undefined ? '.' : `; did you mean "${guess}"?`} Add it to a role's publishes.`,
      );
    }
  }
  return problems;
}

function isChannel(value: unknown): value is AnyChannel {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<AnyChannel>;
  return typeof candidate.name === 'string' && typeof candidate.jsonSchema === 'object';
}
