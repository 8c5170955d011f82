import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local OpenAI-compatible Chat Completions server for the real SDK path of
 * the bench (issue 18), run in its own process so its CPU is not the
 * client's: `node dist/bench/openai-server.js --latency 200 --turns 3`
 * prints `{"port": …}` and serves until killed. Each answer waits the
 * latency, then (streamed as SSE when asked) calls the `noop` tool on every
 * turn but the last, which answers `done`; the turn is the number of tool
 * results in the conversation. GET /stats says how many requests and TCP
 * connections it has seen, so the bench can tell pooled connections from a
 * connection per call.
 */

const argValue = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(name);
  return index === -1 ? fallback : Number(process.argv[index + 1]);
};
const latencyMs = argValue('--latency', 200);
const turns = argValue('--turns', 3);

let requests = 0;
let connections = 0;
let nextId = 0;

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

interface ChatBody {
  model?: string;
  stream?: boolean;
  messages?: Array<{ role?: string }>;
}

const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function answer(body: ChatBody, response: ServerResponse): void {
  nextId += 1;
  const id = `chatcmpl-${nextId}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model ?? 'bench';
  const results = (body.messages ?? []).filter((message) => message.role === 'tool').length;
  const isLast = results + 1 >= turns;
  const toolCall = {
    index: 0,
    id: `call_${nextId}`,
    type: 'function' as const,
    function: { name: 'noop', arguments: '{}' },
  };
  if (body.stream !== true) {
    const message = isLast
      ? { role: 'assistant', content: 'done' }
      : { role: 'assistant', content: null, tool_calls: [toolCall] };
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, finish_reason: isLast ? 'stop' : 'tool_calls' }],
        usage,
      }),
    );
    return;
  }
  const chunk = (delta: unknown, finishReason: string | null, extra: object = {}): string =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: delta === undefined ? [] : [{ index: 0, delta, finish_reason: finishReason }],
      ...extra,
    })}\n\n`;
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const parts = isLast
    ? [
        chunk({ role: 'assistant', content: '' }, null),
        chunk({ content: 'done' }, null),
        chunk({}, 'stop'),
      ]
    : [
        chunk(
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ ...toolCall, function: { name: 'noop', arguments: '' } }],
          },
          null,
        ),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }, null),
        chunk({}, 'tool_calls'),
      ];
  response.end(`${parts.join('')}${chunk(undefined, null, { usage })}data: [DONE]\n\n`);
}

const server = createServer(async (request, response) => {
  if (request.method === 'GET' && request.url === '/stats') {
    // Closed after the answer: the bench asks again minutes later, after this server may
    // have dropped an idle kept-alive socket under the client's next request.
    response.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
    response.end(JSON.stringify({ requests, connections }));
    return;
  }
  if (request.method !== 'POST' || request.url?.endsWith('/chat/completions') !== true) {
    response.writeHead(404, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({ error: { message: `no route ${request.method} ${request.url}` } }),
    );
    return;
  }
  requests += 1;
  const body = JSON.parse(await readBody(request)) as ChatBody;
  setTimeout(() => answer(body, response), latencyMs);
});
server.on('connection', () => {
  connections += 1;
});
// Thousands of agents at once: keep their sockets, queue their connects.
server.keepAliveTimeout = 60_000;
server.maxRequestsPerSocket = 0;
server.listen({ port: 0, host: '127.0.0.1', backlog: 65_535 }, () => {
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
});
