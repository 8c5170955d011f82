/**
 * The text heuristics behind the offline model: extractive findings from a
 * markdown or text document, an aggregation across findings, and a report.
 * Everything here is plain string processing; nothing is generated.
 */

/** What a researcher publishes about one document (the `findings` channel payload). */
export interface OfflineFindings {
  source: string;
  title: string;
  summary: string;
  keyPoints: string[];
  figures: string[];
}

/** One set of findings with the agent that published it. */
export interface ReceivedFindings {
  from: string;
  findings: OfflineFindings;
}

const STOPWORDS = new Set(
  `a about above after again against all also am an and any are as at be because been before being
  below between both but by can could did do does doing down during each few for from further had has
  have having he her here hers him his how i if in into is it its itself just me more most my no nor
  not now of off on once only or other our ours out over own same she should so some such than that
  the their theirs them then there these they this those through to too under until up very was we
  were what when where which while who whom why will with would you your yours one two three many
  much may might must new per via yet within without across among upon while whereas however thus
  s t use used using uses make makes made year years percent`
    .split(/\s+/)
    .filter((word) => word !== ''),
);

const CUE_WORDS = new Set([
  'key',
  'main',
  'significant',
  'significantly',
  'conclude',
  'concluded',
  'conclusion',
  'result',
  'results',
  'found',
  'finds',
  'shows',
  'show',
  'showed',
  'increase',
  'increased',
  'decrease',
  'decreased',
  'grew',
  'fell',
  'rose',
  'important',
  'therefore',
  'overall',
  'largest',
  'risk',
  'recommend',
  'recommends',
]);

const UNIT =
  '(?:\\s?(?:%|percent\\b|per cent\\b|million\\b|billion\\b|trillion\\b|thousand\\b|bn\\b|[kKMGT]Wh\\b|[kKMG]W\\b|km\\b|kg\\b|tonnes?\\b|°C\\b|milliseconds?\\b|seconds?\\b|minutes?\\b|hours?\\b|days?\\b|weeks?\\b|months?\\b|x\\b))?';
const FIGURE_PATTERN = new RegExp(`(?:[$€£]\\s?\\d[\\d,.]*|\\b\\d[\\d,.]*)${UNIT}`, 'g');

interface Sentence {
  text: string;
  index: number;
  section: string;
  isFirstInSection: boolean;
  score: number;
}

/** Words of a text that carry meaning: lowercase, no stopwords, light plural folding. */
export function contentWords(text: string): string[] {
  const words = text.toLowerCase().match(/[a-z][a-z'-]*[a-z]|[a-z]/g) ?? [];
  return words
    .map((word) => word.replace(/'s$/, ''))
    .filter((word) => word.length > 2 && !STOPWORDS.has(word))
    .map(fold);
}

function fold(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** The numeric expressions in a sentence ("42%", "$1.2 billion", "2023"). */
export function figuresIn(text: string): string[] {
  return [...text.matchAll(FIGURE_PATTERN)].map((match) => match[0].trim().replace(/[.,]$/, ''));
}

/** Like figuresIn, without bare years ("2024"), which date a sentence rather than measure anything. */
export function measuresIn(text: string): string[] {
  return figuresIn(text).filter((figure) => !/^(?:1[89]|20)\d\d$/.test(figure));
}

function plain(text: string): string {
  return text
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/(\*\*|__)(.*?)\1/g, '$2')
    .replace(/(^|\W)[*_]([^*_]+)[*_](?=\W|$)/g, '$1$2')
    .replace(/\s+/g, ' ')
    .trim();
}

function splitSentences(paragraph: string): string[] {
  return paragraph
    .split(/(?<=[.!?])\s+(?=[A-Z0-9"“($€£])/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.length > 0);
}

interface ParsedDocument {
  title: string | undefined;
  headings: string[];
  sentences: Sentence[];
}

function parseDocument(text: string): ParsedDocument {
  let title: string | undefined;
  const headings: string[] = [];
  const sentences: Sentence[] = [];
  let section = '';
  let firstInSection = true;
  let inFence = false;
  let paragraph: string[] = [];

  const flush = (): void => {
    if (paragraph.length === 0) return;
    for (const text of splitSentences(plain(paragraph.join(' ')))) {
      sentences.push({
        text,
        index: sentences.length,
        section,
        isFirstInSection: firstInSection,
        score: 0,
      });
      firstInSection = false;
    }
    paragraph = [];
  };

  for (const raw of text.replace(/<!--[\s\S]*?-->/g, '').split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith('```') || line.startsWith('~~~')) {
      flush();
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const heading = /^(#{1,6})\s+(.*?)\s*#*$/.exec(line);
    if (heading !== null) {
      flush();
      const headingText = plain(heading[2] ?? '');
      if ((heading[1] ?? '').length === 1 && title === undefined) title = headingText;
      else headings.push(headingText);
      section = headingText;
      firstInSection = true;
      continue;
    }
    if (line === '' || /^[-*_]{3,}$/.test(line) || line.startsWith('|') || line.startsWith('>')) {
      flush();
      if (line.startsWith('>')) paragraph.push(line.replace(/^>\s?/, ''));
      continue;
    }
    const item = /^(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item !== null) {
      flush();
      paragraph.push(item[1] ?? '');
      flush();
      continue;
    }
    paragraph.push(line);
  }
  flush();
  return { title, headings, sentences };
}

function scoreSentences(document: ParsedDocument): void {
  const frequency = new Map<string, number>();
  for (const sentence of document.sentences) {
    for (const word of contentWords(sentence.text)) {
      frequency.set(word, (frequency.get(word) ?? 0) + 1);
    }
  }
  const headingWords = new Set(
    contentWords([document.title ?? '', ...document.headings].join(' ')),
  );
  for (const sentence of document.sentences) {
    const words = contentWords(sentence.text);
    const wordCount = sentence.text.split(/\s+/).length;
    let score = 0;
    const repeated = words.filter((word) => (frequency.get(word) ?? 0) > 1);
    score += repeated.reduce((sum, word) => sum + Math.log(frequency.get(word) ?? 1), 0);
    score /= Math.sqrt(Math.max(words.length, 1));
    score += 0.6 * words.filter((word) => headingWords.has(word)).length;
    if (sentence.isFirstInSection) score += 0.8;
    if (sentence.index === 0) score += 0.5;
    if (measuresIn(sentence.text).length > 0) score += 0.6;
    if (
      sentence.text
        .toLowerCase()
        .match(/[a-z]+/g)
        ?.some((word) => CUE_WORDS.has(word))
    ) {
      score += 0.5;
    }
    if (wordCount < 6) score -= 1.5;
    if (wordCount > 45) score -= 0.7;
    sentence.score = score;
  }
}

function cut(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1).trimEnd()}…`;
}

function titleFromPath(path: string): string {
  const name = path.split(/[\\/]/).at(-1) ?? path;
  const stem = name.replace(/\.[^.]+$/, '').replace(/[-_]+/g, ' ');
  return stem.charAt(0).toUpperCase() + stem.slice(1);
}

/**
 * Extractive findings for one document: its title, a two-sentence summary,
 * the best-scoring key sentences and the sentences that hold figures, all in
 * the document's own words.
 */
export function extractFindings(source: string, text: string): OfflineFindings {
  const document = parseDocument(text);
  scoreSentences(document);
  const ranked = [...document.sentences].sort((a, b) => b.score - a.score || a.index - b.index);
  // The lead sentence plus the best other one: the classic extractive baseline.
  const lead = document.sentences.find((sentence) => sentence.text.split(/\s+/).length >= 6);
  const summarySentences = [
    ...(lead === undefined ? [] : [lead]),
    ...ranked.filter((sentence) => sentence !== lead).slice(0, lead === undefined ? 2 : 1),
  ].sort((a, b) => a.index - b.index);
  const used = new Set(summarySentences.map((sentence) => sentence.index));
  const keyPoints = ranked
    .filter((sentence) => !used.has(sentence.index) && sentence.text.split(/\s+/).length >= 5)
    .slice(0, 5)
    .sort((a, b) => a.index - b.index)
    .map((sentence) => cut(sentence.text, 240));
  const figures = document.sentences
    .map((sentence) => ({ sentence, count: measuresIn(sentence.text).length }))
    .filter(({ count }) => count > 0)
    .sort((a, b) => b.count - a.count || b.sentence.score - a.sentence.score)
    .slice(0, 6)
    .sort((a, b) => a.sentence.index - b.sentence.index)
    .map(({ sentence }) => cut(sentence.text, 220));
  const summary =
    summarySentences.length > 0
      ? cut(summarySentences.map((sentence) => sentence.text).join(' '), 400)
      : 'The document has no readable sentences.';
  return {
    source,
    title: document.title ?? document.headings[0] ?? titleFromPath(source),
    summary,
    keyPoints,
    figures,
  };
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
    .sort((a, b) => weight(b) - weight(a) || b.count - a.count || a.term.localeCompare(b.term));
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
  const sources = [...bySource.values()].sort((a, b) => a.source.localeCompare(b.source));
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
