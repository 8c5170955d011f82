import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import { z } from 'zod';
import { errorMessage, TroupeError } from '../../errors.js';
import { lazyBuiltin } from '../../util/lazy-builtin.js';
import { defineTool, type Tool, type ToolContext } from '../tool.js';
import { canonicalAddress } from './address-policy.js';
import {
  type HostResolver,
  type ResolvedAddress,
  systemResolver,
  vetHost,
} from './egress-policy.js';
import { htmlToText } from './html-to-text.js';
import { formatBytes } from './read-file.js';

export type { HostResolver, ResolvedAddress } from './egress-policy.js';

/** Options for the fetch_url tool. */
export interface FetchToolOptions {
  /** Name resolution (default: the system resolver through `dns.lookup`). */
  resolve?: HostResolver;
  /** Hosts that may be fetched: exact names or `*.example.com`; default any public host. */
  allowHosts?: readonly string[];
  /** Whole-call time limit including redirects, in milliseconds (default 20,000). */
  timeoutMs?: number;
  /** Body bytes read when the model gives no maxBytes (default 1 MiB). */
  defaultMaxBytes?: number;
  /** Redirects followed before giving up (default 5). */
  maxRedirects?: number;
  /**
   * Addresses exempted from the address policy. TEST-ONLY: it lets tests reach a local
   * server on 127.0.0.1; never set it in production.
   */
  allowAddressesForTests?: readonly string[];
}

/** Largest body fetch_url will read, whatever maxBytes says. */
export const MAX_FETCH_BYTES = 5 * 1024 * 1024;

/** The fetch_url tool's parameters. */
export const FetchUrlInputSchema = z.object({
  url: z.string().min(1).max(4_096).describe('An http:// or https:// URL on the public internet.'),
  maxBytes: z
    .number()
    .int()
    .min(1)
    .max(MAX_FETCH_BYTES)
    .optional()
    .describe('Most body bytes to read (default 1048576).'),
});
export type FetchUrlInput = z.infer<typeof FetchUrlInputSchema>;

interface Fetched {
  url: string;
  status: number;
  statusText: string;
  contentType: string;
  body: Buffer;
  truncated: boolean;
  redirects: string[];
}

function refuse(message: string): never {
  throw new TroupeError('tool.refused', message);
}

/**
 * Creates `fetch_url` (tier network): GETs one http(s) URL and returns its
 * text (HTML reduced to readable text). Before each connection, including
 * every redirect hop, the host is resolved here and every address checked
 * against the address policy; the socket then connects to the checked
 * address, so DNS rebinding cannot swap it. Failures are not retried.
 */
export function createFetchTool(options: FetchToolOptions = {}): Tool<FetchUrlInput, string> {
  const resolve = options.resolve ?? systemResolver;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const maxRedirects = options.maxRedirects ?? 5;
  const exempt = new Set((options.allowAddressesForTests ?? []).map(canonicalAddress));

  async function checkedAddress(
    url: URL,
    signal: AbortSignal,
    allowHosts: readonly string[] | undefined,
  ): Promise<ResolvedAddress> {
    return vetHost(url.hostname, { allowHosts, resolve, exempt }, url.href, (resolving) =>
      abortable(resolving, signal),
    );
  }

  async function fetchChecked(
    start: URL,
    maxBytes: number,
    signal: AbortSignal,
    allowHosts: readonly string[] | undefined,
  ): Promise<Fetched> {
    const redirects: string[] = [];
    let url = start;
    for (;;) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        refuse(`Only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, '')}.`);
      }
      if (url.username !== '' || url.password !== '')
        refuse('URLs with a user name or password are refused.');
      const target = await checkedAddress(url, signal, allowHosts);
      const response = await request(url, target, signal);
      const location = response.headers.location;
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400 && location !== undefined) {
        response.destroy();
        if (redirects.length >= maxRedirects) {
          throw new TroupeError(
            'tool.failed',
            `${start.href} redirected more than ${maxRedirects} times; stopped at ${url.href}.`,
          );
        }
        redirects.push(url.href);
        try {
          url = new URL(location, url);
        } catch {
          throw new TroupeError('tool.failed', `${url.href} redirected to an invalid URL.`);
        }
        continue;
      }
      const { body, truncated } = await readBody(response, maxBytes);
      return {
        url: url.href,
        status,
        statusText: response.statusMessage ?? '',
        contentType: String(response.headers['content-type'] ?? ''),
        body,
        truncated,
        redirects,
      };
    }
  }

  return defineTool({
    name: 'fetch_url',
    description:
      'Fetches one web page or text document over http(s) and returns its readable text (HTML is reduced to text with links). Only public internet addresses; binary content is refused; long bodies are cut at maxBytes. Failures are not retried: decide yourself whether to try again.',
    parameters: FetchUrlInputSchema,
    tiers: ['network'],
    idempotent: true,
    execute: async (input, context) => {
      let url: URL;
      try {
        url = new URL(input.url);
      } catch {
        throw new TroupeError(
          'tool.invalid_input',
          `${JSON.stringify(input.url.slice(0, 200))} is not a valid URL. Give a full URL such as https://example.com/page.`,
        );
      }
      context.progress?.(`fetch ${url.href}`);
      const fetched = await withTimeout(context, timeoutMs, url, (signal) =>
        fetchChecked(
          url,
          Math.min(input.maxBytes ?? options.defaultMaxBytes ?? 1024 * 1024, MAX_FETCH_BYTES),
          signal,
          options.allowHosts ?? context.sandbox?.allowDomains,
        ),
      );
      return render(fetched);
    },
  });
}

async function withTimeout<T>(
  context: ToolContext,
  timeoutMs: number,
  url: URL,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = (): void => controller.abort(context.signal.reason);
  context.signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await run(controller.signal);
  } catch (error) {
    if (timedOut) {
      throw new TroupeError(
        'tool.timeout',
        `${url.href} did not answer within ${timeoutMs} ms; gave up (not retried).`,
      );
    }
    throw error;
  } finally {
    clearTimeout(timer);
    context.signal.removeEventListener('abort', onAbort);
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

// Loaded on the first fetch: most threads never fetch (see lazy-builtin.ts).
const loadHttp = lazyBuiltin<typeof import('node:http')>('node:http');
const loadHttps = lazyBuiltin<typeof import('node:https')>('node:https');
const loadZlib = lazyBuiltin<typeof import('node:zlib')>('node:zlib');

function request(url: URL, target: ResolvedAddress, signal: AbortSignal): Promise<IncomingMessage> {
  // The socket connects to the address checked above, whatever DNS says now.
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all === true) {
      (callback as (error: null, addresses: ResolvedAddress[]) => void)(null, [target]);
    } else {
      callback(null, target.address, target.family);
    }
  };
  const client = url.protocol === 'https:' ? loadHttps() : loadHttp();
  return new Promise((resolve, reject) => {
    const outgoing = client.request(
      url,
      {
        method: 'GET',
        agent: false,
        lookup: pinned,
        signal,
        headers: {
          accept: 'text/html,text/plain,application/json,application/xml;q=0.9,*/*;q=0.5',
          'accept-encoding': 'gzip, deflate, br',
          'user-agent': 'troupe-fetch/0.1 (+https://github.com/troupe)',
        },
      },
      resolve,
    );
    outgoing.on('error', (error) => {
      reject(
        signal.aborted
          ? error
          : new TroupeError(
              'tool.failed',
              `Request to ${url.href} failed: ${errorMessage(error)}.`,
            ),
      );
    });
    outgoing.end();
  });
}

function readBody(
  response: IncomingMessage,
  maxBytes: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const encoding = String(response.headers['content-encoding'] ?? 'identity').toLowerCase();
  // Decompressed bytes count against the cap, so a compression bomb stops at maxBytes.
  const zlib = loadZlib();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  const stream: NodeJS.ReadableStream = decoder === undefined ? response : response.pipe(decoder);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    const finish = (truncated: boolean): void => {
      if (done) return;
      done = true;
      response.destroy();
      decoder?.destroy();
      resolve({ body: Buffer.concat(chunks), truncated });
    };
    stream.on('data', (chunk: Buffer) => {
      if (done) return;
      const room = maxBytes - bytes;
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      bytes += Math.min(chunk.length, room);
      if (bytes >= maxBytes) finish(true);
    });
    stream.on('end', () => finish(false));
    stream.on('error', (error: Error) => {
      if (done) return;
      done = true;
      reject(
        new TroupeError('tool.failed', `Reading the response failed: ${errorMessage(error)}.`),
      );
    });
    response.on('error', (error) => {
      if (done) return;
      done = true;
      reject(error);
    });
  });
}

const TEXTUAL =
  /^(?:text\/|application\/(?:json|xml|xhtml\+xml|javascript|x-javascript|ld\+json|rss\+xml|atom\+xml|x-ndjson|yaml|x-yaml|toml|csv)|[^;]*\+(?:json|xml))/i;

function render(fetched: Fetched): string {
  const mediaType = fetched.contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (fetched.status >= 400) {
    const preview = decodeText(fetched).slice(0, 500);
    throw new TroupeError(
      'tool.failed',
      `HTTP ${fetched.status} ${fetched.statusText} from ${fetched.url}.${preview.trim() === '' ? '' : `\n${mediaType === 'text/html' ? htmlToText(preview) : preview}`}`,
      { details: { status: fetched.status } },
    );
  }
  const looksBinary =
    mediaType === '' ? fetched.body.subarray(0, 8_192).includes(0) : !TEXTUAL.test(mediaType);
  if (looksBinary) {
    refuse(
      `${fetched.url} returned ${mediaType || 'binary data'} (${formatBytes(fetched.body.length)}), which is not text; fetch_url returns text only.`,
    );
  }
  const raw = decodeText(fetched);
  const text =
    mediaType === 'text/html' || mediaType === 'application/xhtml+xml'
      ? htmlToText(raw, fetched.url)
      : raw;
  const header = [
    `URL: ${fetched.url}`,
    ...(fetched.redirects.length > 0 ? [`Redirected from: ${fetched.redirects.join(' -> ')}`] : []),
    `Status: ${fetched.status} ${fetched.statusText}`.trimEnd(),
    `Content-Type: ${mediaType || 'unknown'}`,
  ];
  const cut = fetched.truncated
    ? `\n\n[Body cut at ${formatBytes(fetched.body.length)} (maxBytes); the rest was not read.]`
    : '';
  return `${header.join('\n')}\n\n${text.trim() === '' ? '(empty body)' : text}${cut}`;
}

function decodeText(fetched: Fetched): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(fetched.contentType)?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(fetched.body);
  } catch {
    return new TextDecoder('utf-8').decode(fetched.body);
  }
}

/** The `fetch_url` tool with default options. */
export const fetchUrlTool: Tool<FetchUrlInput, string> = createFetchTool();
