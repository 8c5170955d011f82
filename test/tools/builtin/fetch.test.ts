import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createFetchTool,
  type FetchToolOptions,
  fetchUrlTool,
  type HostResolver,
} from '../../../src/tools/builtin/fetch.js';
import { callTool, contextFor, outcome } from '../harness.js';

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void;

let server: http.Server;
let base: string;
let port: number;
let requests: { url: string; host: string }[];
let handler: Handler;

beforeEach(async () => {
  requests = [];
  handler = (_request, response) => response.end('default');
  server = http.createServer((request, response) => {
    requests.push({ url: request.url ?? '', host: request.headers.host ?? '' });
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A resolver from a fixed map: no real DNS in tests. */
function mapResolver(table: Record<string, string[]>): HostResolver {
  return async (hostname) => {
    const addresses = table[hostname];
    if (addresses === undefined) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

// The tests' one loophole: the local server's address is exempted, nothing else.
function localFetch(options: FetchToolOptions = {}) {
  return createFetchTool({ allowAddressesForTests: ['127.0.0.1'], ...options });
}

const context = () => contextFor('/nonexistent-workspace');

describe('fetch_url', () => {
  it('returns an HTML page as readable text under a header', async () => {
    handler = (_request, response) => {
      response.setHeader('content-type', 'text/html; charset=utf-8');
      response.end(
        '<html><head><title>Hi</title></head><body><h2>News</h2><p>Hello <a href="/a">there</a></p></body></html>',
      );
    };
    const result = await callTool(localFetch(), { url: `${base}/page` }, context());
    expect(result).toEqual({
      ok: true,
      content: `URL: ${base}/page\nStatus: 200 OK\nContent-Type: text/html\n\nTitle: Hi\n\n## News\n\nHello there (${base}/a)`,
    });
  });

  it('returns JSON and plain text as they are, decoding the charset', async () => {
    handler = (_request, response) => {
      response.setHeader('content-type', 'text/plain; charset=iso-8859-1');
      response.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    };
    const result = await callTool(localFetch(), { url: base }, context());
    expect(result.content.endsWith('\n\ncafé')).toBe(true);
  });

  it('follows a redirect that stays on allowed addresses and says so', async () => {
    handler = (request, response) => {
      if (request.url === '/old') {
        response.writeHead(301, { location: '/new' }).end();
      } else {
        response.setHeader('content-type', 'text/plain');
        response.end('moved here');
      }
    };
    const result = await callTool(localFetch(), { url: `${base}/old` }, context());
    expect(result.content).toContain(`URL: ${base}/new\nRedirected from: ${base}/old`);
    expect(result.content).toContain('moved here');
  });

  it('connects to the address it checked, so a second DNS answer cannot swap it', async () => {
    let lookups = 0;
    const rebinding: HostResolver = async () => {
      lookups += 1;
      return [{ address: lookups === 1 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
    };
    handler = (_request, response) => {
      response.setHeader('content-type', 'text/plain');
      response.end('pinned');
    };
    const result = await callTool(
      localFetch({ resolve: rebinding }),
      { url: `http://site.test:${port}/` },
      context(),
    );
    expect(result.content).toContain('pinned');
    expect(lookups).toBe(1);
    expect(requests).toEqual([{ url: '/', host: `site.test:${port}` }]);
  });

  it('cuts the body at maxBytes and says so', async () => {
    handler = (_request, response) => {
      response.setHeader('content-type', 'text/plain');
      response.end('y'.repeat(10_000));
    };
    const result = await callTool(localFetch(), { url: base, maxBytes: 1_000 }, context());
    expect(result.content).toContain(`\n\n${'y'.repeat(1_000)}\n\n[Body cut`);
    expect(result.content).toContain(
      '[Body cut at 1,000 bytes (maxBytes); the rest was not read.]',
    );
  });

  it('decompresses gzip and counts decompressed bytes against the cap', async () => {
    handler = (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
      response.end(zlib.gzipSync(Buffer.alloc(10 * 1024 * 1024, 'z')));
    };
    const result = await callTool(localFetch(), { url: base, maxBytes: 2_000 }, context());
    expect(result.content).toContain(`\n\n${'z'.repeat(2_000)}\n\n[Body cut`);
    expect(result.content).toContain('Body cut');
  });

  it('refuses binary content', async () => {
    handler = (_request, response) => {
      response.setHeader('content-type', 'image/png');
      response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0]));
    };
    const result = await callTool(localFetch(), { url: base }, context());
    expect(outcome(result)).toBe('tool.refused');
    expect(result.content).toContain('image/png');
  });

  it('reports an HTTP error status once, without retrying', async () => {
    handler = (_request, response) => {
      response.writeHead(503, { 'content-type': 'text/plain' }).end('try later');
    };
    const result = await callTool(localFetch(), { url: base }, context());
    expect(outcome(result)).toBe('tool.failed');
    expect(result.content).toContain('HTTP 503 Service Unavailable');
    expect(result.content).toContain('try later');
    expect(requests).toHaveLength(1);
  });

  it('gives up after the timeout', async () => {
    handler = () => {
      // Never answers.
    };
    const result = await callTool(localFetch({ timeoutMs: 100 }), { url: base }, context());
    expect(outcome(result)).toBe('tool.timeout');
    expect(result.content).toContain('did not answer within 100 ms');
  });

  it('stops when the agent is cancelled', async () => {
    const controller = new AbortController();
    handler = () => controller.abort(new Error('cancelled by test'));
    const result = await callTool(
      localFetch(),
      { url: base },
      contextFor('/x', { signal: controller.signal }),
    );
    expect(outcome(result)).toBe('cancelled');
  });

  it('stops after too many redirects', async () => {
    handler = (request, response) => {
      const step = Number(request.url?.slice(1) ?? 0);
      response.writeHead(302, { location: `/${step + 1}` }).end();
    };
    const result = await callTool(localFetch({ maxRedirects: 3 }), { url: `${base}/0` }, context());
    expect(outcome(result)).toBe('tool.failed');
    expect(result.content).toContain('redirected more than 3 times');
    expect(requests).toHaveLength(4);
  });

  it('refuses hosts off the allowlist', async () => {
    const tool = localFetch({
      allowHosts: ['docs.test', '*.example.test'],
      resolve: mapResolver({ 'a.example.test': ['127.0.0.1'] }),
    });
    const refused = await callTool(tool, { url: `http://other.test:${port}/` }, context());
    expect(outcome(refused)).toBe('tool.refused');
    expect(refused.content).toContain('host allowlist');
    const allowed = await callTool(tool, { url: `http://a.example.test:${port}/` }, context());
    expect(allowed.ok).toBe(true);
  });

  it('refuses non-http schemes, credentials and invalid URLs', async () => {
    expect(outcome(await callTool(fetchUrlTool, { url: 'ftp://example.com/x' }, context()))).toBe(
      'tool.refused',
    );
    expect(
      outcome(await callTool(fetchUrlTool, { url: 'http://user:pw@example.com/' }, context())),
    ).toBe('tool.refused');
    expect(outcome(await callTool(fetchUrlTool, { url: 'not a url' }, context()))).toBe(
      'tool.invalid_input',
    );
  });

  it('refuses the local server with the default tool', async () => {
    const result = await callTool(fetchUrlTool, { url: base }, context());
    expect(outcome(result)).toBe('tool.refused');
    expect(result.content).toContain('a loopback address');
    expect(requests).toHaveLength(0);
  });

  it('is refused without the network tier', async () => {
    const result = await callTool(
      localFetch(),
      { url: base },
      contextFor('/x', { grants: ['read'] }),
    );
    expect(outcome(result)).toBe('permission.denied');
    expect(requests).toHaveLength(0);
  });
});
