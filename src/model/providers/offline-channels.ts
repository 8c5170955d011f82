import type { Message, ToolSchema } from '../types.js';
import { aggregateFindings, aggregateMessages } from './offline-aggregate.js';
import {
  argument,
  call,
  callsSince,
  channelMessages,
  type Decision,
  documentPaths,
  final,
  firstUser,
  LABEL,
  listArguments,
  type OfferedTools,
  publishTools,
  shorten,
} from './offline-conversation.js';
import { extractFindings, type OfflineFindings } from './offline-extract.js';

/**
 * The offline model's channel work: a publisher (the researcher, or any role
 * with a `publish_<channel>` tool) reads its documents and publishes what it
 * extracted; a subscriber (the analyst, or any role receiving channel
 * messages) notes each message and aggregates them after the close notice.
 */

/** Fills a custom channel's payload from extracted findings, guided by each field's name and type. */
export function fillPayload(
  tool: ToolSchema,
  findings: OfflineFindings,
  text: string,
): Record<string, unknown> {
  const properties = (tool.parameters['properties'] ?? {}) as Record<
    string,
    Record<string, unknown>
  >;
  const payload: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(properties)) {
    const name = key.toLowerCase();
    const type = schema['type'];
    const choices = schema['enum'];
    if (Array.isArray(choices) && choices.length > 0) {
      payload[key] = choices[0];
    } else if (type === 'string') {
      payload[key] = /source|path|file|url|document/.test(name)
        ? findings.source
        : /title|name|heading|topic|subject/.test(name)
          ? findings.title
          : /quote|sentence|claim|point|highlight|key/.test(name)
            ? (findings.keyPoints[0] ?? findings.summary)
            : /figure|number|stat|metric/.test(name)
              ? (findings.figures[0] ?? 'none')
              : findings.summary;
    } else if (type === 'number' || type === 'integer') {
      payload[key] = /word/.test(name)
        ? (text.match(/\S+/g) ?? []).length
        : /point|sentence/.test(name)
          ? findings.keyPoints.length
          : findings.figures.length;
    } else if (type === 'boolean') {
      payload[key] = /figure|number/.test(name) ? findings.figures.length > 0 : true;
    } else if (type === 'array') {
      payload[key] = /figure|number|stat|metric|data/.test(name)
        ? findings.figures
        : findings.keyPoints;
    }
  }
  return payload;
}

/** A role that reads documents and publishes what they say on its channel. */
export function publisher(messages: readonly Message[], tools: OfferedTools): Decision {
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
  const documents = readable.map((entry) => {
    const text = entry.result?.content ?? '';
    return { text, findings: extractFindings(argument(entry.call, 'path') ?? 'document', text) };
  });
  const failures = reads
    .filter((entry) => entry.result === undefined || entry.result.isError)
    .map(
      (entry) => `${argument(entry.call, 'path') ?? '?'}: ${entry.result?.content ?? 'no result'}`,
    );
  const tool = tools.get('publish_findings') ?? publishTools(tools)[0];
  const published = calls.filter((entry) => entry.call.name === tool?.name);
  if (published.length === 0 && documents.length > 0 && tool !== undefined) {
    return {
      content: '',
      toolCalls: documents.map(({ text, findings }) => ({
        name: tool.name,
        arguments:
          tool.name === 'publish_findings' ? { ...findings } : fillPayload(tool, findings, text),
      })),
      thinking: 'Heuristic extraction done: publishing the findings.',
    };
  }
  if (documents.length === 0) {
    return final(`${LABEL} I could not read the documents: ${failures.join('; ')}`);
  }
  const channel = tool?.name.slice('publish_'.length) ?? 'findings';
  const count = `${documents.length} document${documents.length === 1 ? '' : 's'}`;
  const how =
    published.length > 0
      ? `Published findings for ${count} on the ${channel} channel.`
      : `Findings for ${count}:\n${JSON.stringify(documents.map((document) => document.findings))}`;
  const lines = documents.map(
    ({ findings }) =>
      `- ${findings.title} (${findings.source}): ${findings.keyPoints.length} key points, ${findings.figures.length} figures. ${shorten(findings.summary, 200)}`,
  );
  const notes = [
    ...failures.map((text) => `Could not read ${text}`),
    ...published
      .filter((entry) => entry.result?.isError === true)
      .map((entry) => `Publishing failed: ${entry.result?.content ?? ''}`),
  ];
  return final([`${LABEL} ${how}`, ...lines, ...notes].join('\n'));
}

function asFindings(payload: unknown): OfflineFindings | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const data = payload as Partial<OfflineFindings>;
  if (typeof data.source !== 'string' || typeof data.title !== 'string') return undefined;
  if (!Array.isArray(data.keyPoints) || !Array.isArray(data.figures)) return undefined;
  return {
    source: data.source,
    title: data.title,
    summary: typeof data.summary === 'string' ? data.summary : '',
    keyPoints: data.keyPoints.map(String),
    figures: data.figures.map(String),
  };
}

/**
 * A subscriber: a short interim note for each new channel message, and after
 * the close notice its aggregation as the final answer (findings across
 * sources for findings, any other payloads side by side).
 */
export function subscriber(messages: readonly Message[], expectsFindings: boolean): Decision {
  const { received, closed } = channelMessages(messages);
  const findings = received.map((message) => ({
    from: message.from,
    findings: asFindings(message.payload),
  }));
  const allFindings = findings.every((entry) => entry.findings !== undefined);
  if (closed) {
    const useFindings = received.length === 0 ? expectsFindings : allFindings;
    return final(
      useFindings
        ? aggregateFindings(
            findings.flatMap((entry) =>
              entry.findings === undefined ? [] : [{ from: entry.from, findings: entry.findings }],
            ),
          )
        : aggregateMessages(received),
      `Heuristic aggregation of ${received.length} message${received.length === 1 ? '' : 's'}.`,
    );
  }
  const lastAssistant = messages.findLastIndex((message) => message.role === 'assistant');
  const fresh = received.filter((message) => message.index > lastAssistant);
  if (fresh.length === 0) return final(`${LABEL} Waiting for messages on the channel.`);
  const notes = fresh.map((message) => {
    const item = asFindings(message.payload);
    return item === undefined
      ? `${message.from} on ${message.channel}: ${shorten(JSON.stringify(message.payload), 100)}`
      : `${item.title} (${item.source}, from ${message.from}): ${item.keyPoints.length} key points, ${item.figures.length} figures`;
  });
  return final(
    `${LABEL} Noted ${notes.join('; ')}. ${received.length} message${received.length === 1 ? '' : 's'} so far; waiting for more.`,
  );
}
