import { TroupeError } from '../../errors.js';
import type {
  AssistantMessage,
  Message,
  ModelRequest,
  ToolCall,
  ToolMessage,
  ToolSchema,
} from '../types.js';

// Same rule as tools/tool.ts; restated because model/ must not import tools/.
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The content of the synthetic result given to a tool call that never got
 * one (the run was cancelled between the model's reply and the tool's
 * result, or history lost it). Both APIs reject a call without a result.
 */
export const MISSING_TOOL_RESULT =
  'No result: this tool call did not finish (the run was cancelled or the result was lost). Call the tool again if you still need it.';

/** A request both wire converters can map one to one. */
export interface PreparedRequest {
  /** Leading system messages, in order. */
  system: string[];
  /** The rest of the conversation, tool calls and results paired (see {@link pairToolResults}). */
  messages: Message[];
  /** Tools with valid names and parameters that are JSON Schemas of type object. */
  tools: ToolSchema[];
}

/**
 * The provider-independent half of building a request: splits off the
 * leading system messages, pairs tool calls with results and checks the
 * tools. Throws `usage.invalid_option` for a tool no provider would accept,
 * before anything is sent.
 */
export function prepareRequest(request: ModelRequest): PreparedRequest {
  const system: string[] = [];
  let start = 0;
  for (const message of request.messages) {
    if (message.role !== 'system') break;
    if (message.content.length > 0) system.push(message.content);
    start += 1;
  }
  return {
    system,
    messages: pairToolResults(request.messages.slice(start)),
    tools: (request.tools ?? []).map(checkTool),
  };
}

function checkTool(tool: ToolSchema): ToolSchema {
  if (!TOOL_NAME_PATTERN.test(tool.name)) {
    throw new TroupeError(
      'usage.invalid_option',
      `Invalid tool name "${tool.name}": providers accept only names matching ${TOOL_NAME_PATTERN}.`,
    );
  }
  const type = tool.parameters['type'];
  if (type === 'object') return tool;
  if (type === undefined) {
    // A schema without a type but with (or without) properties describes an object.
    return { ...tool, parameters: { type: 'object', properties: {}, ...tool.parameters } };
  }
  throw new TroupeError(
    'usage.invalid_option',
    `Tool "${tool.name}": parameters must be a JSON Schema of type "object", got type ${JSON.stringify(type)}. Wrap the parameters in an object.`,
  );
}

/**
 * Repairs a neutral conversation so that tool calls and results pair up the
 * way both provider APIs demand, before any wire conversion:
 *
 * - each assistant message with tool calls is followed directly by one tool
 *   message per call, in call order (results found later in the same turn,
 *   e.g. after a user message, are moved up);
 * - a call with no result gets a synthetic error result ({@link MISSING_TOOL_RESULT});
 * - a tool message that answers no call of the assistant message before it
 *   (an orphan, or a second result for one call) becomes a user message
 *   quoting it, so its information is kept but the pairing stays valid;
 * - tool-call ids are made unique within a turn, and names that no API
 *   accepts are replaced by a valid one.
 *
 * Pure: the input is not modified.
 */
export function pairToolResults(messages: readonly Message[]): Message[] {
  const out: Message[] = [];
  let index = 0;
  while (index < messages.length) {
    const message = messages[index] as Message;
    if (message.role === 'tool') {
      out.push(orphanToUser(message));
      index += 1;
      continue;
    }
    if (message.role !== 'assistant' || (message.toolCalls ?? []).length === 0) {
      out.push(message);
      index += 1;
      continue;
    }
    let end = index + 1;
    while (end < messages.length && messages[end]?.role !== 'assistant') end += 1;
    const segment = messages.slice(index + 1, end);

    const toolCalls = uniqueCalls(message.toolCalls ?? []);
    const wanted = new Set(toolCalls.map((call) => call.id));
    const results = new Map<string, ToolMessage>();
    const rest: Message[] = [];
    for (const item of segment) {
      if (item.role === 'tool' && wanted.has(item.toolCallId) && !results.has(item.toolCallId)) {
        results.set(item.toolCallId, item);
      } else if (item.role === 'tool') {
        rest.push(orphanToUser(item));
      } else {
        rest.push(item);
      }
    }
    const assistant: AssistantMessage = { ...message, toolCalls };
    out.push(assistant);
    for (const call of toolCalls) {
      out.push(results.get(call.id) ?? missingResult(call));
    }
    out.push(...rest);
    index = end;
  }
  return out;
}

/** A tool name every provider accepts: invalid characters become `_`, at most 64 characters. */
export function safeToolName(name: string): string {
  if (TOOL_NAME_PATTERN.test(name)) return name;
  const cleaned = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
  return cleaned.length > 0 ? cleaned : 'unnamed_tool';
}

function uniqueCalls(toolCalls: readonly ToolCall[]): ToolCall[] {
  const seen = new Set<string>();
  return toolCalls.map((call, position) => {
    let id = call.id.length > 0 ? call.id : `call_${position}`;
    // A second call with the same id could never be answered unambiguously.
    while (seen.has(id)) id = `${id}_${position}`;
    seen.add(id);
    const name = safeToolName(call.name);
    return id === call.id && name === call.name ? call : { ...call, id, name };
  });
}

function missingResult(call: ToolCall): ToolMessage {
  return {
    role: 'tool',
    toolCallId: call.id,
    name: call.name,
    content: MISSING_TOOL_RESULT,
    isError: true,
  };
}

function orphanToUser(message: ToolMessage): Message {
  const label = message.isError === true ? 'failed with' : 'returned';
  return {
    role: 'user',
    content: `(Earlier, tool ${message.name} [call ${message.toolCallId}] ${label}:)\n${message.content}`,
  };
}
