import { execFileSync } from 'node:child_process';
import { mkdir, symlink, truncate, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fetchUrlTool, type HostResolver } from '../../src/tools/builtin/fetch.js';
import { createBuiltinRegistry } from '../../src/tools/catalogue.js';
import { ToolRegistry, type ToolResult } from '../../src/tools/registry.js';
import type { ToolContext } from '../../src/tools/tool.js';
import {
  contextFor,
  createWorld,
  outcome,
  sandboxed,
  snapshot,
  type World,
  withoutSandbox,
} from './harness.js';

/**
 * Hostile inputs, one test each. Every one must be refused (or handled) with
 * the expected code, without a crash, with nothing outside the workspace
 * touched and the workspace itself unchanged.
 */

const SECRET = 'sk-troupe-hostile-marker-0123456789abcdef';

interface Hostile {
  /** What the input tries. */
  name: string;
  tool: string;
  /** The arguments, or the raw argument text (for malformed or huge JSON). */
  input?: (world: World) => unknown;
  raw?: (world: World) => string;
  setup?: (world: World) => Promise<void>;
  context?: (world: World) => Partial<ToolContext>;
  registry?: () => ToolRegistry;
  expected: string;
  /** Extra checks on the result. */
  check?: (result: ToolResult, world: World) => void;
  /** Needs bubblewrap. */
  sandbox?: boolean;
  /** Requests the local HTTP server may see. */
  requests?: number;
}

let server: http.Server;
let port = 0;
let requests = 0;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    requests += 1;
    const redirects: Record<string, string> = {
      '/to-loopback': `http://127.0.0.2:${port}/x`,
      '/to-mapped': `http://[::ffff:127.0.0.1]:${port}/x`,
      '/to-metadata': 'http://169.254.169.254/latest/meta-data/',
      '/to-private-name': 'http://internal.test/admin',
    };
    const location = redirects[request.url ?? ''];
    if (location === undefined) response.end('ok');
    else response.writeHead(302, { location }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const resolver: HostResolver = async (hostname) => {
  const table: Record<string, string[]> = {
    'internal.test': ['10.0.0.7'],
    'mixed.test': ['93.184.216.34', '192.168.0.10'],
    'metadata.test': ['169.254.169.254'],
    'mapped.test': ['::ffff:10.0.0.1'],
  };
  const addresses = table[hostname];
  if (addresses === undefined) throw new Error(`ENOTFOUND ${hostname}`);
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

// Only the local server's own address is exempted, so a first hop can reach it.
const registry = (): ToolRegistry =>
  createBuiltinRegistry({
    fetch: { resolve: resolver, allowAddressesForTests: ['127.0.0.1'] },
    searchFiles: { perFileTimeoutMs: 200 },
  });
const defaultFetch = (): ToolRegistry => new ToolRegistry([fetchUrlTool]);
const secretEnv = (): Partial<ToolContext> => ({ env: { ...process.env, OPENAI_API_KEY: SECRET } });
const noSecret = (result: ToolResult): void => {
  expect(result.content).not.toContain(SECRET);
};

const table: Hostile[] = [
  // Path traversal.
  {
    name: 'read_file with ../ traversal',
    tool: 'read_file',
    input: () => ({ path: '../outside/secret.txt' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file with traversal nested under a real folder',
    tool: 'read_file',
    input: () => ({ path: 'notes/../../outside/secret.txt' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file with URL-encoded traversal (%2e%2e%2f)',
    tool: 'read_file',
    input: () => ({ path: '%2e%2e%2foutside%2fsecret.txt' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file with double-encoded traversal taken literally',
    tool: 'read_file',
    input: () => ({ path: '%252e%252e/outside/secret.txt' }),
    expected: 'tool.failed',
  },
  {
    name: 'read_file with an absolute path outside (/etc/passwd)',
    tool: 'read_file',
    input: () => ({ path: '/etc/passwd' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file with the absolute path of a sibling folder',
    tool: 'read_file',
    input: (w) => ({ path: path.join(w.outside, 'secret.txt') }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file with backslash separators (..\\outside)',
    tool: 'read_file',
    input: () => ({ path: '..\\outside\\secret.txt' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file with mixed separators (notes/..\\..\\outside)',
    tool: 'read_file',
    input: () => ({ path: 'notes/..\\..\\outside/secret.txt' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'search_files rooted outside the workspace',
    tool: 'search_files',
    input: () => ({ pattern: 'secret', path: '../outside' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'write_file creating folders outside through ../',
    tool: 'write_file',
    input: () => ({ path: '../outside/new/x.md', content: 'x' }),
    expected: 'sandbox.escape',
  },
  // Symlinks.
  {
    name: 'read_file through a symlinked file leading out',
    tool: 'read_file',
    setup: (w) => symlink(path.join(w.outside, 'secret.txt'), path.join(w.workspace, 'leak.txt')),
    input: () => ({ path: 'leak.txt' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file through a symlinked folder leading out',
    tool: 'read_file',
    setup: (w) => symlink(w.outside, path.join(w.workspace, 'out')),
    input: () => ({ path: 'out/secret.txt' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'list_dir of a symlinked folder leading out',
    tool: 'list_dir',
    setup: (w) => symlink(w.outside, path.join(w.workspace, 'out')),
    input: () => ({ path: 'out' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'write_file through a symlinked folder leading out',
    tool: 'write_file',
    setup: (w) => symlink(w.outside, path.join(w.workspace, 'out')),
    input: () => ({ path: 'out/pwned.md', content: 'x' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'write_file onto a dangling symlink aimed outside',
    tool: 'write_file',
    setup: (w) => symlink(path.join(w.outside, 'created.txt'), path.join(w.workspace, 'dangling')),
    input: () => ({ path: 'dangling', content: 'x' }),
    expected: 'sandbox.escape',
  },
  // Root, NUL, devices, huge, binary, encodings.
  {
    name: 'write_file over the workspace root (".")',
    tool: 'write_file',
    input: () => ({ path: '.', content: 'x' }),
    expected: 'tool.refused',
  },
  {
    name: 'write_file over the workspace root by absolute path',
    tool: 'write_file',
    input: (w) => ({ path: w.workspace, content: 'x' }),
    expected: 'tool.refused',
  },
  {
    name: 'read_file with a NUL byte in the path',
    tool: 'read_file',
    input: () => ({ path: 'a.txt\u0000.png' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'write_file with a NUL byte in the path',
    tool: 'write_file',
    input: () => ({ path: 'x\u0000y.md', content: 'x' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file of a device (/dev/zero)',
    tool: 'read_file',
    input: () => ({ path: '/dev/zero' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file of a symlink to a device',
    tool: 'read_file',
    setup: (w) => symlink('/dev/zero', path.join(w.workspace, 'zero')),
    input: () => ({ path: 'zero' }),
    expected: 'sandbox.escape',
  },
  {
    name: 'read_file of a FIFO that would block forever',
    tool: 'read_file',
    setup: async (w) => {
      execFileSync('mkfifo', [path.join(w.workspace, 'pipe')]);
    },
    input: () => ({ path: 'pipe' }),
    expected: 'tool.refused',
  },
  {
    name: 'read_file of a huge (20 GB sparse) file',
    tool: 'read_file',
    setup: async (w) => {
      await writeFile(path.join(w.workspace, 'huge.log'), '');
      await truncate(path.join(w.workspace, 'huge.log'), 20 * 1024 ** 3);
    },
    input: () => ({ path: 'huge.log' }),
    expected: 'tool.refused',
    check: (r) => expect(r.content).toContain('20.0 GiB'),
  },
  {
    name: 'read_file of a binary file',
    tool: 'read_file',
    setup: (w) =>
      writeFile(path.join(w.workspace, 'img.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1])),
    input: () => ({ path: 'img.png' }),
    expected: 'tool.refused',
  },
  {
    name: 'read_file of invalid UTF-8',
    tool: 'read_file',
    setup: (w) =>
      writeFile(path.join(w.workspace, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])),
    input: () => ({ path: 'latin1.txt' }),
    expected: 'tool.refused',
  },
  {
    name: 'search_files with a catastrophic regex ((a+)+$)',
    tool: 'search_files',
    setup: (w) => writeFile(path.join(w.workspace, 'aaa.txt'), `${'a'.repeat(10_000)}!`),
    input: () => ({ pattern: '(a+)+$' }),
    expected: 'tool.timeout',
  },
  // Shell syntax and dangerous commands.
  {
    name: 'shell with ; inside the program name',
    tool: 'shell',
    input: () => ({ program: 'ls; rm -rf .', args: [] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with an && argument',
    tool: 'shell',
    input: () => ({ program: 'echo', args: ['hi', '&&', 'rm', '-rf', '.'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with a | argument',
    tool: 'shell',
    input: () => ({ program: 'cat', args: ['a.txt', '|', 'sh'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with $() command substitution, kept literal',
    tool: 'shell',
    input: () => ({ program: 'echo', args: ['$(touch pwned)'] }),
    expected: 'ok',
    sandbox: true,
    check: (r) => expect(r.content).toBe('stdout:\n$(touch pwned)'),
  },
  {
    name: 'shell with backtick substitution, kept literal',
    tool: 'shell',
    input: () => ({ program: 'echo', args: ['`touch pwned`'] }),
    expected: 'ok',
    sandbox: true,
    check: (r) => expect(r.content).toBe('stdout:\n`touch pwned`'),
  },
  {
    name: 'shell with a recursive delete (rm -rf .)',
    tool: 'shell',
    input: () => ({ program: 'rm', args: ['-rf', '.'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with find -delete',
    tool: 'shell',
    input: () => ({ program: 'find', args: ['.', '-delete'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with a force push',
    tool: 'shell',
    input: () => ({ program: 'git', args: ['push', '--force', 'origin', 'main'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with dd onto a disk',
    tool: 'shell',
    input: () => ({ program: 'dd', args: ['if=/dev/zero', 'of=/dev/sda'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell reading a raw disk device',
    tool: 'shell',
    input: () => ({ program: 'cat', args: ['/dev/sda'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with bash -c',
    tool: 'shell',
    input: () => ({ program: 'bash', args: ['-c', 'cat /etc/shadow'] }),
    expected: 'tool.refused',
  },
  {
    name: 'shell with a working directory outside',
    tool: 'shell',
    input: () => ({ program: 'ls', cwd: '../outside' }),
    expected: 'sandbox.escape',
  },
  // Secrets.
  {
    name: 'shell printing the environment to find API keys',
    tool: 'shell',
    input: () => ({
      program: 'node',
      args: ['-e', 'process.stdout.write(JSON.stringify(process.env))'],
    }),
    context: secretEnv,
    expected: 'ok',
    sandbox: true,
    check: noSecret,
  },
  {
    name: 'shell reading /proc/1/environ',
    tool: 'shell',
    input: () => ({ program: 'cat', args: ['/proc/1/environ'] }),
    context: secretEnv,
    expected: 'ok',
    sandbox: true,
    check: noSecret,
  },
  {
    name: 'shell reading /proc/<ppid>/environ',
    tool: 'shell',
    input: () => ({
      program: 'node',
      args: [
        '-e',
        "try { process.stdout.write(require('fs').readFileSync('/proc/' + process.ppid + '/environ')) } catch (e) { console.log(e.code) }",
      ],
    }),
    context: secretEnv,
    expected: 'ok',
    sandbox: true,
    check: noSecret,
  },
  {
    name: 'python reading os.environ and /proc/1/environ',
    tool: 'python',
    input: () => ({
      code: "import os\nprint(dict(os.environ))\nprint(open('/proc/1/environ').read())",
    }),
    context: secretEnv,
    expected: 'ok',
    sandbox: true,
    check: noSecret,
  },
  {
    name: 'python writing outside the workspace',
    tool: 'python',
    input: (w) => ({
      code: `try:\n    open(${JSON.stringify(path.join(w.outside, 'pwned.txt'))}, 'w').write('x')\n    print('WROTE')\nexcept OSError as error:\n    print('refused', error.errno)`,
    }),
    expected: 'ok',
    sandbox: true,
    check: (r) => expect(r.content).not.toContain('WROTE'),
  },
  // Server-side request forgery.
  {
    name: 'fetch_url redirected to loopback (127.0.0.2)',
    tool: 'fetch_url',
    input: () => ({ url: `http://127.0.0.1:${port}/to-loopback` }),
    expected: 'tool.refused',
    requests: 1,
  },
  {
    name: 'fetch_url redirected to IPv4-mapped IPv6 loopback',
    tool: 'fetch_url',
    input: () => ({ url: `http://127.0.0.1:${port}/to-mapped` }),
    expected: 'tool.refused',
    requests: 1,
  },
  {
    name: 'fetch_url redirected to the metadata address',
    tool: 'fetch_url',
    input: () => ({ url: `http://127.0.0.1:${port}/to-metadata` }),
    expected: 'tool.refused',
    requests: 1,
  },
  {
    name: 'fetch_url redirected to a name resolving to a private address',
    tool: 'fetch_url',
    input: () => ({ url: `http://127.0.0.1:${port}/to-private-name` }),
    expected: 'tool.refused',
    requests: 1,
  },
  {
    name: 'fetch_url of 169.254.169.254',
    tool: 'fetch_url',
    input: () => ({ url: 'http://169.254.169.254/latest/meta-data/iam/' }),
    expected: 'tool.refused',
  },
  {
    name: 'fetch_url of the IPv6 metadata address',
    tool: 'fetch_url',
    input: () => ({ url: 'http://[fd00:ec2::254]/latest/' }),
    expected: 'tool.refused',
  },
  {
    name: 'fetch_url of a name resolving to 10.0.0.7',
    tool: 'fetch_url',
    input: () => ({ url: 'http://internal.test/' }),
    expected: 'tool.refused',
  },
  {
    name: 'fetch_url of a name resolving to public and private addresses',
    tool: 'fetch_url',
    input: () => ({ url: 'https://mixed.test/' }),
    expected: 'tool.refused',
  },
  {
    name: 'fetch_url of a name resolving to the metadata address',
    tool: 'fetch_url',
    input: () => ({ url: 'http://metadata.test/' }),
    expected: 'tool.refused',
  },
  {
    name: 'fetch_url of a name resolving to IPv4-mapped private IPv6',
    tool: 'fetch_url',
    input: () => ({ url: 'http://mapped.test/' }),
    expected: 'tool.refused',
  },
  {
    name: 'fetch_url of loopback spelled as a decimal number',
    tool: 'fetch_url',
    registry: defaultFetch,
    input: () => ({ url: `http://2130706433:${port}/` }),
    expected: 'tool.refused',
    requests: 0,
  },
  {
    name: 'fetch_url of localhost',
    tool: 'fetch_url',
    registry: defaultFetch,
    input: () => ({ url: `http://localhost:${port}/` }),
    expected: 'tool.refused',
    requests: 0,
  },
  {
    name: 'fetch_url of a file:// URL',
    tool: 'fetch_url',
    input: () => ({ url: 'file:///etc/passwd' }),
    expected: 'tool.refused',
  },
  // Huge and malformed arguments, tools outside the set.
  {
    name: 'read_file with a 1 MB path',
    tool: 'read_file',
    input: () => ({ path: 'a/'.repeat(500_000) }),
    expected: 'tool.invalid_input',
  },
  {
    name: 'write_file with 6 MB of content',
    tool: 'write_file',
    input: () => ({ path: 'big.md', content: 'x'.repeat(6_000_000) }),
    expected: 'tool.invalid_input',
  },
  {
    name: 'shell with 10,000 arguments',
    tool: 'shell',
    input: () => ({ program: 'echo', args: Array.from({ length: 10_000 }, () => 'x') }),
    expected: 'tool.invalid_input',
  },
  {
    name: 'read_file with arguments nested 100,000 levels deep',
    tool: 'read_file',
    raw: () => `{"path":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    expected: 'tool.invalid_input',
  },
  {
    name: 'write_file with truncated JSON arguments',
    tool: 'write_file',
    raw: () => '{"path":"a.md","content":"x',
    expected: 'tool.invalid_json',
  },
  {
    name: 'a call to shell from an agent whose set is read_file only',
    tool: 'shell',
    registry: () => registry().narrow(['read_file']),
    input: () => ({ program: 'ls' }),
    expected: 'tool.not_allowed',
  },
  {
    name: 'a call to a tool that does not exist',
    tool: 'rm_rf',
    input: () => ({}),
    expected: 'tool.unknown',
  },
];

let world: World;
beforeEach(async () => {
  world = await createWorld();
  requests = 0;
  await mkdir(path.join(world.workspace, 'notes'));
  await writeFile(path.join(world.workspace, 'a.txt'), 'alpha\n');
  await writeFile(path.join(world.workspace, 'notes', 'b.md'), '# b\n');
  await writeFile(path.join(world.outside, 'secret.txt'), 'TOP SECRET\n');
});
afterEach(() => world.cleanup());

describe('hostile inputs', () => {
  it('has at least 25 named cases', () => {
    expect(table.length).toBeGreaterThanOrEqual(25);
    expect(new Set(table.map((entry) => entry.name)).size).toBe(table.length);
  });

  for (const entry of table) {
    const name = `${entry.name} → ${entry.expected === 'ok' ? 'handled' : entry.expected}`;
    it.skipIf(entry.sandbox === true && withoutSandbox)(
      entry.sandbox === true ? sandboxed(name) : name,
      async () => {
        await entry.setup?.(world);
        const workspaceBefore = await snapshot(world.workspace);
        const outsideBefore = await snapshot(world.outside);
        const input = entry.input?.(world);
        const raw = entry.raw?.(world) ?? JSON.stringify(input);
        const context = contextFor(world.workspace, entry.context?.(world) ?? {});
        const result = await (entry.registry ?? registry)().call(
          { id: 'hostile', name: entry.tool, arguments: input, raw },
          context,
        );
        expect(outcome(result), result.content.slice(0, 500)).toBe(entry.expected);
        if (!result.ok) expect(result.content.length).toBeGreaterThan(10);
        entry.check?.(result, world);
        expect(await snapshot(world.workspace)).toEqual(workspaceBefore);
        expect(await snapshot(world.outside)).toEqual(outsideBefore);
        if (entry.requests !== undefined) expect(requests).toBe(entry.requests);
      },
    );
  }
});
