import { z } from 'zod';
import type { TokenBudgetLimits } from '../agent/budget.js';
import {
  type CompressionSetting,
  CompressionSettingSchema,
  mergeCompression,
} from '../agent/history.js';
import { TroupeError } from '../errors.js';
import { MCP_SERVER_NAME_PATTERN, type McpRoleAccess } from '../mcp/config.js';
import type { ModelSpec } from '../model/model.js';
import type { BuiltinToolName } from '../tools/builtin-names.js';
import { type AnyTool, toolJsonSchema } from '../tools/tool.js';
import { type AnyChannel, publishToolName, toChannelSpec } from './channel.js';
import type { MailboxOptions, RoleSpec } from './role-spec.js';

/** Role names become actor ids (`researcher-1`): lowercase letters, digits, `_` and `-`. */
export const ROLE_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,39}$/;

/**
 * What a supervisor does when an actor of the role fails transiently (a 429,
 * a 5xx, a lost connection, a crashed thread): retry with backoff, or fail fast.
 */
export interface RetryPolicy {
  /** Retries after the first attempt; 0 fails fast. */
  maxRetries: number;
  /** Wait before the first retry, doubled for each next one, in milliseconds (default 1,000). */
  backoffMs?: number | undefined;
  /** Longest wait between retries, in milliseconds (default 30,000). */
  maxBackoffMs?: number | undefined;
  /**
   * More than this many restarts of one actor within `periodMs` stops its
   * retrying and escalates its failure to the parent, as an Erlang supervisor
   * does (default 5). Counted per actor: a sibling's restarts never use it up.
   */
  maxRestarts?: number | undefined;
  /** The window of `maxRestarts` and `maxFailingChildren`, in milliseconds (default 60,000). */
  periodMs?: number | undefined;
  /**
   * More than this many distinct children of one parent failing transiently
   * within `periodMs` stops retrying under that parent (default 100): many
   * children failing at once is an outage worth escalating, a few are not.
   */
  maxFailingChildren?: number | undefined;
}

/** The retry policy of a role that names none. */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 2,
  backoffMs: 1000,
  maxBackoffMs: 30_000,
  maxRestarts: 5,
  periodMs: 60_000,
});

declare const USER_TOOL: unique symbol;

/** The name of a tool from the user's tool modules, as `userTool(name)` makes it. */
export type UserToolName = string & { readonly [USER_TOOL]: true };

/**
 * A tool as a role lists it: a built-in tool's name (checked by TypeScript,
 * so `'read_fiel'` does not compile), a tool object made with `defineTool`
 * (its name is used), or `userTool('name')` for a tool of the user's tool
 * modules named by string. Every name is checked again when the roles load.
 */
export type RoleTool = RoleToolName | AnyTool;

/** A tool name as a defined role holds it. */
export type RoleToolName = BuiltinToolName | UserToolName;

/**
 * Names a tool of the user's tool modules in a role's `tools` when the tool
 * object is not imported. TypeScript cannot know these names, so this is
 * the explicit way past its check of built-in names; the name is checked
 * against the loaded tool modules when the roles load (the CLI's `--roles`,
 * a Runtime's construction or `runJob`).
 *
 * @example
 * defineRole({ name: 'triager', description: '…', system: '…', tools: ['read_file', userTool('search_tickets')] });
 */
export function userTool(name: string): UserToolName {
  return name as UserToolName;
}

/** What `defineRole` takes. */
export interface RoleDefinition<TOutput = unknown> {
  /** Lowercase, e.g. `researcher`; actors are named `<name>-<n>`. */
  name: string;
  /** One line for the coordinator: what this role is good for. */
  description: string;
  /** The system prompt of every actor of this role. */
  system: string;
  /** The tools the role may use: built-in names, tool objects, or `userTool(name)` (see RoleTool). */
  tools?: readonly RoleTool[] | undefined;
  /**
   * Tools the role cannot work without. A built-in tool that needs a tier the
   * run does not grant is otherwise dropped (the role adapts, with a
   * `role.adapted` event); a required one makes the role fail at spawn, before
   * any model call, with the `--allow` fix.
   */
  requiredTools?: readonly RoleTool[] | undefined;
  /** The model, when not the runtime's default. */
  model?: ModelSpec | undefined;
  /** Model calls per Agent run (default 10). */
  maxSteps?: number | undefined;
  /** Channels the role publishes on; each gives it a `publish_<channel>` tool. */
  publishes?: readonly AnyChannel[] | undefined;
  /** Channels whose messages the role receives as user messages, until they close. */
  subscribes?: readonly AnyChannel[] | undefined;
  /** The shape of the final answer: it must then be JSON, parsed into `output`. */
  output?: z.ZodType<TOutput> | undefined;
  /** Retry policy, or `'fail_fast'` (default DEFAULT_RETRY). */
  retry?: RetryPolicy | 'fail_fast' | undefined;
  /** Default time limit of one actor, in milliseconds (none by default). */
  timeoutMs?: number | undefined;
  /**
   * May spawn sub-agents of its own, within the runtime's depth limit: it gets
   * `delegate`, `spawn_agent`, `wait_agents` and `send_message`, as the coordinator does.
   */
  canDelegate?: boolean | undefined;
  /** The bound of each actor's mailbox and what a full one does to senders. */
  mailbox?: MailboxOptions | undefined;
  /** Per-actor token limits (the tree budget is the runtime's). */
  budget?: TokenBudgetLimits | undefined;
  /** Stream replies (model.delta events); default true. */
  stream?: boolean | undefined;
  /**
   * History compression of its actors: `false` keeps every message; an
   * object sets the model's context window (needed for a model troupe does
   * not know), the share of it past which the history is compressed
   * (default 0.75) and the turns kept verbatim (default 4). By default the
   * run's setting, on for models whose window is known.
   */
  compression?: CompressionSetting | undefined;
  /**
   * MCP servers the role may use, by their name in the run's MCP config, each
   * with all its tools or only those listed; the model sees them as `<server>__<tool>`.
   */
  mcp?: readonly McpRoleAccess[] | undefined;
}

/** A role: what an actor is allowed to do. Made by defineRole; read-only. */
export interface Role<TOutput = unknown> {
  readonly name: string;
  readonly description: string;
  readonly system: string;
  readonly tools: readonly RoleToolName[];
  /** Tools the role cannot work without (optional so roles made before it still fit). */
  readonly requiredTools?: readonly RoleToolName[] | undefined;
  readonly model: ModelSpec | undefined;
  readonly maxSteps: number;
  readonly publishes: readonly AnyChannel[];
  readonly subscribes: readonly AnyChannel[];
  readonly output: z.ZodType<TOutput> | undefined;
  readonly retry: Readonly<RetryPolicy>;
  readonly timeoutMs: number | undefined;
  readonly canDelegate: boolean;
  readonly mailbox: MailboxOptions | undefined;
  readonly budget: TokenBudgetLimits | undefined;
  readonly stream: boolean | undefined;
  /** History compression of its actors (optional so roles made before it still fit). */
  readonly compression?: CompressionSetting | undefined;
  /** MCP servers the role may use (optional so roles made before MCP support still fit). */
  readonly mcp?: readonly McpRoleAccess[] | undefined;
}

/** Any role, whatever its output type. */
// biome-ignore lint/suspicious/noExplicitAny: a runtime holds roles of every output type.
export type AnyRole = Role<any>;

/**
 * Declares a role. Checked here, so a bad name or limit fails at definition.
 *
 * @example
 * const summarizer = defineRole({
 *   name: 'summarizer',
 *   description: 'Summarizes one file.',
 *   system: 'You summarize files faithfully.',
 *   tools: ['read_file'],
 * });
 */
export function defineRole<TOutput = unknown>(definition: RoleDefinition<TOutput>): Role<TOutput> {
  const { name } = definition;
  if (!ROLE_NAME_PATTERN.test(name)) {
    throw new TroupeError(
      'usage.invalid_role',
      `Invalid role name "${name}": names must match ${ROLE_NAME_PATTERN} (lowercase letter first, then letters, digits, _ or -).`,
    );
  }
  const maxSteps = definition.maxSteps ?? 10;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) {
    throw new TroupeError(
      'usage.invalid_role',
      `Role ${name}: maxSteps must be a whole number of at least 1, got ${maxSteps}.`,
    );
  }
  if (definition.timeoutMs !== undefined && !(definition.timeoutMs > 0)) {
    throw new TroupeError(
      'usage.invalid_role',
      `Role ${name}: timeoutMs must be positive, got ${definition.timeoutMs}.`,
    );
  }
  const retry =
    definition.retry === 'fail_fast'
      ? { ...DEFAULT_RETRY, maxRetries: 0 }
      : { ...DEFAULT_RETRY, ...definition.retry };
  if (!Number.isInteger(retry.maxRetries) || retry.maxRetries < 0) {
    throw new TroupeError(
      'usage.invalid_role',
      `Role ${name}: retry.maxRetries must be a whole number, got ${retry.maxRetries}.`,
    );
  }
  const tools = toolNames(name, 'tools', definition.tools);
  const requiredTools = toolNames(name, 'requiredTools', definition.requiredTools);
  const stray = requiredTools.filter((tool) => !tools.includes(tool));
  if (stray.length > 0) {
    throw new TroupeError(
      'usage.invalid_role',
      `Role ${name}: requiredTools names ${stray.map((tool) => `"${tool}"`).join(', ')}, which ${stray.length === 1 ? 'is' : 'are'} not in its tools; add ${stray.length === 1 ? 'it' : 'them'} to tools.`,
    );
  }
  for (const channel of definition.publishes ?? []) {
    if ((tools as string[]).includes(publishToolName(channel.name))) {
      throw new TroupeError(
        'usage.invalid_role',
        `Role ${name}: ${publishToolName(channel.name)} is added by publishes; do not list it in tools.`,
      );
    }
  }
  if (definition.compression !== undefined) {
    const parsed = CompressionSettingSchema.safeParse(definition.compression);
    if (!parsed.success) {
      throw new TroupeError(
        'usage.invalid_role',
        `Role ${name}: compression must be false or { contextWindow?: tokens (at least 1024), at?: a share between 0 and 1, keepTurns?: a whole number }, got ${JSON.stringify(definition.compression)}.`,
      );
    }
  }
  for (const access of definition.mcp ?? []) {
    if (!MCP_SERVER_NAME_PATTERN.test(access.server)) {
      throw new TroupeError(
        'usage.invalid_role',
        `Role ${name}: "${access.server}" is not an MCP server name (letters, digits, - and single _).`,
      );
    }
  }
  return Object.freeze({
    name,
    description: definition.description,
    system: definition.system,
    tools: Object.freeze(tools),
    requiredTools: Object.freeze(requiredTools),
    model: definition.model,
    maxSteps,
    publishes: Object.freeze([...(definition.publishes ?? [])]),
    subscribes: Object.freeze([...(definition.subscribes ?? [])]),
    output: definition.output,
    retry: Object.freeze(retry),
    timeoutMs: definition.timeoutMs,
    canDelegate: definition.canDelegate ?? false,
    mailbox: definition.mailbox,
    budget: definition.budget,
    stream: definition.stream,
    compression:
      definition.compression === undefined || definition.compression === false
        ? definition.compression
        : Object.freeze({ ...definition.compression }),
    mcp: Object.freeze((definition.mcp ?? []).map((access) => ({ ...access }))),
  });
}

// A role's tool entries as names; JavaScript callers get told what an entry must be.
function toolNames(
  role: string,
  option: string,
  entries: readonly RoleTool[] | undefined,
): RoleToolName[] {
  return (entries ?? []).map((entry: unknown) => {
    if (typeof entry === 'string' && entry !== '') return entry as RoleToolName;
    const tool = entry as Partial<AnyTool> | null;
    if (typeof tool === 'object' && tool !== null && typeof tool.name === 'string')
      return tool.name as RoleToolName;
    throw new TroupeError(
      'usage.invalid_role',
      `Role ${role}: ${option} holds ${JSON.stringify(entry)}; list tool names (strings) or tools made with defineTool.`,
    );
  });
}

/** True for a value made by defineRole (or shaped like one). */
export function isRole(value: unknown): value is AnyRole {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<AnyRole>;
  return (
    typeof candidate.name === 'string' &&
    typeof candidate.system === 'string' &&
    Array.isArray(candidate.tools)
  );
}

/**
 * The role as a worker sees it: plain data, with the channel and output
 * rules spelled out in the system prompt, and its compression merged over
 * the run's (`runCompression`, see mergeCompression).
 */
export function toRoleSpec(role: AnyRole, runCompression?: CompressionSetting): RoleSpec {
  const spec: RoleSpec = {
    name: role.name,
    system: systemPrompt(role),
    tools: [...role.tools],
    maxSteps: role.maxSteps,
    publishes: role.publishes.map(toChannelSpec),
    subscribes: role.subscribes.map((channel) => channel.name),
    canDelegate: role.canDelegate,
  };
  if (role.budget !== undefined) spec.budget = { ...role.budget };
  if (role.stream !== undefined) spec.stream = role.stream;
  const compression = mergeCompression(runCompression, role.compression);
  if (compression !== undefined)
    spec.compression = compression === false ? false : { ...compression };
  if (role.mcp !== undefined && role.mcp.length > 0) {
    spec.mcp = role.mcp.map((access) => ({ ...access }));
  }
  return spec;
}

function systemPrompt(role: AnyRole): string {
  const parts = [role.system.trim()];
  for (const channel of role.publishes) {
    parts.push(
      `Publish each result on the "${channel.name}" channel with the ${publishToolName(channel.name)} tool as soon as you have it, one call per item; other agents read them while you work.`,
    );
  }
  if (role.subscribes.length > 0) {
    const names = role.subscribes.map((channel) => `"${channel.name}"`).join(', ');
    parts.push(
      `Messages from other agents on the ${names} channel${role.subscribes.length > 1 ? 's' : ''} reach you as user messages that start with [message on channel "<name>" from <agent>]. Work on each as it arrives; a short interim answer is fine. When a channel is closed you get [channel "<name>" closed: no more messages will arrive]; after that, give your complete final answer.`,
    );
  }
  if (role.output !== undefined) {
    parts.push(
      `Your final answer must be a single JSON object, with nothing around it, matching this JSON Schema: ${JSON.stringify(outputJsonSchema(role.output))}`,
    );
  }
  return parts.join('\n\n');
}

function outputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  try {
    return toolJsonSchema(schema);
  } catch {
    return { type: 'object' };
  }
}

/**
 * Parses a final answer against a role's output schema: the JSON object in
 * it (code fences and text around it are tolerated), or a message saying
 * what is wrong.
 */
export function parseRoleOutput(
  role: AnyRole,
  final: string,
): { ok: true; output: unknown } | { ok: false; message: string } {
  if (role.output === undefined) return { ok: true, output: undefined };
  const start = final.indexOf('{');
  const end = final.lastIndexOf('}');
  if (start === -1 || end < start) {
    return {
      ok: false,
      message: `The final answer of a ${role.name} must be a JSON object; it had none.`,
    };
  }
  let data: unknown;
  try {
    data = JSON.parse(final.slice(start, end + 1));
  } catch (error) {
    return {
      ok: false,
      message: `The final answer of a ${role.name} is not valid JSON: ${(error as Error).message}`,
    };
  }
  const parsed = role.output.safeParse(data);
  if (!parsed.success) {
    return {
      ok: false,
      message: `The final answer of a ${role.name} does not fit its output schema:\n${z.prettifyError(parsed.error)}`,
    };
  }
  return { ok: true, output: parsed.data };
}
