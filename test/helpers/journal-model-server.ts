import { createHash } from 'node:crypto';
import {
  type MockHttpServer,
  type SseEvent,
  type sendSse,
  startMockHttpServer,
} from './mock-provider-server.js';

/**
 * An OpenAI-compatible model server for the journal kill tests. Its replies
 * depend on the request alone (who asks, judged by the tools offered, and
 * how many turns the conversation has), never on a call count, so a resumed
 * run gets the same answers as the first. Replies stream in small chunks,
 * so a kill can land mid-stream. It counts requests received and finished.
 *
 * The job: the coordinator delegates three clerks (alpha, beta, gamma); each
 * reads notes.md and appends to the ledger (append_ledger, when offered);
 * then the coordinator delegates the reporter, which writes report.md; then
 * the coordinator answers.
 */
export interface JournalModelServer {
  baseURL: string;
  apiKey: string;
  /** Requests received so far. */
  readonly received: number;
  /** Requests whose response was sent whole. */
  readonly finished: number;
  /** Request numbers (from 1) whose client went away before the whole response was sent (a kill, a cancel). */
  readonly aborted: ReadonlySet<number>;
  /** Request numbers (from 1) received and not yet answered whole. */
  open(): Set<number>;
  /** Called after each chunk is written: request number (from 1), chunk index (from 0), chunks in all. */
  onChunk: ((request: number, chunk: number, of: number) => void) | undefined;
  /** Which agent sent each request, in order (coordinator, clerk, reporter). */
  readonly agents: string[];
  reset(): void;
  close(): Promise<void>;
}

export const CLERKS = ['alpha', 'beta', 'gamma'];
export const REPORT = '# Ledger report\n\nalpha, beta and gamma were recorded.\n';
export const FINAL = 'The ledger report is in report.md.';

interface WireMessage {
  role: string;
  content?: string | null;
  tool_calls?: unknown[];
}

interface Reply {
  content?: string;
  toolCalls?: Array<{ name: string; arguments: Record<string, unknown> }>;
}

function decide(body: Record<string, unknown>): { agent: string; reply: Reply } {
  const messages = (body['messages'] as WireMessage[] | undefined) ?? [];
  const tools = ((body['tools'] as Array<{ function: { name: string } }> | undefined) ?? []).map(
    (tool) => tool.function.name,
  );
  const turn = messages.filter((message) => message.role === 'assistant').length;
  const firstUser = String(messages.find((message) => message.role === 'user')?.content ?? '');
  if (tools.includes('delegate')) {
    if (turn === 0) {
      return {
        agent: 'coordinator',
        reply: {
          content: 'Three clerks first.',
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                tasks: CLERKS.map((name) => ({ role: 'clerk', task: `Record ${name}.` })),
              },
            },
          ],
        },
      };
    }
    if (turn === 1) {
      return {
        agent: 'coordinator',
        reply: {
          content: 'Now the report.',
          toolCalls: [
            {
              name: 'delegate',
              arguments: { tasks: [{ role: 'reporter', task: 'Write the ledger report.' }] },
            },
          ],
        },
      };
    }
    return { agent: 'coordinator', reply: { content: FINAL } };
  }
  if (tools.includes('write_file')) {
    if (turn === 0) {
      return {
        agent: 'reporter',
        reply: {
          toolCalls: [{ name: 'write_file', arguments: { path: 'report.md', content: REPORT } }],
        },
      };
    }
    return { agent: 'reporter', reply: { content: 'The report is written.' } };
  }
  const name = /Record (\w+)\./.exec(firstUser)?.[1] ?? 'nobody';
  if (turn === 0) {
    return {
      agent: 'clerk',
      reply: {
        toolCalls: [
          { name: 'read_file', arguments: { path: 'notes.md' } },
          ...(tools.includes('append_ledger')
            ? [{ name: 'append_ledger', arguments: { entry: name, ms: 200 } }]
            : []),
        ],
      },
    };
  }
  return { agent: 'clerk', reply: { content: `${name} is recorded.` } };
}

// Chunks of an OpenAI stream: the content in pieces, then each tool call's arguments in pieces.
function chunks(body: Record<string, unknown>, reply: Reply): SseEvent[] {
  const seed = createHash('sha256').update(JSON.stringify(body['messages'])).digest('hex');
  const base = {
    id: `chatcmpl-${seed.slice(0, 12)}`,
    object: 'chat.completion.chunk',
    created: 1,
    model: String(body['model']),
  };
  const events: SseEvent[] = [];
  const push = (delta: Record<string, unknown>, finish: string | null = null): void => {
    events.push({
      data: JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] }),
    });
  };
  push({ role: 'assistant', content: '' });
  for (const piece of (reply.content ?? '').match(/.{1,12}/gs) ?? []) push({ content: piece });
  (reply.toolCalls ?? []).forEach((call, index) => {
    const args = JSON.stringify(call.arguments);
    push({
      tool_calls: [
        {
          index,
          id: `call_${seed.slice(0, 8)}_${index}`,
          type: 'function',
          function: { name: call.name, arguments: '' },
        },
      ],
    });
    for (const piece of args.match(/.{1,40}/gs) ?? []) {
      push({ tool_calls: [{ index, function: { arguments: piece } }] });
    }
  });
  push({}, (reply.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop');
  events.push({
    data: JSON.stringify({
      ...base,
      choices: [],
      usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
    }),
  });
  events.push({ data: '[DONE]' });
  return events;
}

/** Starts the server on 127.0.0.1 with a random port. */
export async function startJournalModelServer(chunkDelayMs = 8): Promise<JournalModelServer> {
  const apiKey = 'sk-journal-test-0000';
  let received = 0;
  let finished = 0;
  const aborted = new Set<number>();
  const open = new Set<number>();
  const agents: string[] = [];
  const state: JournalModelServer = {
    baseURL: '',
    apiKey,
    get received() {
      return received;
    },
    get finished() {
      return finished;
    },
    aborted,
    open: () => new Set(open),
    onChunk: undefined,
    agents,
    reset: () => {
      received = 0;
      finished = 0;
      aborted.clear();
      open.clear();
      agents.length = 0;
    },
    close: async () => undefined,
  };
  const http: MockHttpServer = await startMockHttpServer(async (request, response) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    received += 1;
    const number = received;
    open.add(number);
    response.once('close', () => {
      open.delete(number);
      if (!response.writableFinished) aborted.add(number);
    });
    const { agent, reply } = decide(body);
    agents.push(agent);
    const events = chunks(body, reply);
    // One event per write, with a pause between: a kill can land between any two.
    const paced: SseEvent[] = [];
    for (const [index, event] of events.entries()) {
      paced.push(event);
      await sendSseStep(response, event, index === 0);
      state.onChunk?.(number, index, events.length);
      if (chunkDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, chunkDelayMs));
    }
    response.end();
    finished += 1;
  });
  state.baseURL = `${http.origin}/v1`;
  state.close = () => http.close();
  return state;
}

async function sendSseStep(
  response: Parameters<typeof sendSse>[0],
  event: SseEvent,
  first: boolean,
): Promise<void> {
  if (first) {
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
  }
  await new Promise<void>((resolve) => response.write(`data: ${event.data}\n\n`, () => resolve()));
}
