import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The node:http plumbing both provider mocks share: a server on 127.0.0.1
 * with a random port, JSON bodies, plain JSON and SSE answers, and streams
 * that can be cut off. The provider rules live in the provider mocks.
 */

/** One request as the mock received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when it was not JSON). */
  body: unknown;
  /** Rules this request broke; empty for a good request. */
  violations: string[];
}

/** One server-sent event. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** How a stream ends early: `destroy` resets the connection, `end` closes it cleanly but too soon. */
export interface StreamCut {
  afterEvents: number;
  mode: 'destroy' | 'end';
}

/** A running mock: its base URL and a way to stop it. */
export interface MockHttpServer {
  /** http://127.0.0.1:<port> */
  origin: string;
  close(): Promise<void>;
}

/** Starts a server that hands each request (body parsed) to `handle`. */
export async function startMockHttpServer(
  handle: (request: RecordedRequest, response: ServerResponse) => Promise<void> | void,
): Promise<MockHttpServer> {
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = text.length > 0 ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      const request: RecordedRequest = {
        method: incoming.method ?? 'GET',
        path: (incoming.url ?? '/').split('?')[0] ?? '/',
        headers: incoming.headers,
        body,
        violations: [],
      };
      Promise.resolve(handle(request, response)).catch((error: unknown) => {
        if (!response.headersSent) {
          sendJson(response, 500, { error: { message: `mock crashed: ${String(error)}` } });
        } else {
          response.destroy();
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** Answers with a JSON body. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  response.end(text);
}

/** Answers with a raw body (a fixture file), as is. */
export function sendRaw(
  response: ServerResponse,
  status: number,
  contentType: string,
  body: string,
): void {
  response.writeHead(status, { 'content-type': contentType });
  response.end(body);
}

/** Answers with a server-sent event stream, one write per event, optionally cut off. */
export async function sendSse(
  response: ServerResponse,
  events: readonly SseEvent[],
  cut?: StreamCut,
): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  for (const [index, event] of events.entries()) {
    if (cut !== undefined && index >= cut.afterEvents) {
      if (cut.mode === 'destroy') {
        // Flush what was written, then reset: the client sees the connection die mid-stream.
        await new Promise<void>((resolve) => response.write('', () => resolve()));
        response.socket?.destroy();
      } else {
        response.end();
      }
      return;
    }
    const head = event.event === undefined ? '' : `event: ${event.event}\n`;
    await new Promise<void>((resolve) =>
      response.write(`${head}data: ${event.data}\n\n`, () => resolve()),
    );
  }
  response.end();
}

/** Splits text into pieces of at most `size` characters (at least one piece, maybe empty). */
export function pieces(text: string, size: number): string[] {
  if (text.length === 0) return [''];
  const out: string[] = [];
  for (let index = 0; index < text.length; index += size) out.push(text.slice(index, index + size));
  return out;
}

/** A readable description of a value's type, for violation messages. */
export function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** True for a plain object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
