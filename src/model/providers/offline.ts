import { TroupeError } from '../../errors.js';
import type { Model, ModelSpec } from '../model.js';
import type {
  Message,
  ModelCallOptions,
  ModelRequest,
  ModelResponse,
  ModelStreamPart,
  ToolCall,
  ToolMessage,
  ToolSchema,
} from '../types.js';
import {
  aggregateFindings,
  composeReport,
  extractFindings,
  type OfflineFindings,
  type ReceivedFindings,
} from './offline-extract.js';

/** The model name every offline response reports. */
export const OFFLINE_MODEL_NAME = 'offline-heuristic';

/** Environment variable: a pause before each offline answer, in milliseconds (default 0). */
export const OFFLINE_DELAY_ENV = 'TROUPE_OFFLINE_DELAY_MS';

const LABEL = '(offline heuristic model)';
const CHANNEL_MESSAGE = /^\[message on channel "([^"]+)" from ([^\]\n]+)\]\n([\s\S]*)$/;
const CHANNEL_CLOSED = /^\[channel "([^"]+)" closed: no more messages will arrive\]/;
const DOCUMENT_PATH = /[\w@./-]*[\w-]\.(?:md|markdown|txt|rst|text)\b/gi;
const IGNORED_PATH = /(?:^|\/)(?:node_modules|dist|troupe-runs|\.[^/]+)\//;
const MAX_RESEARCH_TASKS = 6;

/** What the offline model decided to say or do. */
interface Decision {
  content: string;
  toolCalls: Array<{ name: string; arguments: Record<string, unknown> }>;
  thinking?: string;
}

/**
 * troupe's built-in heuristic model: no key, no network, deterministic. It is
 * not a language model and says so in its answers. It reads the request (the
 * tools offered, the caller's role and the messages) and drives the
 * research → analysis → report job through real tool calls: the coordinator
 * lists the workspace and delegates, researchers read documents and publish
 * extractive findings, the analyst aggregates them and the reporter writes
 * `report.md`. Any other caller gets an honest answer from the tools it has.
 *
 * Token usage is estimated as characters / 4 so budgets and summaries have numbers.
 *
 * @example
 * const model = createModel({ provider: 'offline' });
 */
export class OfflineModel implements Model {
  readonly spec: ModelSpec;
  readonly #delayMs: number;

  /** `seed` is kept in the spec for compatibility; answers depend on the request alone. */
  constructor(options: { seed?: number | undefined } = {}, env: NodeJS.ProcessEnv = process.env) {
    this.spec =
      options.seed === undefined
        ? { provider: 'offline' }
        : { provider: 'offline', seed: options.seed };
    const delay = Number.parseInt(env[OFFLINE_DELAY_ENV] ?? '', 10);
    this.#delayMs = Number.isFinite(delay) ? Math.min(Math.max(delay, 0), 60_000) : 0;
  }

  async complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    await pause(this.#delayMs, options.signal);
    return toResponse(decideOffline(request), request);
  }

  async *stream(
    request: ModelRequest,
    options: ModelCallOptions = {},
  ): AsyncGenerator<ModelStreamPart> {
    const response = await this.complete(request, options);
    if (response.thinking !== undefined) yield { type: 'thinking-delta', text: response.thinking };
    for (const piece of response.content.match(/\S+\s*|\s+/g) ?? []) {
      yield { type: 'text-delta', text: piece };
    }
    for (const [index, toolCall] of response.toolCalls.entries()) {
      yield {
        type: 'tool-call-delta',
        index,
        id: toolCall.id,
        name: toolCall.name,
        argumentsDelta: toolCall.raw,
      };
    }
    yield { type: 'finish', response };
  }
}

/** The offline model's decision for one request, as a response. Pure and deterministic. */
export function decideOffline(request: ModelRequest): Decision {
  const tools = new Map((request.tools ?? []).map((tool) => [tool.name, tool]));
  const role = request.caller?.role;
  if (tools.has('delegate')) return coordinator(request.messages, tools);
  if (role === 'researcher' || (role === undefined && tools.has('publish_findings'))) {
    return researcher(request.messages, tools);
  }
  if (role === 'analyst') return analyst(request.messages);
  if (role === 'reporter') return reporter(request.messages, tools);
  if (request.messages.some((m) => m.role === 'user' && CHANNEL_MESSAGE.test(m.content))) {
    return analyst(request.messages);
  }
  return chat(request.messages, tools);
}

// ---------------------------------------------------------------------------
// Reading the conversation.

interface CallWithResult {
  call: ToolCall;
  result: ToolMessage | undefined;
}

function callsSince(messages: readonly Message[], start: number): CallWithResult[] {
  const results = new Map<string, ToolMessage>();
  for (const message of messages.slice(start)) {
    if (message.role === 'tool') results.set(message.toolCallId, message);
  }
  const calls: CallWithResult[] = [];
  for (const message of messages.slice(start)) {
    if (message.role !== 'assistant') continue;
    for (const call of message.toolCalls ?? []) calls.push({ call, result: results.get(call.id) });
  }
  return calls;
}

function firstUser(messages: readonly Message[]): string {
  return messages.find((message) => message.role === 'user')?.content ?? '';
}

function argument(call: ToolCall, key: string): string | undefined {
  const args = call.arguments;
  if (typeof args !== 'object' || args === null) return undefined;
  const value = (args as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
}

function documentPaths(text: string): string[] {
  const found = (text.match(DOCUMENT_PATH) ?? [])
    .map((path) => path.replace(/^\.\//, ''))
    .filter((path) => !IGNORED_PATH.test(path) && !path.startsWith('.'));
  return [...new Set(found)];
}

function hasProperty(tool: ToolSchema | undefined, key: string): boolean {
  const properties = tool?.parameters['properties'];
  return typeof properties === 'object' && properties !== null && key in properties;
}

function listArguments(tool: ToolSchema | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = { path: '.' };
  if (hasProperty(tool, 'recursive')) args['recursive'] = true;
  if (hasProperty(tool, 'depth')) args['depth'] = 3;
  return args;
}

/** The roles the delegate tool accepts, when its schema names them (an enum). */
function delegateRoles(tool: ToolSchema | undefined): Set<string> | undefined {
  const tasks = (tool?.parameters['properties'] as Record<string, unknown> | undefined)?.['tasks'];
  const items = (tasks as { items?: { properties?: { role?: { enum?: unknown } } } } | undefined)
    ?.items;
  const values = items?.properties?.role?.enum;
  return Array.isArray(values) ? new Set(values.map(String)) : undefined;
}

function final(content: string, thinking?: string): Decision {
  return { content, toolCalls: [], ...(thinking === undefined ? {} : { thinking }) };
}

function call(name: string, args: Record<string, unknown>, thinking?: string): Decision {
  return {
    content: '',
    toolCalls: [{ name, arguments: args }],
    ...(thinking === undefined ? {} : { thinking }),
  };
}

// ---------------------------------------------------------------------------
// Roles.

function coordinator(messages: readonly Message[], tools: Map<string, ToolSchema>): Decision {
  const task = firstUser(messages);
  const calls = callsSince(messages, 0);
  const lastUserIndex = messages.findLastIndex((message) => message.role === 'user');
  const answeredBefore = messages.slice(0, lastUserIndex).some((m) => m.role === 'assistant');
  if (answeredBefore && messages[lastUserIndex]?.content !== task) {
    return final(`${LABEL} ${progressReport(calls)}`);
  }

  const listing = calls.filter((entry) => entry.call.name === 'list_dir');
  if (listing.length === 0 && tools.has('list_dir')) {
    return call(
      'list_dir',
      listArguments(tools.get('list_dir')),
      'Heuristic plan: list the workspace, then give each document to a researcher.',
    );
  }
  const delegations = calls.filter((entry) => entry.call.name === 'delegate');
  const roles = delegateRoles(tools.get('delegate'));
  const allows = (role: string): boolean => roles === undefined || roles.has(role);

  if (delegations.length === 0) {
    const documents = documentPaths(listing.map((entry) => entry.result?.content ?? '').join('\n'));
    if (documents.length === 0 && listing.length > 0) {
      return final(
        `${LABEL} I found no documents (.md or .txt files) in the workspace to research.`,
      );
    }
    const groups = groupDocuments(documents);
    const tasks: Array<{ role: string; task: string }> = groups.map((group) => ({
      role: 'researcher',
      task: `Read ${group.map((path) => `"${path}"`).join(', ')} and publish your findings (title, summary, key points, figures) with publish_findings. Context: ${task}`,
    }));
    if (groups.length === 0) tasks.push({ role: 'researcher', task });
    if (allows('analyst')) {
      tasks.push({
        role: 'analyst',
        task: `Aggregate the findings researchers publish on the findings channel: common themes, figures side by side, and which source says what. Context: ${task}`,
      });
    }
    return call(
      'delegate',
      { tasks },
      `Heuristic plan: ${groups.length} research task${groups.length === 1 ? '' : 's'} for ${documents.length} document${documents.length === 1 ? '' : 's'}${allows('analyst') ? ', plus the analyst in the same batch' : ''}.`,
    );
  }

  const firstResult = delegations[0]?.result?.content ?? '';
  if (delegations.length === 1 && allows('reporter')) {
    const analysis = resultOf(firstResult, 'analyst') ?? firstResult;
    return call(
      'delegate',
      {
        tasks: [
          {
            role: 'reporter',
            task: `Write report.md, the final report for: ${task}\n\nAnalysis:\n${analysis}`,
          },
        ],
      },
      'Heuristic plan: hand the analysis to the reporter.',
    );
  }
  const last = delegations.at(-1)?.result?.content ?? '';
  const reporterText = resultOf(last, 'reporter') ?? last;
  const reportPath = reporterText.match(/[^\s"'`()]*report\.md/)?.[0];
  if (delegations.length === 1) {
    return final(
      `${LABEL} Research and analysis are done.\n\n${resultOf(last, 'analyst') ?? last}`,
    );
  }
  return final(
    reportPath === undefined
      ? `${LABEL} The research is done, but the reporter did not confirm a report file: ${shorten(reporterText, 300)}`
      : `${LABEL} Done. The reporter wrote ${reportPath}${reportPath.includes('/') ? '' : " in the run's output folder"}.`,
  );
}

function progressReport(calls: readonly CallWithResult[]): string {
  const delegations = calls.filter((entry) => entry.call.name === 'delegate').length;
  if (delegations === 0) return 'I stopped before delegating any work.';
  if (delegations === 1) return 'Research and analysis ran; the report was not written yet.';
  return 'Research, analysis and the report ran; see the run folder for report.md.';
}

function groupDocuments(documents: readonly string[]): string[][] {
  const count = Math.min(documents.length, MAX_RESEARCH_TASKS);
  const groups: string[][] = Array.from({ length: count }, () => []);
  documents.forEach((path, index) => {
    groups[index % count]?.push(path);
  });
  return groups;
}

/** Finds one role's answer inside a delegate result (JSON when possible, else the whole text). */
function resultOf(content: string, role: string): string | undefined {
  let data: unknown;
  try {
    data = JSON.parse(content);
  } catch {
    return undefined;
  }
  const entries = Array.isArray(data)
    ? data
    : Array.isArray((data as { results?: unknown })?.results)
      ? (data as { results: unknown[] }).results
      : [];
  for (const entry of entries) {
    if (typeof entry !== 'object' || entry === null) continue;
    const record = entry as Record<string, unknown>;
    const id = typeof record['agentId'] === 'string' ? record['agentId'] : '';
    if (record['role'] !== role && !id.startsWith(`${role}-`)) continue;
    for (const key of ['final', 'output', 'result', 'answer']) {
      const value = record[key];
      if (typeof value === 'string' && value !== '') return value;
    }
  }
  return undefined;
}

function researcher(messages: readonly Message[], tools: Map<string, ToolSchema>): Decision {
  const task = firstUser(messages);
  const calls = callsSince(messages, 0);
  const reads = calls.filter((entry) => entry.call.name === 'read_file');
  if (reads.length === 0) {
    let paths = documentPaths(task);
    const listing = calls.find((entry) => entry.call.name === 'list_dir');
    if (paths.length === 0 && listing === undefined && tools.has('list_dir')) {
      return call('list_dir', listArguments(tools.get('list_dir')), 'No document named: list.');
    }
    if (paths.length === 0) paths = documentPaths(listing?.result?.content ?? '').slice(0, 3);
    if (paths.length === 0 || !tools.has('read_file')) {
      return final(`${LABEL} I found no document to read for this task.`);
    }
    return {
      content: '',
      toolCalls: paths.map((path) => ({ name: 'read_file', arguments: { path } })),
      thinking: `Heuristic plan: read ${paths.join(', ')}, then extract findings.`,
    };
  }

  const readable = reads.filter((entry) => entry.result !== undefined && !entry.result.isError);
  const findings = readable.map((entry) =>
    extractFindings(argument(entry.call, 'path') ?? 'document', entry.result?.content ?? ''),
  );
  const failed = reads.filter((entry) => entry.result === undefined || entry.result.isError);
  const failures = failed.map(
    (entry) => `${argument(entry.call, 'path') ?? '?'}: ${entry.result?.content ?? 'no result'}`,
  );
  const published = calls.filter((entry) => entry.call.name === 'publish_findings');
  if (published.length === 0 && findings.length > 0 && tools.has('publish_findings')) {
    return {
      content: '',
      toolCalls: findings.map((item) => ({
        name: 'publish_findings',
        arguments: { ...item },
      })),
      thinking: 'Heuristic extraction done: publishing the findings.',
    };
  }
  if (findings.length === 0) {
    return final(`${LABEL} I could not read the documents: ${failures.join('; ')}`);
  }
  const lines = findings.map(
    (item) =>
      `- ${item.title} (${item.source}): ${item.keyPoints.length} key points, ${item.figures.length} figures. ${shorten(item.summary, 200)}`,
  );
  const how =
    published.length > 0
      ? `Published findings for ${findings.length} document${findings.length === 1 ? '' : 's'} on the findings channel.`
      : `Findings for ${findings.length} document${findings.length === 1 ? '' : 's'}:\n${JSON.stringify(findings)}`;
  const refused = published.filter((entry) => entry.result?.isError);
  const notes = [
    ...failures.map((text) => `Could not read ${text}`),
    ...refused.map((entry) => `Publishing failed: ${entry.result?.content ?? ''}`),
  ];
  return final([`${LABEL} ${how}`, ...lines, ...notes].join('\n'));
}

function parseFindings(text: string): OfflineFindings | undefined {
  try {
    const data = JSON.parse(text) as Partial<OfflineFindings>;
    if (typeof data.source !== 'string' || typeof data.title !== 'string') return undefined;
    return {
      source: data.source,
      title: data.title,
      summary: typeof data.summary === 'string' ? data.summary : '',
      keyPoints: Array.isArray(data.keyPoints) ? data.keyPoints.map(String) : [],
      figures: Array.isArray(data.figures) ? data.figures.map(String) : [],
    };
  } catch {
    return undefined;
  }
}

function analyst(messages: readonly Message[]): Decision {
  const received: ReceivedFindings[] = [];
  let closed = false;
  const lastAssistant = messages.findLastIndex((message) => message.role === 'assistant');
  const fresh: ReceivedFindings[] = [];
  messages.forEach((message, index) => {
    if (message.role !== 'user') return;
    if (CHANNEL_CLOSED.test(message.content)) closed = true;
    const match = CHANNEL_MESSAGE.exec(message.content);
    if (match === null) return;
    const findings = parseFindings(match[3] ?? '');
    if (findings === undefined) return;
    const entry = { from: match[2] ?? 'unknown', findings };
    received.push(entry);
    if (index > lastAssistant) fresh.push(entry);
  });
  if (closed) {
    return final(
      aggregateFindings(received),
      `Heuristic aggregation of ${received.length} set${received.length === 1 ? '' : 's'} of findings.`,
    );
  }
  if (fresh.length === 0) {
    return final(`${LABEL} Waiting for findings on the channel.`);
  }
  const notes = fresh.map(
    ({ from, findings }) =>
      `${findings.title} (${findings.source}, from ${from}): ${findings.keyPoints.length} key points, ${findings.figures.length} figures`,
  );
  return final(
    `${LABEL} Noted ${notes.join('; ')}. ${received.length} source${received.length === 1 ? '' : 's'} so far; waiting for more.`,
  );
}

function reporter(messages: readonly Message[], tools: Map<string, ToolSchema>): Decision {
  const task = firstUser(messages);
  const split = task.indexOf('\n\nAnalysis:\n');
  const head = split === -1 ? task : task.slice(0, split);
  const analysis = split === -1 ? '' : task.slice(split + '\n\nAnalysis:\n'.length);
  const subject = head.match(/final report for:\s*([\s\S]*)$/)?.[1]?.trim() ?? head;
  const report = composeReport(subject, analysis === '' ? head : analysis);
  const writes = callsSince(messages, 0).filter((entry) => entry.call.name === 'write_file');
  if (writes.length === 0) {
    if (!tools.has('write_file')) return final(report);
    return call(
      'write_file',
      { path: 'report.md', content: report },
      'Heuristic report: the analysis under a title and a method note.',
    );
  }
  const result = writes.at(-1)?.result;
  if (result === undefined || result.isError) {
    return final(`${LABEL} Could not write report.md: ${result?.content ?? 'no result'}`);
  }
  return final(`${LABEL} Wrote report.md. ${shorten(result.content, 300)}`);
}

function chat(messages: readonly Message[], tools: Map<string, ToolSchema>): Decision {
  const start = messages.findLastIndex((message) => message.role === 'user');
  const input = messages[start]?.content ?? '';
  const calls = callsSince(messages, Math.max(start, 0));
  if (calls.length === 0) {
    const mentioned = documentPaths(input);
    if (mentioned.length > 0 && tools.has('read_file')) {
      return {
        content: '',
        toolCalls: mentioned
          .slice(0, 3)
          .map((path) => ({ name: 'read_file', arguments: { path } })),
        thinking: 'Heuristic: the message names files, so read them.',
      };
    }
    if (tools.has('list_dir')) {
      return call('list_dir', { path: '.' }, 'Heuristic: look at the workspace first.');
    }
    return final(
      `${LABEL} I am troupe's built-in heuristic model, not a language model: I can list and summarize documents with my tools, but I have no tools here.`,
    );
  }
  const parts: string[] = [];
  for (const { call: toolCall, result } of calls) {
    if (result === undefined) continue;
    if (result.isError) {
      parts.push(`${toolCall.name} failed: ${result.content}`);
    } else if (toolCall.name === 'read_file') {
      const item = extractFindings(argument(toolCall, 'path') ?? 'document', result.content);
      parts.push(
        [
          `**${item.title}** (${item.source}): ${item.summary}`,
          ...item.keyPoints.map((p) => `- ${p}`),
        ]
          .concat(item.figures.length > 0 ? [`Figures: ${item.figures.slice(0, 3).join(' ')}`] : [])
          .join('\n'),
      );
    } else if (toolCall.name === 'list_dir') {
      const documents = documentPaths(result.content);
      parts.push(
        documents.length === 0
          ? 'The workspace has no .md or .txt documents I can summarize.'
          : `The workspace has ${documents.length} document${documents.length === 1 ? '' : 's'}: ${documents.slice(0, 12).join(', ')}${documents.length > 12 ? ', …' : ''}. Name one (for example "summarize ${documents[0]}") and I will summarize it.`,
      );
    } else {
      parts.push(`${toolCall.name}: ${shorten(result.content, 300)}`);
    }
  }
  return final(
    `${LABEL} I am not a language model; I answer with extractive heuristics.\n\n${parts.join('\n\n')}`,
  );
}

// ---------------------------------------------------------------------------
// Building the response.

function shorten(text: string, maxChars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= maxChars ? flat : `${flat.slice(0, maxChars - 1)}…`;
}

function toResponse(decision: Decision, request: ModelRequest): ModelResponse {
  const step = request.messages.filter((message) => message.role === 'assistant').length;
  const toolCalls: ToolCall[] = decision.toolCalls.map((entry, index) => {
    const raw = JSON.stringify(entry.arguments);
    return { id: `offline_${step}_${index}`, name: entry.name, arguments: entry.arguments, raw };
  });
  const inputChars =
    request.messages.reduce((sum, message) => sum + message.content.length, 0) +
    JSON.stringify(request.tools ?? []).length;
  const outputChars =
    decision.content.length +
    (decision.thinking?.length ?? 0) +
    toolCalls.reduce((sum, toolCall) => sum + toolCall.raw.length, 0);
  const response: ModelResponse = {
    content: decision.content,
    toolCalls,
    usage: {
      inputTokens: Math.ceil(inputChars / 4),
      outputTokens: Math.max(1, Math.ceil(outputChars / 4)),
    },
    stopReason: toolCalls.length > 0 ? 'tool_calls' : 'end',
    model: OFFLINE_MODEL_NAME,
  };
  if (decision.thinking !== undefined) response.thinking = decision.thinking;
  return response;
}

function pause(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelled(signal));
  if (milliseconds <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, milliseconds);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(cancelled(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function cancelled(signal: AbortSignal | undefined): TroupeError {
  return new TroupeError('cancelled', 'The model call was cancelled.', { cause: signal?.reason });
}
