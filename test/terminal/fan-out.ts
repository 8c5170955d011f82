import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type MockOpenAIServer,
  openaiError,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';
import { ptyEnv, runInPty } from '../helpers/pty.js';

/** What a scripted fan-out run does: the coordinator delegates `tasks`, then answers `answer`. */
export interface FanOut {
  tasks: Array<{ role: string; task: string }>;
  answer: string;
  /** A sub-agent's reply to its task (default "Done: <task>"). */
  reply?: (task: string) => string;
  /** A reason to fail this task's model call with (HTTP 400), or undefined to answer it. */
  fail?: (task: string) => string | undefined;
  /** How long a failing call takes before its error (default 0). */
  failAfterMs?: number;
  /** How long each sub-agent's model call takes (default 0), so a test sees the run live. */
  delayMs?: number;
  /** How long this task's model call takes (overrides `delayMs`); a call that never ends waits for a cancel. */
  delayFor?: (task: string) => number | undefined;
}

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (part as { text?: string }).text ?? '').join('');
  }
  return '';
}

/**
 * An OpenAI-compatible mock that plays a whole fan-out whatever order the
 * parallel requests come in: the coordinator's first call delegates every
 * task, its next call gives the answer, and each sub-agent answers its task.
 */
export function startFanOutServer(fanOut: FanOut): Promise<MockOpenAIServer> {
  return startMockOpenAIServer({
    respond: (body) => {
      const messages = (body['messages'] as Array<{ role: string; content: unknown }>) ?? [];
      const system = text(messages[0]?.content);
      if (system.includes('coordinator')) {
        return messages.some((message) => message.role === 'tool')
          ? openaiReply({ content: fanOut.answer })
          : openaiReply({ toolCalls: [{ name: 'delegate', arguments: { tasks: fanOut.tasks } }] });
      }
      const task = text(messages.find((message) => message.role === 'user')?.content);
      const reason = fanOut.fail?.(task);
      if (reason !== undefined) return openaiError(400, reason, {}, fanOut.failAfterMs);
      return openaiReply({
        content: fanOut.reply?.(task) ?? `Done: ${task}`,
        usage: { prompt: 1200, completion: 300 },
        ...((fanOut.delayFor?.(task) ?? fanOut.delayMs) === undefined
          ? {}
          : { delayMs: fanOut.delayFor?.(task) ?? fanOut.delayMs }),
      });
    },
  });
}

/** `troupe run` on the fan-out server in a pseudo-terminal; the run folder goes to a fresh `out`. */
export function runFanOut(
  server: MockOpenAIServer,
  options: { cols: number; rows: number; args?: string[]; env?: Record<string, string> },
) {
  const out = mkdtempSync(join(tmpdir(), 'troupe-pty-run-'));
  const session = runInPty(
    [
      'run',
      'Research the topics and answer.',
      '--provider',
      'openai',
      '--model',
      'gpt-test',
      '--base-url',
      server.baseURL,
      '--threads',
      '2',
      '--out',
      out,
      '--workspace',
      out,
      ...(options.args ?? []),
    ],
    {
      cols: options.cols,
      rows: options.rows,
      env: ptyEnv({ OPENAI_API_KEY: server.apiKey, ...options.env }),
    },
  );
  return { session, out };
}
