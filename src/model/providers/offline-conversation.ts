import type { Message, ToolCall, ToolMessage, ToolSchema } from '../types.js';

/**
 * How the offline model reads a conversation: tool calls with their results,
 * document paths, channel messages, and the shape of the tools it is offered.
 */

/** What the offline model decided to say or do. */
export interface Decision {
  content: string;
  toolCalls: Array<{ name: string; arguments: Record<string, unknown> }>;
  thinking?: string;
}

/** The tools offered, by name. */
export type OfferedTools = ReadonlyMap<string, ToolSchema>;

/** Every offline answer starts with this, so nobody takes it for a language model's. */
export const LABEL = '(offline heuristic model)';

const CHANNEL_MESSAGE = /^\[message on channel "([^"]+)" from ([^\]\n]+)\]\n([\s\S]*)$/;
const CHANNEL_CLOSED = /^\[channel "([^"]+)" closed: no more messages will arrive\]/;
const DOCUMENT_PATH = /[\w@./-]*[\w-]\.(?:md|markdown|txt|rst|text)\b/gi;
const IGNORED_PATH = /(?:^|\/)(?:node_modules|dist|troupe-runs|\.[^/]+)\//;

/** A tool call the model made, with its result when one came back. */
export interface CallWithResult {
  call: ToolCall;
  result: ToolMessage | undefined;
}

/** The tool calls made from message `start` on, each with its result. */
export function callsSince(messages: readonly Message[], start: number): CallWithResult[] {
  const results = new Map<string, ToolMessage>();
  for (const message of messages.slice(start)) {
    if (message.role === 'tool') results.set(message.toolCallId, message);
  }
  const calls: CallWithResult[] = [];
  for (const message of messages.slice(start)) {
    if (message.role !== 'assistant') continue;
    for (const toolCall of message.toolCalls ?? []) {
      calls.push({ call: toolCall, result: results.get(toolCall.id) });
    }
  }
  return calls;
}

/** The first user message: an agent's task. */
export function firstUser(messages: readonly Message[]): string {
  return messages.find((message) => message.role === 'user')?.content ?? '';
}

/** A string argument of a tool call. */
export function argument(toolCall: ToolCall, key: string): string | undefined {
  const args = toolCall.arguments;
  if (typeof args !== 'object' || args === null) return undefined;
  const value = (args as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
}

/** Document paths (.md, .txt, .rst) named in a text, outside hidden and generated folders. */
export function documentPaths(text: string): string[] {
  const found = (text.match(DOCUMENT_PATH) ?? [])
    .map((path) => path.replace(/^\.\//, ''))
    .filter((path) => !IGNORED_PATH.test(path) && !path.startsWith('.'));
  return [...new Set(found)];
}

/** True when a tool's parameters have a property called `key`. */
export function hasProperty(tool: ToolSchema | undefined, key: string): boolean {
  const properties = tool?.parameters['properties'];
  return typeof properties === 'object' && properties !== null && key in properties;
}

/** Arguments for list_dir: the workspace root, recursively when the tool allows it. */
export function listArguments(tool: ToolSchema | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = { path: '.' };
  if (hasProperty(tool, 'recursive')) args['recursive'] = true;
  if (hasProperty(tool, 'depth')) args['depth'] = 3;
  return args;
}

/** The roles the delegate tool accepts, when its schema names them (an enum). */
export function delegateRoles(tool: ToolSchema | undefined): Set<string> | undefined {
  const tasks = (tool?.parameters['properties'] as Record<string, unknown> | undefined)?.['tasks'];
  const items = (tasks as { items?: { properties?: { role?: { enum?: unknown } } } } | undefined)
    ?.items;
  const values = items?.properties?.role?.enum;
  return Array.isArray(values) ? new Set(values.map(String)) : undefined;
}

/** A final answer. */
export function final(content: string, thinking?: string): Decision {
  return { content, toolCalls: [], ...(thinking === undefined ? {} : { thinking }) };
}

/** One tool call. */
export function call(name: string, args: Record<string, unknown>, thinking?: string): Decision {
  return {
    content: '',
    toolCalls: [{ name, arguments: args }],
    ...(thinking === undefined ? {} : { thinking }),
  };
}

/** Text on one line, cut to `maxChars`. */
export function shorten(text: string, maxChars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= maxChars ? flat : `${flat.slice(0, maxChars - 1)}…`;
}

/** A channel message in a subscriber's history. */
export interface ChannelMessage {
  channel: string;
  from: string;
  payload: unknown;
  /** Index of the user message that carried it. */
  index: number;
}

/** The channel messages in a history, and whether a close notice has arrived. */
export function channelMessages(messages: readonly Message[]): {
  received: ChannelMessage[];
  closed: boolean;
} {
  const received: ChannelMessage[] = [];
  let closed = false;
  messages.forEach((message, index) => {
    if (message.role !== 'user') return;
    if (CHANNEL_CLOSED.test(message.content)) closed = true;
    const match = CHANNEL_MESSAGE.exec(message.content);
    if (match === null) return;
    let payload: unknown;
    try {
      payload = JSON.parse(match[3] ?? '');
    } catch {
      payload = match[3] ?? '';
    }
    received.push({ channel: match[1] ?? '', from: match[2] ?? 'unknown', payload, index });
  });
  return { received, closed };
}

/** The `publish_<channel>` tools offered. */
export function publishTools(tools: OfferedTools): ToolSchema[] {
  return [...tools.values()].filter((tool) => tool.name.startsWith('publish_'));
}
