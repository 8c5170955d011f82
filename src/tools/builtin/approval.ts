import { TroupeError } from '../../errors.js';
import type { ToolContext } from '../tool.js';

/**
 * Asks the person running troupe before a risky action, when the run asked
 * for approval (`context.approve` is set). A "no" (or no terminal to ask
 * on) throws `tool.refused` with a message telling the model the user
 * declined, so it does not retry. `detail` is what the person must see in
 * full to decide: the whole command line, the whole code, the content.
 */
export async function requireApproval(
  context: ToolContext,
  tool: string,
  summary: string,
  detail?: string,
): Promise<void> {
  if (context.approve === undefined) return;
  const approved = await context.approve({
    tool,
    agentId: context.agentId,
    summary,
    ...(detail === undefined ? {} : { detail }),
    ...(context.role === undefined ? {} : { role: context.role }),
  });
  if (!approved) {
    throw new TroupeError(
      'tool.refused',
      `The user did not approve this action (${summary}), so it was not done. Do not try it again; finish the task without it or explain what you would need.`,
    );
  }
}

/** A command line for messages: arguments quoted when needed, cut to `maxChars`. */
export function showCommand(program: string, args: readonly string[], maxChars = 300): string {
  const quoted = [program, ...args].map((part) =>
    /^[A-Za-z0-9_./:=@%+,-]+$/.test(part) ? part : `'${part.replaceAll("'", "'\\''")}'`,
  );
  const line = quoted.join(' ');
  return line.length > maxChars ? `${line.slice(0, maxChars)}…` : line;
}
