import { z } from 'zod';
import { TroupeError } from '../errors.js';
import { AnthropicModel } from './providers/anthropic.js';
import { OfflineModel } from './providers/offline.js';
import { OpenAIModel } from './providers/openai.js';
import { ScriptedModel } from './providers/scripted.js';
import { type Model, type ModelSpec, ModelSpecSchema } from './spec.js';

export * from './spec.js';

/**
 * Builds a model from its spec. Keys are read from `env` (default
 * `process.env`) when the first request is made, never stored in the spec.
 *
 * @example
 * const model = createModel({ provider: 'anthropic', model: 'claude-sonnet-4-6' });
 */
export function createModel(spec: ModelSpec, env: NodeJS.ProcessEnv = process.env): Model {
  const parsed = ModelSpecSchema.safeParse(spec);
  if (!parsed.success) {
    throw new TroupeError(
      'usage.invalid_option',
      `Invalid model spec: ${z.prettifyError(parsed.error)}`,
    );
  }
  const data = parsed.data;
  switch (data.provider) {
    case 'scripted':
      return new ScriptedModel(data.script);
    case 'openai':
      return new OpenAIModel(data, env);
    case 'anthropic':
      return new AnthropicModel(data, env);
    case 'offline':
      return new OfflineModel(data, env);
  }
}

/**
 * False for the models troupe implements without an SDK (scripted, offline),
 * which never print a warning: an agent on one of them runs without a
 * warning scope. The scope (an AsyncLocalStorage) turns on promise hooks in
 * its thread, a cost on every promise (~10% of an agent turn's allocations
 * in the fan-out benchmark) paid only where an SDK can warn.
 */
export function raisesWarnings(model: Model): boolean {
  return !(model instanceof ScriptedModel || model instanceof OfflineModel);
}
