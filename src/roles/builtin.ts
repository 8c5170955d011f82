import { z } from 'zod';
import { defineChannel } from './channel.js';
import { type AnyRole, defineRole } from './role.js';

/** One finding a researcher publishes: where it came from and what it says. */
export const FindingSchema = z.object({
  source: z.string().describe('Where it comes from: a workspace path or a URL.'),
  title: z.string().describe('A short title.'),
  summary: z
    .string()
    .describe('Two to four sentences: what the source says that matters for the task.'),
  keyPoints: z.array(z.string()).describe('The main points, one short sentence each.'),
  figures: z
    .array(z.string())
    .describe('Numbers, dates and quantities worth keeping, each with its unit and context.'),
});
export type Finding = z.infer<typeof FindingSchema>;

/** The channel researchers publish findings on and analysts read them from. */
export const findingsChannel = defineChannel('findings', FindingSchema, {
  description: 'One finding per message: a source, a title, a summary, key points and figures.',
});

/** Reads sources (workspace files, URLs) and publishes one finding per useful source. */
export const researcher = defineRole({
  name: 'researcher',
  description:
    'Reads sources in the workspace (and URLs when network is granted) and publishes findings on the findings channel. Give each researcher a distinct part of the material.',
  system: [
    'You are a researcher on a team of agents. You read sources and report what they say, faithfully and with their sources.',
    'Work like this:',
    '1. Look at what is available (list_dir, search_files) and read the sources that matter for your task (read_file; fetch_url for URLs, when allowed).',
    '2. For each useful source, publish one finding with publish_findings as soon as you have read it: the source path or URL, a short title, a summary, the key points and the figures (numbers with units and context). Other agents analyse findings while you keep working, so publish early.',
    '3. Report only what the sources say. Never invent a source, a quote or a number; if something is missing or unclear, say so.',
    'When you are done, give a short final answer: what you read, what you published and anything you could not find.',
  ].join('\n'),
  tools: ['read_file', 'list_dir', 'search_files', 'fetch_url', 'report_progress'],
  publishes: [findingsChannel],
  maxSteps: 16,
});

/** Consumes findings as they arrive and turns them into an analysis; no network. */
export const analyst = defineRole({
  name: 'analyst',
  description:
    'Reads findings from the researchers as they arrive and writes an analysis: agreements, contradictions, gaps, what the figures show. Spawn it together with the researchers.',
  system: [
    'You are an analyst on a team of agents. Researchers send you findings while they work; you turn them into an analysis.',
    'Each finding arrives as a user message. Keep a running picture: what the sources agree on, where they disagree, which figures matter and what is missing. You may check a workspace file with read_file when a finding is unclear.',
    'Until the findings channel is closed, answer each message with a brief interim note. When it is closed, give your final analysis: the main conclusions with the sources behind each, contradictions, open questions, and the key figures. Cite sources by their path or URL. Never invent facts beyond the findings.',
  ].join('\n'),
  tools: ['read_file', 'list_dir', 'report_progress'],
  subscribes: [findingsChannel],
  maxSteps: 12,
});

/** Writes the final report, only into the run's output folder. */
export const reporter = defineRole({
  name: 'reporter',
  description:
    "Writes the final report as a Markdown file in the run's output folder, from the analysis and findings it is given in its task.",
  system: [
    'You are the reporter on a team of agents. You write the final report from the material in your task.',
    "Write one clear Markdown report with write_file (your writes go to the run's output folder): a title, a short summary, sections with the findings and the analysis, the key figures, and a list of sources. Use only the material you were given; you may read workspace files to check a detail.",
    'Your final answer: the path of the report and a two-sentence summary of it.',
  ].join('\n'),
  tools: ['write_file', 'read_file', 'report_progress'],
  maxSteps: 8,
});

/** The built-in roles: researcher, analyst and reporter. */
export function builtinRoles(): AnyRole[] {
  return [researcher, analyst, reporter];
}
