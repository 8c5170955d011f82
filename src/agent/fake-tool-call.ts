/**
 * The fake-tool-call guard's detector: does a reply without tool calls hold a
 * tool call written out as text, in one of the formats models really produce,
 * with nothing else of substance around it?
 *
 * The rule (docs/ARCHITECTURE.md, "The Agent loop"): the reply is cut into
 * call-shaped pieces (a call-shaped JSON value, bare or in a code fence;
 * `<tool_call>` and similar tags, the Hermes format among them; Llama's
 * `<|python_tag|>`, `<function=name>` and `{"type":"function",…}`; Mistral's
 * `[TOOL_CALLS]`; DeepSeek's tool-call markers; `<function_calls>`/`<invoke>`
 * XML; ReAct `Action:`/`Action Input:`; `name(args)` lines and `[name(args)]`
 * lists) and the rest. It is a fake call when at least one piece names a tool
 * in the agent's own set and the rest is at most a short lead-in
 * (`MAX_LEAD_IN_WORDS` words). Prose that mentions a tool ("I used read_file
 * (twice)…") has no call-shaped piece, so it is never a fake call.
 */

/** How a reply wrote a tool call as text. */
export type FakeCallFormat =
  | 'json'
  | 'tag'
  | 'llama-function'
  | 'llama-python'
  | 'mistral'
  | 'deepseek'
  | 'xml-invoke'
  | 'react'
  | 'call-line';

/** A tool call found written as text. */
export interface FakeToolCall {
  /** The agent's tool that the text calls. */
  tool: string;
  format: FakeCallFormat;
}

/** Words of text besides the calls that still leave a reply a fake call ("Let me read the file first."). */
export const MAX_LEAD_IN_WORDS = 16;

const NAME_KEYS = ['name', 'tool', 'tool_name', 'function', 'action', 'recipient_name'];
const ARGUMENT_KEYS = [
  'arguments',
  'args',
  'parameters',
  'input',
  'params',
  'tool_input',
  'action_input',
];
const CALL_KEYS = new Set([...NAME_KEYS, ...ARGUMENT_KEYS, 'type', 'id', 'call_id', 'index']);
const CALL_TYPES = new Set(['function', 'tool_use', 'tool_call', 'function_call']);
const WRAPPER_KEYS = ['tool_calls', 'tool_uses', 'function_call', 'function_calls', 'calls'];

interface Piece {
  pattern: RegExp;
  format: FakeCallFormat;
  /** The tool names a match calls, or undefined when it is not a call after all. */
  names: (match: RegExpExecArray) => string[] | undefined;
}

// Tagged formats. A tag the model left open (it stopped at its stop token) runs to the end.
const TAGGED: Piece[] = [
  {
    pattern: /<(tool_call|tool_calls|function_call|tool_use)>([\s\S]*?)(?:<\/\1>|(?![\s\S]))/g,
    format: 'tag',
    names: (match) => namesInBlock(match[2] ?? ''),
  },
  {
    pattern: /<function=([\w.-]+)>([\s\S]*?)(?:<\/function>|(?![\s\S]))/g,
    format: 'llama-function',
    names: (match) => {
      const body = (match[2] ?? '').trim();
      return body === '' || isJsonObject(body) ? [match[1] ?? ''] : undefined;
    },
  },
  {
    pattern: /<\|python_tag\|>([\s\S]*?)(?:<\|eom_id\|>|<\|eot_id\|>|(?![\s\S]))/g,
    format: 'llama-python',
    names: (match) => namesInBlock(match[1] ?? ''),
  },
  {
    pattern: /\[TOOL_CALLS\]\s*([\s\S]*?)(?:\[\/TOOL_CALLS\]|(?![\s\S]))/g,
    format: 'mistral',
    names: (match) => {
      const body = (match[1] ?? '').trim();
      const args = /^([\w.-]+)\[ARGS\]\s*(\{[\s\S]*\})$/.exec(body);
      if (args !== null) return isJsonObject(args[2] ?? '') ? [args[1] ?? ''] : undefined;
      return namesInBlock(body);
    },
  },
  {
    pattern: /<｜tool▁calls▁begin｜>([\s\S]*?)(?:<｜tool▁calls▁end｜>|(?![\s\S]))/g,
    format: 'deepseek',
    names: (match) => {
      const names = [...(match[1] ?? '').matchAll(/<｜tool▁sep｜>([\w.-]+)/g)].map(
        (found) => found[1] ?? '',
      );
      return names.length > 0 ? names : undefined;
    },
  },
  {
    pattern: /<function_calls>([\s\S]*?)(?:<\/function_calls>|(?![\s\S]))/g,
    format: 'xml-invoke',
    names: (match) => {
      const names = [...(match[1] ?? '').matchAll(/<invoke\s+name="([^"]+)"/g)].map(
        (found) => found[1] ?? '',
      );
      return names.length > 0 ? names : undefined;
    },
  },
  {
    // ReAct: an Action line and its Action Input, up to the next ReAct label.
    pattern:
      /(?:^|\n)[ \t]*Action:[ \t]*`?([\w.-]+)`?[ \t]*\n[ \t]*Action Input:[ \t]*([\s\S]*?)(?=\n[ \t]*(?:Observation|Thought|Action|Final Answer):|(?![\s\S]))/g,
    format: 'react',
    names: (match) => [match[1] ?? ''],
  },
  {
    pattern: /```[\w-]*[ \t]*\n([\s\S]*?)\n?[ \t]*```/g,
    format: 'json',
    names: (match) => namesInBlock(match[1] ?? ''),
  },
];

// A line that is one call: `read_file(path="a.md")`, `read_file({"path": "a.md"})`,
// `brave_search.call(query="x")`, `Action: read_file("a.md")`.
const CALL_LINE =
  /^[ \t]*(?:[-*][ \t]+)?(?:Action:[ \t]*)?(?:functions\.)?([A-Za-z_][\w-]*)(?:\.call)?\((.*)\)[ \t]*;?[ \t]*$/;
// A pythonic list of calls: `[read_file(path="a.md"), list_dir(path=".")]`.
const CALL_LIST = /^[ \t]*\[[ \t]*([A-Za-z_][\w-]*\(.*\))[ \t]*\][ \t]*$/;

/**
 * The tool call `content` writes out as text, or undefined when it is not a
 * fake call (see the module comment for the rule). `toolNames` is the
 * agent's own set: a call to a tool outside it is not a fake call of this agent.
 *
 * @example
 * findFakeToolCall('<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>', ['read_file'])
 * // → { tool: 'read_file', format: 'tag' }
 * findFakeToolCall('Done. I used read_file (twice): 42.', ['read_file']) // → undefined
 */
export function findFakeToolCall(
  content: string,
  toolNames: readonly string[],
): FakeToolCall | undefined {
  if (toolNames.length === 0) return undefined;
  // Every format names the tool as written (a piece counts only when a name
  // in it is one of the agent's tools), so a reply naming none holds no call:
  // most replies, checked without the patterns.
  if (!toolNames.some((name) => content.includes(name))) return undefined;
  const known = new Set(toolNames);
  const found: FakeToolCall[] = [];
  const keep = (names: string[] | undefined, format: FakeCallFormat): boolean => {
    const calls = (names ?? []).map(bareName).filter((name) => known.has(name));
    if (calls.length === 0) return false;
    for (const tool of calls) found.push({ tool, format });
    return true;
  };

  let rest = content;
  for (const piece of TAGGED) {
    rest = rest.replace(piece.pattern, (...groups: unknown[]) => {
      const match = groups.slice(0, -2) as unknown as RegExpExecArray;
      return keep(piece.names(match), piece.format) ? '\n' : (match[0] ?? '');
    });
  }
  rest = cutJsonValues(rest, (names) => keep(names, 'json'));
  rest = rest
    .split('\n')
    .filter((line) => !keep(callLineNames(line), 'call-line'))
    .join('\n');

  const first = found[0];
  if (first === undefined) return undefined;
  return leadInWords(rest) <= MAX_LEAD_IN_WORDS ? first : undefined;
}

/** The names a block calls when the whole block is calls (JSON, call lines), else undefined. */
function namesInBlock(block: string): string[] | undefined {
  const text = block.trim();
  if (text === '') return undefined;
  const json = parseJson(text);
  if (json !== undefined) return callNames(json);
  // Several JSON calls one after another (`;` or newline separated), as Llama writes them.
  const parts = text.split(/\n|;(?=\s*\{)/).filter((part) => part.trim() !== '');
  const names: string[] = [];
  for (const part of parts) {
    const value = parseJson(part.trim());
    const called = value === undefined ? callLineNames(part) : callNames(value);
    if (called === undefined) return undefined;
    names.push(...called);
  }
  return names.length > 0 ? names : undefined;
}

/** The names a call-shaped JSON value calls, or undefined when it is not one. */
function callNames(value: unknown): string[] | undefined {
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    const names: string[] = [];
    for (const item of value) {
      const called = callNames(item);
      if (called === undefined) return undefined;
      names.push(...called);
    }
    return names;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  for (const wrapper of WRAPPER_KEYS) {
    if (!(wrapper in record)) continue;
    // {"tool_calls": [...]} with at most an empty content and a role beside it.
    const others = keys.filter((key) => key !== wrapper);
    const quiet = others.every(
      (key) =>
        key === 'role' ||
        ((key === 'content' || key === 'text') &&
          (record[key] === null || record[key] === '' || record[key] === undefined)),
    );
    return quiet ? callNames(record[wrapper]) : undefined;
  }
  // OpenAI's shape: {"type": "function", "function": {"name", "arguments"}}.
  const inner = record['function'];
  if (typeof inner === 'object' && inner !== null && !Array.isArray(inner)) {
    const outer = keys.every((key) => ['function', 'type', 'id', 'index', 'call_id'].includes(key));
    return outer ? callNames(inner) : undefined;
  }
  if (keys.length === 0 || !keys.every((key) => CALL_KEYS.has(key))) return undefined;
  const type = record['type'];
  if (type !== undefined && !(typeof type === 'string' && CALL_TYPES.has(type))) return undefined;
  const names = NAME_KEYS.map((key) => record[key]).filter(
    (name): name is string => typeof name === 'string',
  );
  if (names.length !== 1) return undefined;
  return [names[0] as string];
}

/** The names a `name(args)` line or `[name(args), …]` list calls, or undefined. */
function callLineNames(line: string): string[] | undefined {
  const list = CALL_LIST.exec(line);
  if (list !== null) {
    const inner = list[1] ?? '';
    const names = [...inner.matchAll(/(?:^|\),[ \t]*)([A-Za-z_][\w-]*)\(/g)].map(
      (found) => found[1] ?? '',
    );
    return names.length > 0 ? names : undefined;
  }
  const call = CALL_LINE.exec(line);
  if (call === null) return undefined;
  return looksLikeArguments((call[2] ?? '').trim()) ? [call[1] ?? ''] : undefined;
}

// Arguments as models write them: none, a JSON object, keyword arguments, or a quoted string.
function looksLikeArguments(args: string): boolean {
  if (args === '') return true;
  if (args.startsWith('{')) return isJsonObject(args) || /^\{\s*"?[\w-]+"?\s*:/.test(args);
  if (/^[A-Za-z_]\w*\s*=/.test(args)) return true;
  return /^(["'`]).*\1$/.test(args) || /^(["'`]).*\1\s*,\s*[A-Za-z_]\w*\s*=/.test(args);
}

/**
 * Removes each JSON object or array that starts a line and calls a tool
 * (`keep` says whether it does, and records it); returns what is left.
 */
function cutJsonValues(text: string, keep: (names: string[] | undefined) => boolean): string {
  let rest = '';
  let index = 0;
  while (index < text.length) {
    const start = nextValueStart(text, index);
    if (start === -1) break;
    const end = valueEnd(text, start);
    const value = end === -1 ? undefined : parseJson(text.slice(start, end));
    if (end !== -1 && value !== undefined && keep(callNames(value))) {
      rest += `${text.slice(index, start)}\n`;
      index = end;
    } else {
      rest += text.slice(index, start + 1);
      index = start + 1;
    }
  }
  return rest + text.slice(index);
}

// The next `{` or `[` that starts a line (after blanks), from `from`.
function nextValueStart(text: string, from: number): number {
  for (let index = from; index < text.length; index += 1) {
    const char = text[index];
    if (char !== '{' && char !== '[') continue;
    let before = index - 1;
    while (before >= 0 && (text[before] === ' ' || text[before] === '\t')) before -= 1;
    if (before < 0 || text[before] === '\n') return index;
  }
  return -1;
}

// Where the JSON value opened at `start` closes (just past it), or -1; strings are skipped.
function valueEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let index = start; index < text.length; index += 1) {
    const char = text[index];
    if (inString) {
      if (char === '\\') index += 1;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth += 1;
    else if (char === '}' || char === ']') {
      depth -= 1;
      if (depth === 0) return index + 1;
    }
  }
  return -1;
}

function parseJson(text: string): unknown {
  if (!/^[[{]/.test(text)) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isJsonObject(text: string): boolean {
  const value = parseJson(text.trim());
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// `functions.read_file` (OpenAI's namespace written out) is `read_file`.
function bareName(name: string): string {
  return name.startsWith('functions.') ? name.slice('functions.'.length) : name;
}

// Words left besides the calls: special tokens, fences and ReAct labels are not words.
function leadInWords(rest: string): number {
  const text = rest
    .replace(/<\|[\w]+\|>/g, ' ')
    .replace(/```[\w-]*/g, ' ')
    .replace(/\b(?:Thought|Action|Action Input):/g, ' ');
  return text.match(/[\p{L}\p{N}][\p{L}\p{N}_'-]*/gu)?.length ?? 0;
}
