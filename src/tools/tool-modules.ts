import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage, TroupeError } from '../errors.js';
import type { AnyTool } from './tool.js';

/** True for a value shaped like a tool made by defineTool. */
export function isTool(value: unknown): value is AnyTool {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<AnyTool>;
  return (
    typeof candidate.name === 'string' &&
    typeof candidate.description === 'string' &&
    typeof candidate.execute === 'function' &&
    typeof candidate.jsonSchema === 'object' &&
    Array.isArray(candidate.tiers) &&
    typeof (candidate.parameters as { safeParse?: unknown } | undefined)?.safeParse === 'function'
  );
}

/**
 * Loads user tool modules: ESM files (absolute paths) whose exports are tools
 * made by defineTool, or arrays of them. Each thread loads them itself:
 * functions never cross a thread. Throws `usage.invalid_option` naming the
 * module when one cannot be loaded or exports no tool.
 */
export async function loadToolModules(paths: readonly string[]): Promise<AnyTool[]> {
  const tools: AnyTool[] = [];
  for (const path of paths) {
    if (!isAbsolute(path)) {
      throw new TroupeError(
        'usage.invalid_option',
        `Tool module "${path}" must be an absolute path (resolve it against the working directory first).`,
      );
    }
    let module: Record<string, unknown>;
    try {
      module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (error) {
      throw new TroupeError(
        'usage.invalid_option',
        `Tool module "${path}" could not be loaded: ${errorMessage(error)}. It must be a JavaScript ES module (.js or .mjs; build TypeScript first).`,
        { cause: error },
      );
    }
    const found: AnyTool[] = [];
    for (const value of Object.values(module)) {
      if (isTool(value)) found.push(value);
      else if (Array.isArray(value)) found.push(...value.filter(isTool));
    }
    if (found.length === 0) {
      throw new TroupeError(
        'usage.invalid_option',
        `Tool module "${path}" exports no tool; export tools made with defineTool (or an array of them).`,
      );
    }
    tools.push(...found);
  }
  return tools;
}
