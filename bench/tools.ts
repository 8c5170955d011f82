import { z } from 'zod';
import { defineTool } from '../src/tools/tool.js';

/**
 * Tools of the benchmark, loaded into the worker threads as a user tool
 * module (dist/bench/tools.js) and used directly by the in-process baseline.
 */

/** Does nothing: the fan-out measures the machinery, not the tool. */
export const noopTool = defineTool({
  name: 'noop',
  description: 'Does nothing and says so.',
  parameters: z.object({ step: z.number().int().optional() }),
  execute: () => 'ok',
});

/** Keeps the thread busy for `ms` milliseconds: a CPU-bound tool. */
export const burnTool = defineTool({
  name: 'burn_cpu',
  description: 'Computes for a while.',
  parameters: z.object({ ms: z.number().positive() }),
  execute: ({ ms }) => {
    const end = performance.now() + ms;
    let spins = 0;
    while (performance.now() < end) spins += 1;
    return `spun ${spins} times`;
  },
});

/** Reports progress `count` times in one go: event throughput. */
export const floodTool = defineTool({
  name: 'flood_progress',
  description: 'Reports progress many times.',
  parameters: z.object({ count: z.number().int().positive() }),
  execute: ({ count }, context) => {
    for (let index = 0; index < count; index += 1) context.progress?.(`tick ${index}`);
    return `reported ${count}`;
  },
});
