/**
 * `troupe/models`: model specs, the provider adapters (OpenAI-compatible,
 * Anthropic, the built-in offline model) and the neutral message types.
 */

export type {
  AnthropicSpec,
  Model,
  ModelSpec,
  OfflineSpec,
  OpenAISpec,
  ScriptedSpec,
} from '../model/model.js';
export { createModel, describeModel, ModelSpecSchema } from '../model/model.js';
export { AnthropicModel } from '../model/providers/anthropic.js';
export { OFFLINE_MODEL_NAME, OfflineModel } from '../model/providers/offline.js';
export { OpenAIModel } from '../model/providers/openai.js';
export { redactSpec } from '../model/providers/redact-spec.js';
export type {
  AssistantMessage,
  Message,
  ModelCallOptions,
  ModelRequest,
  ModelResponse,
  ModelStreamPart,
  ThinkingPart,
  ToolCall,
  ToolMessage,
  ToolSchema,
  Usage,
} from '../model/types.js';
export { addUsage, emptyUsage, MessageSchema, totalTokens } from '../model/types.js';
