import { z } from 'zod';
import { defineTool } from '../tool.js';

/**
 * `report_progress` (no tier): lets an agent say how far it has come without
 * ending its work. The note becomes an `agent.progress` event, which the live
 * view shows beside the agent; where nothing listens, the call is harmless.
 */
export const reportProgressTool = defineTool({
  name: 'report_progress',
  idempotent: true,
  description:
    'Report progress to whoever supervises you (one short line, such as "read 3 of 5 files"), without ending your work. Use it on long tasks; it does not replace your final answer.',
  parameters: z.object({
    note: z
      .string()
      .min(1)
      .max(300)
      .describe('One short line saying what is done and what is next.'),
  }),
  execute: ({ note }, context) => {
    if (context.progress === undefined) return 'Noted (nobody is watching progress in this run).';
    context.progress(note);
    return 'Progress reported.';
  },
});
