import type { Message } from '../types.js';
import { composeReport } from './offline-aggregate.js';
import {
  argument,
  type CallWithResult,
  call,
  callsSince,
  type Decision,
  delegateRoles,
  documentPaths,
  final,
  firstUser,
  LABEL,
  listArguments,
  type OfferedTools,
  shorten,
} from './offline-conversation.js';
import { extractFindings } from './offline-extract.js';

/**
 * The offline model as coordinator (list the workspace, delegate research
 * with the analyst, then the reporter), as reporter (write report.md) and as
 * a chat agent (look around with its tools, answer honestly).
 */

const MAX_RESEARCH_TASKS = 6;

/** The coordinator: list_dir → delegate researchers + analyst → delegate the reporter → final. */
export function coordinator(messages: readonly Message[], tools: OfferedTools): Decision {
  const task = firstUser(messages);
  const calls = callsSince(messages, 0);
  const lastUserIndex = messages.findLastIndex((message) => message.role === 'user');
  const answeredBefore = messages.slice(0, lastUserIndex).some((m) => m.role === 'assistant');
  // A later user message (the budget's last turn, or steering): report honestly and stop.
  if ((answeredBefore && messages[lastUserIndex]?.content !== task) || !tools.has('delegate')) {
    return final(`${LABEL} ${progressReport(calls, messages[lastUserIndex]?.content ?? '')}`);
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

function progressReport(calls: readonly CallWithResult[], notice: string): string {
  const stopped = /budget/i.test(notice) ? 'The run stopped at its budget. ' : '';
  const delegations = calls.filter((entry) => entry.call.name === 'delegate');
  if (delegations.length === 0) return `${stopped}No work was delegated before the stop.`;
  // The digest of the results so far counts them: "5 sub-agents: 3 completed, …".
  const done = Number(/sub-agents?: (\d+) completed/.exec(notice)?.[1] ?? 0);
  const answered = delegations.filter(
    (entry) => entry.result !== undefined && entry.result.isError !== true,
  );
  const report =
    answered.length >= 2
      ? 'The reporter ran; see report.md in the run folder.'
      : 'No report was written.';
  return `${stopped}${done} sub-agent${done === 1 ? '' : 's'} completed before the stop. ${report}`;
}

function groupDocuments(documents: readonly string[]): string[][] {
  const count = Math.min(documents.length, MAX_RESEARCH_TASKS);
  const groups: string[][] = Array.from({ length: count }, () => []);
  documents.forEach((path, index) => {
    groups[index % count]?.push(path);
  });
  return groups;
}

/**
 * Finds one role's answer inside a delegate result: the digest lists each
 * answer as `[<role>-<n>] <answer>`, one after the other.
 */
function resultOf(content: string, role: string): string | undefined {
  const name = role.replace(/[^\w-]/g, '');
  const start = new RegExp(`^\\[${name}-\\d+\\] `, 'm').exec(content);
  if (start === null) return undefined;
  const rest = content.slice(start.index + start[0].length);
  const end = rest.search(/\n+\[[\w.-]+-\d+\] /);
  const answer = (end === -1 ? rest : rest.slice(0, end)).trim();
  return answer === '' ? undefined : answer;
}

/** The reporter: write report.md from the analysis in its task, then say where it is. */
export function reporter(messages: readonly Message[], tools: OfferedTools): Decision {
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

/** Any other agent: look at the workspace or the files named, then answer from what the tools returned. */
export function chat(messages: readonly Message[], tools: OfferedTools): Decision {
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
