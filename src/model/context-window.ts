import type { ModelSpec } from './spec.js';

/**
 * Context windows (prompt plus output, in tokens) of the model families
 * troupe knows, by model-name prefix, longest prefix first. The default
 * model of each provider is here (DEFAULT_MODELS in the CLI); any other
 * model needs `--context-window` (or a role's `compression.contextWindow`)
 * for its history to be compressed.
 */
export const KNOWN_CONTEXT_WINDOWS: readonly (readonly [prefix: string, tokens: number])[] =
  Object.freeze([
    // Anthropic: every Claude 3, 4 and 4.x model takes 200k (1M only behind a beta header).
    ['claude-', 200_000],
    // OpenAI.
    ['gpt-4.1', 1_047_576],
    ['gpt-4o', 128_000],
    ['gpt-5', 400_000],
    ['o3', 200_000],
    ['o4-mini', 200_000],
  ]);

/**
 * The context window of `spec`'s model, in tokens, when KNOWN_CONTEXT_WINDOWS
 * has it; undefined for other models and for the scripted and offline providers.
 */
export function knownContextWindow(spec: ModelSpec): number | undefined {
  if (spec.provider !== 'openai' && spec.provider !== 'anthropic') return undefined;
  const name = spec.model.toLowerCase();
  let best: readonly [string, number] | undefined;
  for (const entry of KNOWN_CONTEXT_WINDOWS) {
    if (name.startsWith(entry[0]) && (best === undefined || entry[0].length > best[0].length))
      best = entry;
  }
  return best?.[1];
}
