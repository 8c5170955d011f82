import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Command, InvalidArgumentError } from 'commander';
import { z } from 'zod';
import { type CompressionSetting, DEFAULT_COMPRESS_AT } from '../../agent/history.js';
import { errorMessage, TroupeError } from '../../errors.js';
import type { McpServers } from '../../mcp/config.js';
import { type ModelSpec, ModelSpecSchema } from '../../model/model.js';
import { type AnyRole, isRole } from '../../roles/role.js';
import { checkRoles } from '../../roles/role-check.js';
import { RoleRegistry } from '../../roles/role-registry.js';
import { parseTiers } from '../../tools/permissions.js';
import type { ExecLimitsOverride, SandboxPolicy } from '../../tools/sandbox-policy.js';
import type { AnyTool, PermissionTier } from '../../tools/tool.js';
import { loadToolModules } from '../../tools/tool-modules.js';
import { usageError } from '../context.js';

/** The model a provider uses when `--model` is not given. */
export const DEFAULT_MODELS = Object.freeze({
  anthropic: 'claude-sonnet-4-6',
  openai: 'gpt-5.4-mini',
});

/** The message for a run with no provider and no key in the environment. */
export const NO_KEY_MESSAGE = [
  'No model provider: neither ANTHROPIC_API_KEY nor OPENAI_API_KEY is set.',
  'Set one of them in the environment (troupe reads keys only from there), or pick a provider with',
  '--provider anthropic|openai, or run without any key on the built-in heuristic model with',
  '--provider offline (for example: troupe demo).',
].join('\n');

/** The provider flags shared by run, chat and demo. */
export interface ProviderFlags {
  provider?: string | undefined;
  model?: string | undefined;
  baseUrl?: string | undefined;
  /** `--thinking [budget]`: true alone, else the budget (anthropic) or effort (openai) as typed. */
  thinking?: string | true | undefined;
}

/** Thinking budget of `--thinking` without a value, for Anthropic (tokens). */
export const DEFAULT_THINKING_BUDGET = 4096;
const EFFORTS = ['minimal', 'low', 'medium', 'high'] as const;

/** Help of `--thinking [budget]` (run, chat). */
export const THINKING_FLAG_HELP = `let the model think before it answers: anthropic extended thinking with a token budget (default ${DEFAULT_THINKING_BUDGET}, at least 1024, e.g. 16k; "adaptive" for models that choose), or openai reasoning effort (minimal, low, medium (default), high)`;

// The spec with `--thinking` applied, or a usage error that says what the provider takes.
function withThinking(spec: ModelSpec, thinking: string | true): ModelSpec {
  if (spec.provider === 'anthropic') {
    if (thinking === true) return { ...spec, thinking: { budgetTokens: DEFAULT_THINKING_BUDGET } };
    if (thinking === 'adaptive') {
      return { ...spec, thinking: { budgetTokens: DEFAULT_THINKING_BUDGET, adaptive: true } };
    }
    let budget: number;
    try {
      budget = parseTokenCount(thinking);
    } catch {
      throw usageError(
        `--thinking takes a token budget for anthropic, such as 4096 or 16k (or "adaptive"), got "${thinking}".`,
      );
    }
    if (budget < 1024) {
      throw usageError(
        `--thinking ${thinking}: Anthropic's thinking budget is at least 1024 tokens; try --thinking 4k.`,
      );
    }
    return { ...spec, thinking: { budgetTokens: budget } };
  }
  if (spec.provider === 'openai') {
    const effort = thinking === true ? 'medium' : thinking.toLowerCase();
    const known = EFFORTS.find((name) => name === effort);
    if (known === undefined) {
      throw usageError(
        `--thinking with --provider openai takes a reasoning effort: ${EFFORTS.join(', ')} (a token budget is for anthropic), got "${String(thinking)}".`,
      );
    }
    return { ...spec, reasoningEffort: known };
  }
  throw usageError(
    `--thinking needs a model that thinks: use --provider anthropic or --provider openai (the ${spec.provider} model does not think).`,
  );
}

function present(env: NodeJS.ProcessEnv, name: string): boolean {
  const value = env[name];
  return value !== undefined && value.trim() !== '';
}

/**
 * The ModelSpec for the provider flags. The provider defaults from the
 * environment: ANTHROPIC_API_KEY, then OPENAI_API_KEY. A missing key throws
 * `usage.missing_key` with a message naming both variables and `--provider offline`.
 */
export function resolveModelSpec(flags: ProviderFlags, env: NodeJS.ProcessEnv): ModelSpec {
  const provider =
    flags.provider ??
    (present(env, 'ANTHROPIC_API_KEY')
      ? 'anthropic'
      : present(env, 'OPENAI_API_KEY')
        ? 'openai'
        : undefined);
  if (provider === undefined) throw new TroupeError('usage.missing_key', NO_KEY_MESSAGE);
  let spec: ModelSpec;
  switch (provider) {
    case 'offline':
      if (flags.model !== undefined || flags.baseUrl !== undefined) {
        throw usageError('--model and --base-url do not apply to --provider offline.');
      }
      spec = { provider: 'offline' };
      break;
    case 'anthropic':
      if (!present(env, 'ANTHROPIC_API_KEY')) {
        throw new TroupeError(
          'usage.missing_key',
          `--provider anthropic needs ANTHROPIC_API_KEY in the environment. Set it, use --provider openai with OPENAI_API_KEY, or --provider offline.`,
        );
      }
      spec = {
        provider: 'anthropic',
        model: flags.model ?? DEFAULT_MODELS.anthropic,
        ...(flags.baseUrl === undefined ? {} : { baseURL: flags.baseUrl }),
      };
      break;
    case 'openai':
      // A local OpenAI-compatible server (--base-url) may need no key.
      if (!present(env, 'OPENAI_API_KEY') && flags.baseUrl === undefined) {
        throw new TroupeError(
          'usage.missing_key',
          `--provider openai needs OPENAI_API_KEY in the environment (or --base-url for a local OpenAI-compatible server). Set it, or use --provider offline.`,
        );
      }
      spec = {
        provider: 'openai',
        model: flags.model ?? DEFAULT_MODELS.openai,
        ...(flags.baseUrl === undefined ? {} : { baseURL: flags.baseUrl }),
      };
      break;
    default:
      throw usageError(`Unknown provider "${provider}". Use openai, anthropic or offline.`);
  }
  if (flags.baseUrl !== undefined) checkBaseUrl(flags.baseUrl);
  if (flags.thinking !== undefined) spec = withThinking(spec, flags.thinking);
  const parsed = ModelSpecSchema.safeParse(spec);
  if (!parsed.success) throw usageError(`Invalid model options: ${z.prettifyError(parsed.error)}`);
  return spec;
}

/** Commander parser: a whole number of at least 1. */
export function parsePositiveInteger(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number) || number < 1) {
    throw new InvalidArgumentError('expected a whole number of at least 1.');
  }
  return number;
}

/** Commander parser: a token count such as `20000`, `50k` or `1.5M`. */
export function parseTokenCount(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kKmM]?)$/.exec(value.trim());
  if (match === null)
    throw new InvalidArgumentError('expected a token count such as 20000, 50k or 1.5M.');
  const unit = (match[2] ?? '').toLowerCase();
  const tokens = Math.round(Number(match[1]) * (unit === 'k' ? 1e3 : unit === 'm' ? 1e6 : 1));
  if (tokens < 1) throw new InvalidArgumentError('expected at least 1 token.');
  return tokens;
}

/** Commander parser: a share of the context window, `0.6` or `60%` (more than 0, less than 1). */
export function parseShare(value: string): number {
  const text = value.trim();
  const percent = text.endsWith('%');
  const number = Number(percent ? text.slice(0, -1) : text) / (percent ? 100 : 1);
  if (text === '' || !Number.isFinite(number) || number <= 0 || number >= 1)
    throw new InvalidArgumentError('expected a share of the window such as 0.6 or 60%.');
  return number;
}

/** The history compression flags of run and chat. */
export interface CompressionFlags {
  contextWindow?: number | undefined;
  compressAt?: number | undefined;
  /** False with `--no-compress`. */
  compress?: boolean | undefined;
}

/** Adds `--context-window`, `--compress-at` and `--no-compress` (run, chat). */
export function addCompressionOptions(command: Command): Command {
  return command
    .option(
      '--context-window <tokens>',
      "the model's context window (e.g. 128k), for a model troupe does not know; known for the default models",
      parseTokenCount,
    )
    .option(
      '--compress-at <share>',
      `compress a history when it passes this share of the context window (default ${DEFAULT_COMPRESS_AT}, e.g. 0.6 or 60%)`,
      parseShare,
    )
    .option(
      '--no-compress',
      'never compress a history: keep every message (a long run may outgrow the window)',
    );
}

/**
 * The compression setting of the flags: `false` for `--no-compress`, the
 * window and share when given, undefined for the defaults (on for models
 * whose window is known).
 */
export function compressionSettingOf(flags: CompressionFlags): CompressionSetting | undefined {
  if (flags.compress === false) {
    if (flags.contextWindow !== undefined || flags.compressAt !== undefined)
      throw usageError(
        '--no-compress turns compression off; drop --context-window and --compress-at, or drop --no-compress.',
      );
    return false;
  }
  if (flags.contextWindow !== undefined && flags.contextWindow < 1024)
    throw usageError(
      `--context-window ${flags.contextWindow}: a context window is at least 1024 tokens.`,
    );
  if (flags.contextWindow === undefined && flags.compressAt === undefined) return undefined;
  return {
    ...(flags.contextWindow === undefined ? {} : { contextWindow: flags.contextWindow }),
    ...(flags.compressAt === undefined ? {} : { at: flags.compressAt }),
  };
}

/** Commander parser: a duration, `90` (seconds), `90s`, `1500ms`, `10m` or `1h`; returns milliseconds. */
export function parseDuration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(value.trim());
  if (match === null)
    throw new InvalidArgumentError('expected a duration such as 90, 90s, 10m or 1h.');
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? 's'] ?? 1000;
  const ms = Math.round(Number(match[1]) * factor);
  if (ms < 1) throw new InvalidArgumentError('expected a duration above zero.');
  return ms;
}

/** Commander parser: permission tiers (`read,network`, or `all`). */
export function parseAllow(value: string): PermissionTier[] {
  try {
    return parseTiers(value);
  } catch (error) {
    throw new InvalidArgumentError(errorMessage(error));
  }
}

/** The absolute path of an existing folder, or a usage error naming the flag. */
export function resolveFolder(cwd: string, path: string, flag: string): string {
  const absolute = resolve(cwd, path);
  if (!existsSync(absolute) || !statSync(absolute).isDirectory()) {
    throw usageError(`${flag} ${path}: no such folder (${absolute}).`);
  }
  return absolute;
}

/**
 * Loads custom roles from an ES module: every exported role made with
 * defineRole, and every exported array of them.
 */
export async function loadRoles(cwd: string, file: string): Promise<AnyRole[]> {
  const absolute = resolve(cwd, file);
  if (!existsSync(absolute)) throw usageError(`--roles ${file}: no such file (${absolute}).`);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (error) {
    throw usageError(`--roles ${file}: the module failed to load: ${errorMessage(error)}`);
  }
  const roles: AnyRole[] = [];
  for (const value of Object.values(module)) {
    if (isRole(value)) roles.push(value);
    else if (Array.isArray(value)) roles.push(...value.filter(isRole));
  }
  if (roles.length === 0) {
    throw usageError(
      `--roles ${file}: the module exports no roles (make them with defineRole and export them).`,
    );
  }
  return [...new Map(roles.map((role) => [role.name, role])).values()];
}

/** Commander collector for a repeatable option: each use adds one value. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * `--tools <module>` files: each resolved against `cwd`, loaded once here so
 * a missing or broken module (or one that exports no tool) is a usage error
 * before the run starts. Returns the absolute paths, which the worker threads
 * load again, and the tools' names by module.
 */
export async function loadToolFlags(
  cwd: string,
  files: readonly string[],
): Promise<{ paths: string[]; names: Map<string, string[]>; tools: AnyTool[] }> {
  const paths: string[] = [];
  const names = new Map<string, string[]>();
  const loaded: AnyTool[] = [];
  for (const file of files) {
    const absolute = resolve(cwd, file);
    if (!existsSync(absolute)) throw usageError(`--tools ${file}: no such file (${absolute}).`);
    let tools: Awaited<ReturnType<typeof loadToolModules>>;
    try {
      tools = await loadToolModules([absolute]);
    } catch (error) {
      throw usageError(`--tools ${file}: ${errorMessage(error)}`);
    }
    paths.push(absolute);
    loaded.push(...tools);
    names.set(
      file,
      tools.map((tool) => tool.name),
    );
  }
  return { paths, names, tools: loaded };
}

/**
 * Checks a run's roles before anything starts, fitted to its grants as the
 * runtime will fit them (see checkRoles): unknown tools, tiers not granted
 * (with the `--allow` fix), unknown channels and MCP servers, bad models.
 * Throws a usage error (exit 2) naming each mistake.
 */
export function checkRunRoles(
  settings: {
    roles: readonly AnyRole[];
    grants: readonly PermissionTier[];
    mcp?: McpServers | undefined;
    env: NodeJS.ProcessEnv;
  },
  tools: readonly AnyTool[],
): void {
  checkRoles(new RoleRegistry(settings.roles, settings.grants).all(), {
    grants: settings.grants,
    userTools: new Map(tools.map((tool) => [tool.name, tool])),
    mcp: settings.mcp,
    env: settings.env,
    complete: true,
  });
}

/** The sandbox flags shared by run and chat. */
export interface SandboxFlags {
  allowProtectedWrites?: boolean | undefined;
  execLimit?: ExecLimitsOverride | undefined;
  allowDomain?: string[] | undefined;
}

const LIMIT_NAMES: Readonly<Record<string, keyof ExecLimitsOverride>> = {
  memory: 'memoryBytes',
  processes: 'processes',
  'file-size': 'fileSizeBytes',
  cpu: 'cpuSeconds',
  'open-files': 'openFiles',
  tmp: 'tmpBytes',
  output: 'outputBytes',
};

const BYTE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
};

/**
 * Parses one `--exec-limit name=value` (repeatable) into the limits so far:
 * memory, file-size, tmp and output take bytes with k/m/g suffixes (`2g`),
 * cpu takes seconds (`90`, `90s`, `2m`), processes and open-files counts.
 */
export function parseExecLimit(
  value: string,
  previous: ExecLimitsOverride | undefined,
): ExecLimitsOverride {
  const match = /^\s*([a-z-]+)\s*=\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const key = match === null ? undefined : LIMIT_NAMES[match[1]?.toLowerCase() ?? ''];
  const names = Object.keys(LIMIT_NAMES).join(', ');
  if (match === null || key === undefined) {
    throw new InvalidArgumentError(
      `expected name=value with a name among ${names}, e.g. --exec-limit memory=1g (got "${value}").`,
    );
  }
  const amount = Number(match[2]);
  const unit = (match[3] ?? '').toLowerCase().replace(/i?b$/, '');
  let parsed: number | undefined;
  if (key === 'cpuSeconds') {
    parsed = unit === '' || unit === 's' ? amount : unit === 'm' ? amount * 60 : undefined;
  } else if (key === 'processes' || key === 'openFiles') {
    parsed = unit === '' && Number.isInteger(amount) ? amount : undefined;
  } else {
    const factor = BYTE_UNITS[unit];
    parsed = factor === undefined ? undefined : Math.floor(amount * factor);
  }
  if (parsed === undefined || parsed <= 0) {
    throw new InvalidArgumentError(
      `cannot read "${value}": memory, file-size, tmp and output take bytes (512m, 2g), cpu takes seconds (90, 2m), processes and open-files a whole number.`,
    );
  }
  return { ...previous, [key]: parsed };
}

/** Collects a repeatable `--allow-domain <pattern>`: `example.com` or `*.example.com`. */
export function parseAllowDomain(value: string, previous: string[] | undefined): string[] {
  const pattern = value.trim().toLowerCase();
  if (!/^(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*$/.test(pattern)) {
    throw new InvalidArgumentError(
      `"${value}" is not a host name pattern; give example.com or *.example.com.`,
    );
  }
  return [...(previous ?? []), pattern];
}

/** Adds --allow-protected-writes, --exec-limit and --allow-domain to a command. */
export function addSandboxOptions(command: Command): Command {
  return command
    .option(
      '--allow-protected-writes',
      'let tools change files other programs run on their own (.git, .envrc, .vscode, CI files …); see docs/SECURITY.md',
    )
    .option(
      '--exec-limit <name=value>',
      'a resource limit for shell and python (repeatable): memory=2g, processes=256, file-size=256m, cpu=120, open-files=1024, tmp=256m, output=200k',
      parseExecLimit,
    )
    .option(
      '--allow-domain <pattern>',
      'hosts fetch_url and exec egress may reach (repeatable): example.com or *.example.com; default any public host',
      parseAllowDomain,
    );
}

/** The sandbox policy of the flags, or undefined when they set nothing. */
export function sandboxPolicyOf(flags: SandboxFlags): SandboxPolicy | undefined {
  const policy: SandboxPolicy = {
    ...(flags.allowProtectedWrites === true ? { allowProtectedWrites: true } : {}),
    ...(flags.execLimit === undefined ? {} : { limits: flags.execLimit }),
    ...(flags.allowDomain === undefined ? {} : { allowDomains: flags.allowDomain }),
  };
  return Object.keys(policy).length === 0 ? undefined : policy;
}

/** A usage error unless `value` is an http(s) URL (`localhost:11434` alone is not: the scheme is missing). */
export function checkBaseUrl(value: string): void {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.host === ''
  ) {
    throw usageError(
      `--base-url ${value} is not an http(s) URL. Write it whole, e.g. --base-url http://${value.replace(/^[a-z]+:\/\//i, '')}${/\/v1\/?$/.test(value) ? '' : '/v1'} for a local OpenAI-compatible server.`,
    );
  }
}
