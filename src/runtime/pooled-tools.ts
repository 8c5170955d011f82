import { TroupeError } from '../errors.js';
import type { AnyTool, ToolContext } from '../tools/tool.js';
import type { ToolPool } from './wire/tool-pool.js';

/**
 * Tools an agent in the main thread calls, each executed on `pool` instead:
 * the same name, description, parameters and tiers (the caller's registry
 * checks the arguments and the grants), while the tool's code runs on a tool
 * thread, so a tool that throws, spins or exhausts its memory costs one call,
 * never the process. A cancelled agent gives up its call; the tool's
 * progress notes and approval questions come back to the agent's context.
 * `troupe chat --tools` runs its user tools this way.
 */
export function toolsOnPool(pool: ToolPool, tools: readonly AnyTool[]): AnyTool[] {
  return tools.map(
    (tool): AnyTool => ({
      ...tool,
      execute: (input: unknown, context: ToolContext) => runOnPool(pool, tool.name, input, context),
    }),
  );
}

async function runOnPool(
  pool: ToolPool,
  name: string,
  input: unknown,
  context: ToolContext,
): Promise<string> {
  const approve = context.approve;
  const handle = pool.call(
    { tool: name, input, agentId: context.agentId, role: context.role },
    {
      progress: (note) => context.progress?.(note),
      approve:
        approve === undefined
          ? undefined
          : (tool, summary) => approve({ tool, summary, agentId: context.agentId }),
    },
  );
  const onAbort = (): void => handle.cancel();
  if (context.signal.aborted) onAbort();
  else context.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const answer = await handle.answer;
    if (answer.ok) return answer.content;
    throw new TroupeError(answer.code, answer.message);
  } finally {
    context.signal.removeEventListener('abort', onAbort);
  }
}
