import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelSpec } from '../src/index.js';

/**
 * Small helpers shared by the examples: where the bundled corpus is, simple
 * flags, and the model to use (offline unless a provider is named).
 */

/** The bundled corpus, found from this file whether it runs from examples/ or dist/examples/. */
export function corpusDir(): string {
  let folder = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(folder, 'examples', 'corpus'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error('examples/corpus not found above this file.');
    folder = parent;
  }
  return join(folder, 'examples', 'corpus');
}

/** The value after `--name` on the command line, if any. */
export function flag(name: string): string | undefined {
  const index = process.argv.indexOf(name);
  return index === -1 ? undefined : process.argv[index + 1];
}

/**
 * The model: `--provider offline` (default: troupe's built-in heuristic
 * model, no key), `--provider anthropic` (ANTHROPIC_API_KEY) or
 * `--provider openai` (OPENAI_API_KEY, or `--base-url` for a local server).
 */
export function modelFromFlags(): ModelSpec {
  const provider = flag('--provider') ?? 'offline';
  const model = flag('--model');
  const baseURL = flag('--base-url');
  switch (provider) {
    case 'offline':
      return { provider: 'offline' };
    case 'anthropic':
      return { provider: 'anthropic', model: model ?? 'claude-sonnet-4-6' };
    case 'openai':
      return {
        provider: 'openai',
        model: model ?? 'gpt-5.4-mini',
        ...(baseURL === undefined ? {} : { baseURL }),
      };
    default:
      throw new Error(`Unknown --provider ${provider}: use offline, anthropic or openai.`);
  }
}

/** `troupe-runs/examples/<name>-<runId>`, absolute. */
export function outDirFor(name: string, runId: string): string {
  return resolve('troupe-runs', 'examples', `${name}-${runId}`);
}
