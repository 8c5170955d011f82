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

/**
 * The corrective message after a reply that wrote `tool` as text instead of
 * calling it. It says it is troupe's note, so a model does not take it for
 * part of its task (and the loop refuses a tool call that passes it on).
 */
export function defaultNudge(tool: string): string {
  return `troupe's note (not part of your task; never pass it on): your last reply wrote a call to ${tool} as text, so nothing ran. To run a tool, call it through the tool-calling interface. If that reply was your final answer, answer again in plain text.`;
}

/** One line describing a turn's tool calls, for `step` events. */
export function describeToolCalls(toolCalls: readonly ToolCall[]): string {
  let line = '';
  for (let index = 0; index < toolCalls.length; index += 1) {
    const call = toolCalls[index] as ToolCall;
    line += `${index > 0 ? ', ' : ''}${call.name}(${truncateEnd(call.raw, 80)})`;
  }
  return truncateEnd(line, 300);
}

// Fragments of a note shorter than this many words are too common to tell it apart.
const NOTE_FRAGMENT_WORDS = 6;

/**
 * The note (troupe's own message to the model: the nudge, a beforeFinal
 * notice) that a tool call's arguments pass on, if any: some clause of at
 * least six words of it appears in a string argument (case, spacing and
 * punctuation aside). Such a call is refused, so a note never becomes, say,
 * the task of a sub-agent.
 */
export function echoedNote(call: ToolCall, notes: readonly string[]): string | undefined {
  if (notes.length === 0) return undefined;
  const texts: string[] = [];
  collectStrings(call.arguments, texts);
  if (texts.length === 0) texts.push(call.raw);
  const argument = normalize(texts.join('\n'));
  for (const note of notes) {
    const fragments = note
      .split(/[.!?;:()]+\s*/)
      .map(normalize)
      .filter((fragment) => fragment.split(' ').length >= NOTE_FRAGMENT_WORDS);
    if (fragments.some((fragment) => argument.includes(fragment))) return note;
  }
  return undefined;
}

function collectStrings(value: unknown, into: string[]): void {
  if (typeof value === 'string') into.push(value);
  else if (Array.isArray(value)) for (const item of value) collectStrings(item, into);
  else if (typeof value === 'object' && value !== null)
    for (const item of Object.values(value)) collectStrings(item, into);
}

function normalize(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_]+/gu, ' ')
    .trim();
}
