import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalAddress } from '../../../src/tools/builtin/address-policy.js';
import type { HostResolver } from '../../../src/tools/builtin/egress-policy.js';
import { startEgressProxy } from '../../../src/tools/builtin/egress-proxy.js';

let server: http.Server;
let port = 0;
let requests = 0;

beforeAll(async () => {
  server = http.createServer((_request, response) => {
    requests += 1;
    response.end('hello from the target');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const resolver: HostResolver = async (hostname) => {
  const table: Record<string, string> = {
    'public.test': '127.0.0.1', // exempted below, standing in for a public host
    'internal.test': '10.1.2.3',
    'rebind.test': '169.254.169.254',
  };
  const address = table[hostname];
  if (address === undefined) throw new Error(`ENOTFOUND ${hostname}`);
  return [{ address, family: 4 }];
};

/** Sends CONNECT target through the proxy socket; resolves with the status line and the socket. */
function connectThrough(
  socketPath: string,
  target: string,
): Promise<{ status: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath, () => {
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    });
    let buffer = '';
    socket.on('data', function onData(chunk) {
      buffer += chunk.toString('latin1');
      const end = buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.off('data', onData);
      resolve({ status: buffer.slice(0, buffer.indexOf('\r\n')), socket });
    });
    socket.on('error', reject);
  });
}

describe('the egress proxy', () => {
  it('tunnels CONNECT to a vetted host and connects to the vetted address', async () => {
    const proxy = await startEgressProxy({
      resolve: resolver,
      exempt: new Set([canonicalAddress('127.0.0.1')]),
    });
    try {
      const { status, socket } = await connectThrough(proxy.socketPath, `public.test:${port}`);
      expect(status).toBe('HTTP/1.1 200 Connection Established');
      const body = await new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (chunk) => {
          text += chunk.toString();
          if (text.includes('hello from the target')) resolve(text);
        });
        socket.write(`GET / HTTP/1.1\r\nHost: public.test\r\nConnection: close\r\n\r\n`);
      });
      expect(body).toContain('200 OK');
      socket.destroy();
    } finally {
      await proxy.close();
    }
  });

  it('refuses loopback, private and metadata targets, by literal and by name, and reports each', async () => {
    const denied: string[] = [];
    const proxy = await startEgressProxy({
      resolve: resolver,
      onDenied: (target, reason) => denied.push(`${target}: ${reason}`),
    });
    const before = requests;
    try {
      for (const target of [
        `127.0.0.1:${port}`,
        `[::1]:${port}`,
        `[::ffff:127.0.0.1]:${port}`,
        'internal.test:443',
        'rebind.test:80',
        '169.254.169.254:80',
        `public.test:${port}`,
      ]) {
        const { status, socket } = await connectThrough(proxy.socketPath, target);
        expect(status, target).toBe('HTTP/1.1 403 Forbidden');
        socket.destroy();
      }
      expect(denied).toHaveLength(7);
      expect(denied.join('\n')).toContain('the cloud metadata address');
      expect(requests).toBe(before);
    } finally {
      await proxy.close();
    }
  });

  it('refuses hosts off the --allow-domain list before resolving them', async () => {
    const asked: string[] = [];
    const proxy = await startEgressProxy({
      allowHosts: ['*.example.org'],
      resolve: async (hostname) => {
        asked.push(hostname);
        return [{ address: '93.184.216.34', family: 4 }];
      },
    });
    try {
      const { status, socket } = await connectThrough(proxy.socketPath, 'evil.test:443');
      expect(status).toBe('HTTP/1.1 403 Forbidden');
      socket.destroy();
      expect(asked).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('vets plain-HTTP requests with absolute URLs the same way', async () => {
    const denied: string[] = [];
    const proxy = await startEgressProxy({ onDenied: (target) => denied.push(target) });
    const before = requests;
    try {
      const status = await new Promise<number>((resolve, reject) => {
        http
          .get({ socketPath: proxy.socketPath, path: `http://127.0.0.1:${port}/` }, (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          })
          .on('error', reject);
      });
      expect(status).toBe(403);
      expect(denied).toEqual([`127.0.0.1:${port}`]);
      expect(requests).toBe(before);
    } finally {
      await proxy.close();
    }
  });
});
