import { isObject, typeName } from './mock-provider-server.js';

/**
 * The request rules of OpenAI Chat Completions that the mock server
 * enforces (DESIGN.md, "The provider rules a client must keep"), as data
 * and as a pure check, so tests can also run the check on a body directly.
 */

/** Every rule the mock enforces, by id. docs/PROVIDERS.md lists the same texts. */
export const OPENAI_RULES = {
  body: 'The body is a JSON object with a non-empty string `model` and a non-empty `messages` array.',
  roles: 'Every message has the role `system`, `developer`, `user`, `assistant` or `tool`.',
  toolResults:
    'Every assistant `tool_calls[].id` is answered by a `tool` message with that `tool_call_id` before the next assistant or user message.',
  orphanResults:
    'Every `tool` message answers a tool call of the assistant message before it, and only once.',
  toolCallShape:
    'Every tool call has a non-empty `id`, `type: "function"` and a `function.name`; ids are unique within a message.',
  argumentsJson: 'Tool-call `arguments` travel as a string holding valid JSON.',
  toolNames: 'Tool names, in definitions and in calls, match `^[a-zA-Z0-9_-]{1,64}$`.',
  toolDefinitions:
    'Tools are `{type: "function", function: {name, description?, parameters}}` and `parameters` is a JSON Schema of type object.',
  toolsNotEmpty: '`tools`, when present, is a non-empty array.',
  content:
    'User, system and tool messages have string content (or text parts); assistant content is a string, or null only alongside tool calls.',
  noReasoningBack:
    'Assistant messages do not carry `reasoning_content` or `reasoning` back (servers that return it reject it in requests).',
  streamUsage:
    'A streamed request asks for usage with `stream_options: {include_usage: true}`, and `stream_options` is sent only with `stream: true`.',
  maxTokens:
    '`max_tokens` or `max_completion_tokens` (never both) is a positive integer when present.',
  temperature: '`temperature`, when present, is a number from 0 to 2.',
} as const;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** Every rule a request body breaks, as "<rule> (<detail>)"; empty when it keeps them all. */
export function checkOpenAIRequest(body: unknown): string[] {
  const out: string[] = [];
  const broke = (rule: string, detail: string): void => {
    out.push(`${rule} (${detail})`);
  };
  if (!isObject(body)) {
    broke(OPENAI_RULES.body, `body is ${typeName(body)}`);
    return out;
  }
  if (typeof body['model'] !== 'string' || body['model'].length === 0) {
    broke(OPENAI_RULES.body, 'model is missing');
  }
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) {
    broke(OPENAI_RULES.body, 'messages is missing or empty');
    return out;
  }
  checkTools(body, broke);
  checkSettings(body, broke);

  // Ids of the latest assistant message's tool calls still waiting for a result.
  let open = new Set<string>();
  let answered = new Set<string>();
  for (const [index, message] of messages.entries()) {
    const where = `messages[${index}]`;
    if (!isObject(message) || typeof message['role'] !== 'string' || !ROLES.has(message['role'])) {
      broke(
        OPENAI_RULES.roles,
        `${where} has role ${JSON.stringify(isObject(message) ? message['role'] : message)}`,
      );
      continue;
    }
    const role = message['role'];
    if ((role === 'assistant' || role === 'user') && open.size > 0) {
      broke(
        OPENAI_RULES.toolResults,
        `${where} (${role}) comes before results for ${[...open].join(', ')}`,
      );
      open = new Set();
    }
    if (role === 'tool') {
      const id = message['tool_call_id'];
      if (typeof id !== 'string' || !open.has(id)) {
        broke(
          OPENAI_RULES.orphanResults,
          `${where} answers ${JSON.stringify(id)}${typeof id === 'string' && answered.has(id) ? ' a second time' : ', which the assistant message before it did not call'}`,
        );
      } else {
        open.delete(id);
        answered.add(id);
      }
      if (!isTextContent(message['content']))
        broke(OPENAI_RULES.content, `${where} content is ${typeName(message['content'])}`);
      continue;
    }
    if (role !== 'assistant') {
      if (!isTextContent(message['content']))
        broke(OPENAI_RULES.content, `${where} content is ${typeName(message['content'])}`);
      continue;
    }
    if ('reasoning_content' in message || 'reasoning' in message) {
      broke(OPENAI_RULES.noReasoningBack, `${where} carries reasoning`);
    }
    const toolCalls = message['tool_calls'];
    const hasCalls = Array.isArray(toolCalls) && toolCalls.length > 0;
    const content = message['content'];
    if (!(isTextContent(content) || (content === null && hasCalls))) {
      broke(
        OPENAI_RULES.content,
        `${where} content is ${typeName(content)}${hasCalls ? '' : ' without tool calls'}`,
      );
    }
    open = new Set();
    answered = new Set();
    if (toolCalls === undefined) continue;
    if (!Array.isArray(toolCalls)) {
      broke(OPENAI_RULES.toolCallShape, `${where}.tool_calls is ${typeName(toolCalls)}`);
      continue;
    }
    for (const [position, call] of toolCalls.entries()) {
      const at = `${where}.tool_calls[${position}]`;
      if (
        !isObject(call) ||
        typeof call['id'] !== 'string' ||
        call['id'].length === 0 ||
        call['type'] !== 'function' ||
        !isObject(call['function'])
      ) {
        broke(OPENAI_RULES.toolCallShape, `${at} is ${JSON.stringify(call)}`);
        continue;
      }
      if (open.has(call['id'])) broke(OPENAI_RULES.toolCallShape, `${at} repeats id ${call['id']}`);
      open.add(call['id']);
      const fn = call['function'];
      if (typeof fn['name'] !== 'string' || !TOOL_NAME.test(fn['name'])) {
        broke(OPENAI_RULES.toolNames, `${at} calls ${JSON.stringify(fn['name'])}`);
      }
      if (typeof fn['arguments'] !== 'string' || !isJson(fn['arguments'])) {
        broke(
          OPENAI_RULES.argumentsJson,
          `${at}.function.arguments is ${JSON.stringify(fn['arguments'])}`,
        );
      }
    }
  }
  if (open.size > 0) {
    broke(
      OPENAI_RULES.toolResults,
      `the conversation ends before results for ${[...open].join(', ')}`,
    );
  }
  return out;
}

function checkTools(
  body: Record<string, unknown>,
  broke: (rule: string, detail: string) => void,
): void {
  const tools = body['tools'];
  if (tools === undefined) return;
  if (!Array.isArray(tools) || tools.length === 0) {
    broke(OPENAI_RULES.toolsNotEmpty, `tools is ${JSON.stringify(tools)}`);
    return;
  }
  for (const [index, tool] of tools.entries()) {
    const fn = isObject(tool) ? tool['function'] : undefined;
    if (!isObject(tool) || tool['type'] !== 'function' || !isObject(fn)) {
      broke(OPENAI_RULES.toolDefinitions, `tools[${index}] is ${JSON.stringify(tool)}`);
      continue;
    }
    if (typeof fn['name'] !== 'string' || !TOOL_NAME.test(fn['name'])) {
      broke(OPENAI_RULES.toolNames, `tools[${index}] is named ${JSON.stringify(fn['name'])}`);
    }
    const parameters = fn['parameters'];
    if (!isObject(parameters) || parameters['type'] !== 'object') {
      broke(
        OPENAI_RULES.toolDefinitions,
        `tools[${index}].function.parameters is ${JSON.stringify(parameters)}`,
      );
    }
  }
}

function checkSettings(
  body: Record<string, unknown>,
  broke: (rule: string, detail: string) => void,
): void {
  const streamOptions = body['stream_options'];
  if (body['stream'] === true) {
    if (!isObject(streamOptions) || streamOptions['include_usage'] !== true) {
      broke(OPENAI_RULES.streamUsage, `stream_options is ${JSON.stringify(streamOptions)}`);
    }
  } else if (streamOptions !== undefined && streamOptions !== null) {
    broke(OPENAI_RULES.streamUsage, 'stream_options without stream: true');
  }
  const hasMax = body['max_tokens'] !== undefined;
  const hasMaxCompletion = body['max_completion_tokens'] !== undefined;
  if (hasMax && hasMaxCompletion) broke(OPENAI_RULES.maxTokens, 'both are set');
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    const value = body[field];
    if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0)) {
      broke(OPENAI_RULES.maxTokens, `${field} is ${JSON.stringify(value)}`);
    }
  }
  const temperature = body['temperature'];
  if (
    temperature !== undefined &&
    !(typeof temperature === 'number' && temperature >= 0 && temperature <= 2)
  ) {
    broke(OPENAI_RULES.temperature, `temperature is ${JSON.stringify(temperature)}`);
  }
}

function isTextContent(content: unknown): boolean {
  if (typeof content === 'string') return true;
  return (
    Array.isArray(content) &&
    content.every(
      (part) => isObject(part) && part['type'] === 'text' && typeof part['text'] === 'string',
    )
  );
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
