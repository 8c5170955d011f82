import { z } from 'zod';
import { type ErrorCode, errorMessage, isTroupeError, TroupeError } from '../errors.js';
import type { ToolCall, ToolSchema } from '../model/types.js';
import { truncateMiddle } from '../util/truncate.js';
import { coerceToSchema } from './coerce.js';
import { type AnyTool, type ToolContext, toolSchema } from './tool.js';

/** What a tool call produced. Failures are results too: the model reads `content` and acts on it. */
export type ToolResult =
  | { ok: true; content: string }
  | { ok: false; content: string; error: { code: ErrorCode; message: string } };

/** Options for a ToolRegistry. */
export interface ToolRegistryOptions {
  /** Results longer than this are cut, keeping head and tail (default 16,000 characters). */
  maxResultChars?: number;
}

const DEFAULT_MAX_RESULT_CHARS = 16_000;

/**
 * A set of tools an agent may call. `call()` never throws: an unknown tool, a
 * tool outside this agent's set, invalid JSON, a schema violation, a missing
 * permission and a thrown error all come back as `{ ok: false }` results
 * whose content tells the model what went wrong and what to do next.
 */
export class ToolRegistry {
  readonly #tools: ReadonlyMap<string, AnyTool>;
  // Tools of the registry this one was narrowed from: known, but not this agent's.
  readonly #outside: ReadonlySet<string>;
  readonly #maxResultChars: number;
  #schemas: ToolSchema[] | undefined;

  constructor(
    tools: readonly AnyTool[] = [],
    options: ToolRegistryOptions = {},
    outside: ReadonlySet<string> = new Set(),
  ) {
    const map = new Map<string, AnyTool>();
    for (const tool of tools) {
      if (map.has(tool.name)) {
        throw new TroupeError(
          'usage.invalid_option',
          `Two tools are named "${tool.name}"; tool names must be unique within a registry.`,
        );
      }
      map.set(tool.name, tool);
    }
    this.#tools = map;
    this.#outside = outside;
    this.#maxResultChars = options.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS;
  }

  /** Tool names, in registration order. */
  get names(): string[] {
    return [...this.#tools.keys()];
  }

  /** Number of tools. */
  get size(): number {
    return this.#tools.size;
  }

  /** The tool called `name`, if this registry has it. */
  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }

  /** True when this registry has a tool called `name`. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** Every tool. */
  list(): AnyTool[] {
    return [...this.#tools.values()];
  }

  /** What the model sees: one schema per tool. */
  schemas(): readonly ToolSchema[] {
    // A registry never changes after construction; agents ask on every model call.
    this.#schemas ??= this.list().map(toolSchema);
    return this.#schemas;
  }

  /** A registry with only the named tools. An unknown name throws `usage.unknown_tool`. */
  narrow(names: readonly string[]): ToolRegistry {
    const unknown = names.filter((name) => !this.#tools.has(name));
    if (unknown.length > 0) {
      throw new TroupeError(
        'usage.unknown_tool',
        `Unknown tool${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}. Known tools: ${this.names.join(', ') || '(none)'}.`,
      );
    }
    const kept = names.map((name) => this.#tools.get(name) as AnyTool);
    const outside = new Set([...this.#outside, ...this.names.filter((n) => !names.includes(n))]);
    return new ToolRegistry(kept, { maxResultChars: this.#maxResultChars }, outside);
  }

  /** A registry with these tools added. */
  with(tools: readonly AnyTool[]): ToolRegistry {
    return new ToolRegistry(
      [...this.list(), ...tools],
      { maxResultChars: this.#maxResultChars },
      this.#outside,
    );
  }

  /** Runs one tool call. Resolves, never rejects. */
  async call(toolCall: ToolCall, context: ToolContext): Promise<ToolResult> {
    try {
      return await this.#call(toolCall, context);
    } catch (error) {
      // #call handles every expected failure; this catches bugs, so the loop still goes on.
      return failure('tool.failed', `Tool ${toolCall.name} failed: ${errorMessage(error)}`);
    }
  }

  async #call(toolCall: ToolCall, context: ToolContext): Promise<ToolResult> {
    const tool = this.#tools.get(toolCall.name);
    if (tool === undefined) {
      const available = this.names.join(', ') || '(none)';
      if (this.#outside.has(toolCall.name)) {
        return failure(
          'tool.not_allowed',
          `The tool "${toolCall.name}" is not in your tool set, so it was not run. Your tools: ${available}.`,
        );
      }
      return failure(
        'tool.unknown',
        `There is no tool named "${toolCall.name}". Available tools: ${available}. Call one of those.`,
      );
    }

    let input: unknown;
    const raw = toolCall.raw.trim();
    if (raw === '') {
      input = {};
    } else {
      try {
        input = JSON.parse(raw);
      } catch (error) {
        return failure(
          'tool.invalid_json',
          `The arguments for ${tool.name} are not valid JSON (${errorMessage(error)}). Send a JSON object matching the tool's parameters: ${JSON.stringify(tool.jsonSchema)}`,
        );
      }
    }

    const parsed = tool.parameters.safeParse(coerceToSchema(input, tool.parameters));
    if (!parsed.success) {
      return failure(
        'tool.invalid_input',
        `Invalid arguments for ${tool.name}:\n${z.prettifyError(parsed.error)}\nFix the arguments and call ${tool.name} again.`,
      );
    }

    const missing = tool.tiers.filter((tier) => !context.grants.includes(tier));
    if (missing.length > 0) {
      return failure(
        'permission.denied',
        `${tool.name} needs the ${missing.join(', ')} permission, which this run did not grant (the user can grant it with --allow ${missing.join(',')}). Do the task without it.`,
      );
    }

    if (context.signal.aborted) {
      return failure('cancelled', `${tool.name} was not run: the agent was cancelled.`);
    }

    try {
      const output = await tool.execute(parsed.data, context);
      return { ok: true, content: truncateMiddle(stringifyOutput(output), this.#maxResultChars) };
    } catch (error) {
      if (context.signal.aborted) {
        return failure('cancelled', `${tool.name} was stopped: the agent was cancelled.`);
      }
      const code: ErrorCode = isTroupeError(error) ? error.code : 'tool.failed';
      return failure(code, truncateMiddle(errorMessage(error), this.#maxResultChars));
    }
  }
}

function failure(code: ErrorCode, message: string): ToolResult {
  return { ok: false, content: `Error: ${message}`, error: { code, message } };
}

function stringifyOutput(output: unknown): string {
  if (typeof output === 'string') return output;
  if (output === undefined) return '(no output)';
  try {
    return JSON.stringify(output, null, 2) ?? String(output);
  } catch {
    return String(output);
  }
}
