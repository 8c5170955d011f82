/**
 * The text heuristics behind the offline model: extractive findings from a
 * markdown or text document. Everything here is plain string processing;
 * nothing is generated.
 */

/** What a researcher publishes about one document (the `findings` channel payload). */
export interface OfflineFindings {
  source: string;
  title: string;
  summary: string;
  keyPoints: string[];
  figures: string[];
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

/** Words that mark a sentence as a conclusion or a change; never themes on their own. */
export const CUE_WORDS: ReadonlySet<string> = new Set([
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

/** Splits a paragraph into sentences at ., ! or ? followed by a capital, digit or quote. */
export function splitSentences(paragraph: string): string[] {
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

/** Cuts text to `maxChars` characters with an ellipsis. */
export function cut(text: string, maxChars: number): string {
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
