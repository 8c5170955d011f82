import type { AgentEvent } from '../events/schema.js';
import { cutChars, oneLine } from './terminal.js';

/** Longest thinking excerpt in the chat layout, in characters. */
export const THINKING_CHARS = 120;
/** Longest tool call (`name(args)`) in the chat layout, in characters. */
export const TOOL_CALL_CHARS = 80;
/** Longest tool result excerpt in the chat layout, in characters. */
export const TOOL_RESULT_CHARS = 60;

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * The layered chat layout of one event: nothing for most events, and for the
 * steps a person follows one line each, indented two spaces: 💭 thinking,
 * 🤔 a tool call, ✅ a tool's result, ❌ a tool's failure with its whole
 * message, ⚠ a library's warning in full, 🗜 a compressed history. The final answer is not here: it is printed flush left by the caller.
 */
export function chatLayout(event: AgentEvent): string[] {
  switch (event.type) {
    case 'model.response':
      return event.thinking === undefined || oneLine(event.thinking) === ''
        ? []
        : [`  💭 ${cutChars(oneLine(event.thinking), THINKING_CHARS)}`];
    case 'tool.call':
      return [`  🤔 ${cutChars(`${event.name}(${json(event.input)})`, TOOL_CALL_CHARS)}`];
    case 'tool.result':
      return event.ok
        ? [`  ✅ ${event.name} → ${cutChars(oneLine(event.content), TOOL_RESULT_CHARS)}`]
        : [`  ❌ ${event.name} failed: ${oneLine(event.error?.message ?? event.content)}`];
    case 'warning.raised':
      return [`  ⚠ ${oneLine(event.message)}`];
    case 'history.compressed':
      return [
        `  🗜 history compressed: ${event.foldedMessages ?? event.beforeMessages - event.afterMessages + 1} earlier messages folded into a summary (~${event.beforeTokens} → ~${event.afterTokens} tokens)`,
      ];
    default:
      return [];
  }
}
