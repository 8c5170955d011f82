import type { ModelSpec } from './spec.js';

/**
 * `max_tokens` a budgeted call asks for when its spec sets none: the
 * provider's own default can be the model's whole output window (tens of
 * thousands of tokens), which would hold a budget's room for one call.
 */
export const DEFAULT_BUDGETED_MAX_TOKENS = 4096;

/** Below this many output tokens a call is not worth its prompt: it is not sent. */
export const MIN_CALL_OUTPUT_TOKENS = 256;

/** The smallest thinking budget the Anthropic API accepts. */
export const MIN_THINKING_BUDGET_TOKENS = 1024;

/** How many output tokens one call of a model wants, and the fewest it can do with. */
export interface OutputTokenLimits {
  /** The call's `max_tokens` when the budget has room for it. */
  wanted: number;
  /** The fewest worth sending the call for (a thinking model needs its minimum thinking budget and some answer). */
  minimum: number;
}

/**
 * The output tokens a call of `spec` wants and needs, for the tree budget's
 * reservation: `maxTokens` of the spec, or Anthropic's default (4096 plus
 * the thinking budget), or DEFAULT_BUDGETED_MAX_TOKENS.
 */
export function outputTokenLimits(spec: ModelSpec): OutputTokenLimits {
  let wanted = DEFAULT_BUDGETED_MAX_TOKENS;
  let minimum = MIN_CALL_OUTPUT_TOKENS;
  if (spec.provider === 'openai') wanted = spec.maxTokens ?? wanted;
  if (spec.provider === 'anthropic') {
    // As the provider's own default: the thinking budget on top, adaptive or not.
    wanted = spec.maxTokens ?? wanted + (spec.thinking?.budgetTokens ?? 0);
    if (spec.thinking !== undefined && spec.thinking.adaptive !== true)
      minimum += MIN_THINKING_BUDGET_TOKENS;
  }
  return { wanted, minimum: Math.min(minimum, wanted) };
}

/**
 * The thinking budget of an Anthropic call whose `max_tokens` the tree
 * budget capped: the spec's, lowered so that at least MIN_CALL_OUTPUT_TOKENS
 * are left for the answer, never below the API's minimum; undefined when
 * `maxTokens` leaves no room for thinking at all (the call goes without).
 */
export function cappedThinkingBudget(budgetTokens: number, maxTokens: number): number | undefined {
  const room = Math.min(budgetTokens, maxTokens - MIN_CALL_OUTPUT_TOKENS);
  if (room >= MIN_THINKING_BUDGET_TOKENS) return room;
  return maxTokens > MIN_THINKING_BUDGET_TOKENS ? MIN_THINKING_BUDGET_TOKENS : undefined;
}
