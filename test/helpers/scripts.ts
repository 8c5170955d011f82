import { z } from 'zod';
import type { ScriptStep } from '../../src/model/script.js';
import { defineTool } from '../../src/tools/tool.js';

/** A script step that calls one tool. */
export function call(name: string, args: Record<string, unknown> | string = {}): ScriptStep {
  return { toolCalls: [{ name, arguments: args }] };
}

/** A script step that gives a final answer. */
export function answer(content: string): ScriptStep {
  return { content };
}

/** A tool that echoes its text. */
export const echoTool = defineTool({
  name: 'echo',
  description: 'Echoes text back.',
  parameters: z.object({ text: z.string() }),
  execute: ({ text }) => `echo: ${text}`,
});

/** A tool that always throws. */
export const failingReadTool = defineTool({
  name: 'read_file',
  description: 'Reads a file.',
  parameters: z.object({ path: z.string() }),
  execute: ({ path }) => {
    throw new Error(`File not found: ${path}. Use list_dir to see what exists.`);
  },
});

/** The summarizer's instruction, as the agent's default summarizer sends it (its system prompt). */
export const SUMMARY_REQUEST = 'Summarize this part of an agent conversation';

/**
 * A step that answers every summary request of history compression (and
 * nothing else): put it first in a script, so it wins over unmatched steps.
 */
export function summaryStep(content: string): ScriptStep {
  return { match: { conversationContains: SUMMARY_REQUEST }, content, repeat: true };
}
