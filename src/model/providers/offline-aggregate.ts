import { compareNames, compareNatural } from '../../util/text-order.js';
import {
  CUE_WORDS,
  contentWords,
  cut,
  measuresIn,
  type OfflineFindings,
  splitSentences,
} from './offline-extract.js';

/**
 * How the offline model aggregates what arrives on channels: findings across
 * sources (themes, figures side by side, who says what), any other payloads
 * side by side, and the report around an analysis. Rule-based, extractive.
 */

/** One set of findings with the agent that published it. */
export interface ReceivedFindings {
  from: string;
  findings: OfflineFindings;
}

interface Theme {
  term: string;
  sources: string[];
  count: number;
}

function themesOf(received: readonly ReceivedFindings[]): Theme[] {
  const perSource = new Map<string, Map<string, number>>();
  for (const { findings } of received) {
    const counts = perSource.get(findings.source) ?? new Map<string, number>();
    const text = [findings.title, findings.summary, ...findings.keyPoints, ...findings.figures];
    for (const line of text) {
      // Phrases never span punctuation: "storage, provided" is not a theme.
      for (const clause of line.split(/[,;:.()!?]/)) {
        const words = contentWords(clause).filter((word) => !CUE_WORDS.has(word));
        const terms = [...words, ...words.slice(1).map((word, i) => `${words[i]} ${word}`)];
        for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
      }
    }
    perSource.set(findings.source, counts);
  }
  const themes = new Map<string, Theme>();
  for (const [source, counts] of perSource) {
    for (const [term, count] of counts) {
      const theme = themes.get(term) ?? { term, sources: [], count: 0 };
      theme.sources.push(source);
      theme.sources.sort();
      theme.count += count;
      themes.set(term, theme);
    }
  }
  const minimumSources = perSource.size > 1 ? 2 : 1;
  const ranked = [...themes.values()]
    .filter((theme) => theme.sources.length >= minimumSources)
    .sort((a, b) => weight(b) - weight(a) || b.count - a.count || compareNames(a.term, b.term));
  const chosen: Theme[] = [];
  for (const theme of ranked) {
    // Skip a word already covered by a chosen phrase with the same sources, and vice versa.
    const overlaps = chosen.some(
      (other) =>
        other.term.split(' ').includes(theme.term) || theme.term.split(' ').includes(other.term),
    );
    if (!overlaps) chosen.push(theme);
    if (chosen.length === 6) break;
  }
  return chosen;
}

// A phrase shared by k sources beats a single word shared by k + 1: phrases say more.
function weight(theme: Theme): number {
  return theme.sources.length + (theme.term.includes(' ') ? 1.5 : 0);
}

function sentenceWith(findings: OfflineFindings, term: string): string | undefined {
  const words = term.split(' ');
  return [findings.summary, ...findings.keyPoints, ...findings.figures]
    .flatMap((text) => splitSentences(text))
    .find((sentence) => {
      const content = contentWords(sentence);
      if (words.length === 1) return content.includes(term);
      return content.some((word, i) => word === words[0] && content[i + 1] === words[1]);
    });
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s+/g, ' ');
}

/** The marker line every offline aggregation and report carries, so nobody mistakes it for an LLM's. */
export const HEURISTIC_NOTE =
  "_Heuristic output of troupe's offline model: extractive and rule-based, no language model was used._";

/**
 * Aggregates findings across sources as markdown: common themes and which
 * source says what about them, figures side by side, and each source's summary.
 */
export function aggregateFindings(received: readonly ReceivedFindings[]): string {
  if (received.length === 0) {
    return `## Analysis\n\n${HEURISTIC_NOTE}\n\nNo findings arrived on the channel, so there is nothing to aggregate.`;
  }
  // Sorted by source, so the analysis does not depend on which thread finished first.
  const bySource = new Map<string, OfflineFindings>();
  for (const { findings } of received) bySource.set(findings.source, findings);
  const sources = [...bySource.values()].sort((a, b) => compareNames(a.source, b.source));
  const lines: string[] = [
    `## Analysis across ${sources.length} source${sources.length === 1 ? '' : 's'}`,
    '',
    HEURISTIC_NOTE,
    '',
  ];
  const themes = themesOf(sources.map((findings) => ({ from: '', findings })));
  const figureCount = sources.reduce((sum, findings) => sum + findings.figures.length, 0);
  lines.push(
    `${sources.length} source${sources.length === 1 ? '' : 's'} (${sources.map((findings) => findings.source).join(', ')}) gave ${figureCount} sentence${figureCount === 1 ? '' : 's'} with figures.${
      themes.length > 0
        ? ` The most shared themes: ${themes
            .slice(0, 3)
            .map((theme) => `${theme.term} (${theme.sources.length} of ${sources.length})`)
            .join(', ')}.`
        : ''
    }`,
    '',
    '### Common themes',
    '',
  );
  if (themes.length === 0) lines.push('The sources share no recurring terms.');
  for (const theme of themes) {
    lines.push(`- **${theme.term}** (${theme.sources.length} of ${sources.length} sources)`);
    for (const source of theme.sources.slice(0, 3)) {
      const findings = bySource.get(source);
      const sentence = findings === undefined ? undefined : sentenceWith(findings, theme.term);
      if (sentence !== undefined) lines.push(`  - ${source}: "${cut(sentence, 150)}"`);
    }
  }
  lines.push(
    '',
    '### Figures side by side',
    '',
    '| Source | Figure | In context |',
    '| --- | --- | --- |',
  );
  for (const findings of sources) {
    const figures = findings.figures.slice(0, 3);
    if (figures.length === 0) lines.push(`| ${cell(findings.source)} | none | |`);
    for (const sentence of figures) {
      const numbers = measuresIn(sentence).slice(0, 3).join(', ');
      lines.push(`| ${cell(findings.source)} | ${cell(numbers)} | ${cell(cut(sentence, 140))} |`);
    }
  }
  lines.push('', '### What each source says', '');
  for (const findings of sources) {
    lines.push(`- **${findings.title}** (${findings.source}): ${findings.summary}`);
    for (const point of findings.keyPoints.slice(0, 2)) lines.push(`  - ${point}`);
  }
  return lines.join('\n');
}

/** A markdown report around an analysis, for the reporter to write. `task` names the subject. */
export function composeReport(task: string, analysis: string): string {
  const subject = oneLineText(task);
  const title =
    subject !== '' && subject.length <= 70 ? subject.replace(/[.:]$/, '') : 'Research report';
  // The analysis carries the heuristic note already; the report states it once, at the top.
  const body = analysis
    .replace(HEURISTIC_NOTE, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return [
    `# ${title}`,
    '',
    HEURISTIC_NOTE,
    '',
    ...(subject !== '' && title !== subject ? [`**Task:** ${subject}`, ''] : []),
    body === '' ? 'No analysis was provided.' : body,
    '',
    '## Method',
    '',
    'Researcher agents read each document and published extractive findings (headings, key',
    'sentences scored by term frequency, position and cue words, and sentences with figures) on',
    'the `findings` channel. The analyst aggregated them across sources, and the reporter wrote',
    'this file. Every statement above is quoted or condensed from the documents themselves.',
    '',
  ].join('\n');
}

function oneLineText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** One channel message as a subscriber received it. */
export interface ReceivedMessage {
  channel: string;
  from: string;
  payload: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return cut(value.replace(/\s+/g, ' '), 100);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return cut(value.map((item) => formatValue(item)).join('; '), 140);
  return cut(JSON.stringify(value) ?? '', 100);
}

/**
 * Any channel payloads side by side: one table row per message (sorted by
 * sender, so thread timing does not change it), one column per field, and a
 * total for numeric fields.
 */
export function aggregateMessages(received: readonly ReceivedMessage[]): string {
  if (received.length === 0) {
    return `## Collected messages\n\n${HEURISTIC_NOTE}\n\nNo messages arrived, so there is nothing to collect.`;
  }
  const channels = [...new Set(received.map((message) => message.channel))];
  const rows = received
    .map((message) => ({
      from: message.from,
      fields: isRecord(message.payload) ? message.payload : { value: message.payload },
    }))
    .sort(
      (a, b) =>
        compareNatural(a.from, b.from) ||
        compareNames(JSON.stringify(a.fields), JSON.stringify(b.fields)),
    );
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row.fields)))].slice(0, 6);
  const lines = [
    `## ${received.length} message${received.length === 1 ? '' : 's'} on ${channels.map((name) => `"${name}"`).join(', ')}`,
    '',
    HEURISTIC_NOTE,
    '',
    `| from | ${columns.join(' | ')} |`,
    `| --- | ${columns.map(() => '---').join(' | ')} |`,
    ...rows.map(
      (row) =>
        `| ${cell(row.from)} | ${columns.map((column) => cell(formatValue(row.fields[column] ?? ''))).join(' | ')} |`,
    ),
  ];
  const numeric = columns.filter((column) =>
    rows.every((row) => typeof row.fields[column] === 'number'),
  );
  if (numeric.length > 0) {
    const total = (column: string): number =>
      rows.reduce((sum, row) => sum + (row.fields[column] as number), 0);
    lines.push(
      `| **total** | ${columns.map((column) => (numeric.includes(column) ? `**${total(column)}**` : '')).join(' | ')} |`,
    );
  }
  return lines.join('\n');
}
