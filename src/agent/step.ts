import { TroupeError } from '../errors.js';
import type { Model } from '../model/model.js';
import type { ModelRequest, ModelResponse, ToolCall } from '../model/types.js';
import { truncateEnd } from '../util/truncate.js';

/** A streamed delta, as the agent reports it in `model.delta` events. */
export interface Delta {
  kind: 'text' | 'thinking' | 'tool_call';
  text: string;
}

/**
 * Calls the model once. With `stream`, deltas are reported as they arrive
 * and the stream's `finish` part is the response; a stream that ends without
 * one was cut off, which is an error, never a silently short answer.
 */
export async function callModel(
  model: Model,
  request: ModelRequest,
  options: { stream: boolean; signal: AbortSignal; onDelta: (delta: Delta) => void },
): Promise<ModelResponse> {
  if (!options.stream) return model.complete(request, { signal: options.signal });
  for await (const part of model.stream(request, { signal: options.signal })) {
    switch (part.type) {
      case 'text-delta':
        options.onDelta({ kind: 'text', text: part.text });
        break;
      case 'thinking-delta':
        options.onDelta({ kind: 'thinking', text: part.text });
        break;
      case 'tool-call-delta':
        options.onDelta({ kind: 'tool_call', text: part.argumentsDelta });
        break;
      case 'finish':
        return part.response;
    }
  }
  throw new TroupeError(
    'model.stream_interrupted',
    'The model stream ended before the reply was complete.',
  );
}

const CALL_LANGUAGE =
  /\b(?:i(?:'ll| will| am going to|'m going to)|let me|calling|now (?:call|use|run)|i need to (?:call|use|run))\b/i;

/**
 * True when a reply without tool calls reads as if it made one: it names one
 * of the agent's tools together with calling language ("Let me call
 * read_file…") or call syntax (`read_file(`, `"name": "read_file"`, a
 * `<tool_call>` tag).
 */
export function looksLikeFakeToolCall(content: string, toolNames: readonly string[]): boolean {
  if (content.includes('<tool_call>') || content.includes('<function_call>')) return true;
  for (const name of toolNames) {
    if (!content.includes(name)) continue;
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (new RegExp(`\\b${escaped}\\s*\\(`).test(content)) return true;
    if (new RegExp(`"(?:name|tool|function)"\\s*:\\s*"${escaped}"`).test(content)) return true;
    if (CALL_LANGUAGE.test(content)) return true;
  }
  return false;
}

/** The default corrective message after a fake tool call. */
export const DEFAULT_NUDGE =
  'You described a tool call in text but did not make one, so nothing ran. To use a tool, call it through the tool-calling interface. If you need no tool, give your final answer.';

/** One line describing a turn's tool calls, for `step` events. */
export function describeToolCalls(toolCalls: readonly ToolCall[]): string {
  let line = '';
  for (let index = 0; index < toolCalls.length; index += 1) {
    const call = toolCalls[index] as ToolCall;
    line += `${index > 0 ? ', ' : ''}${call.name}(${truncateEnd(call.raw, 80)})`;
  }
  return truncateEnd(line, 300);
}
