import { createInterface } from 'node:readline';
import type { ApprovalRequest } from '../tools/tool.js';
import type { CliIo } from './context.js';

/**
 * `--approve`: asks y/n on the terminal before each risky action, one
 * question at a time (agents run in parallel). The question names the
 * agent, its role and the tool, and shows in full what will run or be
 * written (the command line, the code, the content), a page at a time.
 * Without a terminal on stdin every request is refused, and the tool tells
 * the model so. `pause` and `resume` let the live view step aside while the
 * question is on screen.
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

/** Lines of detail shown per page. */
export const APPROVAL_PAGE_LINES = 40;

/**
 * Control characters shown as visible escapes (`\x1b`, `\r`), so code cannot
 * hide a line from the person approving it with terminal sequences.
 */
export function showControls(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point.
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (character) => `\\x${character.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/** The question's first line: who wants to run what. */
export function approvalHeading(request: ApprovalRequest): string {
  const role = request.role === undefined ? '' : ` (role ${showControls(request.role)})`;
  return `? ${showControls(request.agentId)}${role} wants to run ${request.tool}: ${showControls(request.summary)}`;
}

/** The detail as numbered lines, every control character made visible. */
export function approvalDetailLines(request: ApprovalRequest): string[] {
  if (request.detail === undefined || request.detail === '') return [];
  const lines = request.detail.split('\n');
  const width = String(lines.length).length;
  return lines.map(
    (line, index) => `  ${String(index + 1).padStart(width)} │ ${showControls(line)}`,
  );
}

/**
 * Shows a request page by page on `write` and reads answers with
 * `readLine`: Enter shows the next page, y or yes approves, anything else
 * refuses.
 */
export async function askPaged(
  request: ApprovalRequest,
  write: (text: string) => void,
  readLine: () => Promise<string | undefined>,
): Promise<boolean> {
  const detail = approvalDetailLines(request);
  write(`\n${approvalHeading(request)}\n`);
  let shown = 0;
  for (;;) {
    const page = detail.slice(shown, shown + APPROVAL_PAGE_LINES);
    if (page.length > 0) write(`${page.join('\n')}\n`);
    shown += page.length;
    if (shown < detail.length) {
      write(
        `  -- ${detail.length - shown} more lines: Enter shows the next page, y allows, n refuses -- `,
      );
      const line = (await readLine()) ?? '';
      if (line.trim() === '') continue;
      return /^\s*y(es)?\s*$/i.test(line);
    }
    write('  Allow? [y/N] ');
    return /^\s*y(es)?\s*$/i.test((await readLine()) ?? '');
  }
}

async function ask(
  io: CliIo,
  request: ApprovalRequest,
  hooks: { pause?: () => void; resume?: () => void },
): Promise<boolean> {
  const stdin = io.stdin;
  if (stdin === undefined || stdin.isTTY !== true || io.signal?.aborted === true) {
    io.stderr.write(
      `refused (no terminal to ask on): ${showControls(request.agentId)} ${request.tool}: ${showControls(request.summary)}\n`,
    );
    return false;
  }
  hooks.pause?.();
  const lines = createInterface({ input: stdin, terminal: false });
  const pending: string[] = [];
  const waiting: ((line: string | undefined) => void)[] = [];
  let closed = false;
  lines.on('line', (text) => {
    const next = waiting.shift();
    if (next === undefined) pending.push(text);
    else next(text);
  });
  const finish = (): void => {
    closed = true;
    for (const next of waiting.splice(0)) next(undefined);
  };
  lines.once('close', finish);
  io.signal?.addEventListener('abort', finish, { once: true });
  const readLine = (): Promise<string | undefined> => {
    const line = pending.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (closed) return Promise.resolve(undefined);
    return new Promise((resolve) => waiting.push(resolve));
  };
  try {
    return await askPaged(request, (text) => io.stderr.write(text), readLine);
  } finally {
    io.signal?.removeEventListener('abort', finish);
    lines.close();
    hooks.resume?.();
  }
}
