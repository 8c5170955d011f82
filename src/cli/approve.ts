import { createInterface } from 'node:readline';
import type { ApprovalRequest } from '../tools/tool.js';
import type { CliIo } from './context.js';

/**
 * `--approve`: asks y/n on the terminal before each risky action, one
 * question at a time (agents run in parallel). Without a terminal on stdin
 * every request is refused, and the tool tells the model so. `pause` and
 * `resume` let the live view step aside while the question is on screen.
 */
export function createTerminalApprover(
  io: CliIo,
  hooks: { pause?: () => void; resume?: () => void } = {},
): (request: ApprovalRequest) => Promise<boolean> {
  let queue: Promise<unknown> = Promise.resolve();
  return (request) => {
    const answer = queue.then(() => ask(io, request, hooks));
    queue = answer.catch(() => undefined);
    return answer;
  };
}

async function ask(
  io: CliIo,
  request: ApprovalRequest,
  hooks: { pause?: () => void; resume?: () => void },
): Promise<boolean> {
  const stdin = io.stdin;
  if (stdin === undefined || stdin.isTTY !== true || io.signal?.aborted === true) {
    io.stderr.write(
      `refused (no terminal to ask on): ${request.agentId} ${request.tool}: ${request.summary}\n`,
    );
    return false;
  }
  hooks.pause?.();
  try {
    const lines = createInterface({ input: stdin, terminal: false });
    io.stderr.write(
      `\n? ${request.agentId} wants to run ${request.tool}: ${request.summary}\n  Allow? [y/N] `,
    );
    const line = await new Promise<string>((resolve) => {
      const onAbort = (): void => resolve('');
      io.signal?.addEventListener('abort', onAbort, { once: true });
      lines.once('line', (text) => {
        io.signal?.removeEventListener('abort', onAbort);
        resolve(text);
      });
      lines.once('close', () => resolve(''));
    });
    lines.close();
    return /^\s*y(es)?\s*$/i.test(line);
  } finally {
    hooks.resume?.();
  }
}
