import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../../errors.js';
import { type EgressPolicy, vetHost } from './egress-policy.js';

/**
 * The only way out of an exec tool's sandbox: an HTTP proxy run by troupe,
 * outside the sandbox, on a Unix socket. The sandboxed program has its own
 * network namespace with nothing but loopback; a small bridge inside
 * (SANDBOX_BRIDGE_CODE) forwards 127.0.0.1:3128 to this socket, and the
 * program finds it through HTTP(S)_PROXY. Each CONNECT or absolute-URI
 * request is vetted with the same policy as fetch_url (domain allowlist,
 * public addresses only) and connected to the vetted address; everything
 * else is refused with 403 and reported through `onDenied`.
 */

/** The port the bridge listens on inside the sandbox. */
export const SANDBOX_PROXY_PORT = 3128;

/** Where the proxy's socket folder is mounted inside the sandbox. */
export const SANDBOX_PROXY_FOLDER = '/tmp/.troupe-egress';

/** The socket's file name inside its folder. */
export const PROXY_SOCKET_NAME = 'proxy.sock';

/** Options for an egress proxy. */
export interface EgressProxyOptions extends EgressPolicy {
  /** Called for every refused attempt, with the host and why. */
  onDenied?: (target: string, reason: string) => void;
  /** Called for every allowed connection (host:port). */
  onAllowed?: (target: string) => void;
}

/** A running proxy. */
export interface EgressProxy {
  /** The folder holding the socket (mount it at SANDBOX_PROXY_FOLDER). */
  folder: string;
  /** Absolute path of the socket. */
  socketPath: string;
  close(): Promise<void>;
}

/** Starts a proxy on a Unix socket in a fresh private folder. */
export async function startEgressProxy(options: EgressProxyOptions = {}): Promise<EgressProxy> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'troupe-egress-'));
  const socketPath = path.join(folder, PROXY_SOCKET_NAME);
  const sockets = new Set<net.Socket>();
  const deny = (target: string, reason: string): void => options.onDenied?.(target, reason);

  const server = http.createServer((request, response) => {
    // A plain-HTTP request through a proxy carries an absolute URI.
    let url: URL;
    try {
      url = new URL(request.url ?? '');
    } catch {
      response.writeHead(400).end('troupe egress proxy: absolute http:// URLs only\n');
      return;
    }
    if (url.protocol !== 'http:') {
      response.writeHead(400).end('troupe egress proxy: use CONNECT for https\n');
      return;
    }
    const target = `${url.hostname}:${url.port || '80'}`;
    vetHost(url.hostname, options, url.href).then(
      (vetted) => {
        options.onAllowed?.(target);
        const headers = { ...request.headers };
        delete headers['proxy-connection'];
        delete headers['proxy-authorization'];
        const upstream = http.request(
          {
            host: vetted.address,
            family: vetted.family,
            port: Number(url.port || 80),
            method: request.method,
            path: `${url.pathname}${url.search}`,
            headers: { ...headers, host: url.host },
            agent: false,
          },
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(response);
          },
        );
        upstream.on('error', (error) => {
          if (!response.headersSent) response.writeHead(502);
          response.end(`troupe egress proxy: ${errorMessage(error)}\n`);
        });
        request.pipe(upstream);
      },
      (error: unknown) => {
        deny(target, errorMessage(error));
        response
          .writeHead(403)
          .end(`troupe egress proxy refused ${target}: ${errorMessage(error)}\n`);
      },
    );
  });

  server.on('connect', (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const target = request.url ?? '';
    const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(target);
    const port = match === null ? 0 : Number(match[2]);
    if (match === null || port < 1 || port > 65_535) {
      deny(target, 'not a host:port');
      client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    const host = match[1] ?? '';
    vetHost(host, options, target).then(
      (vetted) => {
        options.onAllowed?.(target);
        const upstream = net.connect({ host: vetted.address, port, family: vetted.family });
        sockets.add(upstream);
        upstream.on('close', () => sockets.delete(upstream));
        upstream.once('connect', () => {
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length > 0) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        upstream.on('error', () => {
          if (!client.destroyed) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
        });
      },
      (error: unknown) => {
        deny(target, errorMessage(error));
        client.end(
          `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\ntroupe egress proxy refused ${target}: ${errorMessage(error)}\n`,
        );
      },
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    folder,
    socketPath,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(folder, { recursive: true, force: true });
    },
  };
}

/**
 * The bridge that runs inside the sandbox, as `node -e` code: it listens on
 * 127.0.0.1:<port>, forwards each connection to the proxy's Unix socket,
 * then runs the program (argv after the socket and port) with inherited
 * stdio, and exits as it did (128 + signal number when killed).
 */
export const SANDBOX_BRIDGE_CODE = `
const net = require('net');
const { spawn } = require('child_process');
const { signals } = require('os').constants;
const [socketPath, port, program, ...args] = process.argv.slice(1);
const server = net.createServer((client) => {
  const upstream = net.connect(socketPath);
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
});
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(program, args, { stdio: 'inherit' });
  child.on('error', (error) => {
    process.stderr.write(String(error.message) + '\\n');
    process.exit(127);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signals[signal] ?? 1)));
});
`;

/** The proxy variables a sandboxed program gets (both spellings, as tools differ). */
export function proxyEnv(port = SANDBOX_PROXY_PORT): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    all_proxy: url,
    NO_PROXY: '',
    no_proxy: '',
  };
}
