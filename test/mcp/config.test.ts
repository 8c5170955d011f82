import { describe, expect, it } from 'vitest';
import {
  checkRoleMcp,
  expandEnv,
  parseMcpConfig,
  roleMcpAccess,
  serverTiers,
  unreachableServers,
} from '../../src/mcp/config.js';
import { mcpToolName, renderMcpResult } from '../../src/mcp/mcp-tool.js';

/** `${NAME}` as the config writes it. */
const ref = (body: string): string => `\${${body}}`;

describe('parseMcpConfig', () => {
  it('reads the mcpServers format of Claude Desktop, Claude Code and Cursor', () => {
    const servers = parseMcpConfig({
      mcpServers: {
        filesystem: {
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-filesystem', '.'],
        },
        remote: {
          type: 'http',
          url: 'https://example.com/mcp',
          headers: { Authorization: `Bearer ${ref('TOKEN')}` },
        },
        local_db: {
          command: 'db-mcp',
          env: { DB: 'x' },
          troupe: { tiers: ['read'], roles: ['analyst'] },
        },
      },
    });
    expect(Object.keys(servers)).toEqual(['filesystem', 'remote', 'local_db']);
    expect(serverTiers(servers['filesystem']!)).toEqual(['exec', 'network']);
    expect(serverTiers(servers['remote']!)).toEqual(['network']);
    expect(serverTiers(servers['local_db']!)).toEqual(['read']);
  });

  it('refuses bad entries with what to do', () => {
    expect(() => parseMcpConfig({ mcpServers: { a: { args: [] } } })).toThrow(
      /needs "command".*or "url"/,
    );
    expect(() => parseMcpConfig({ mcpServers: { 'my server': { command: 'x' } } })).toThrow(
      /cannot prefix tool names.*"my-server"/,
    );
    expect(() => parseMcpConfig({ mcpServers: { a__b: { command: 'x' } } })).toThrow(
      /cannot prefix/,
    );
    expect(() =>
      parseMcpConfig({ mcpServers: { s: { type: 'sse', url: 'http://h/sse' } } }),
    ).toThrow(/deprecated SSE/);
    expect(() => parseMcpConfig([])).toThrow(/must be a JSON object/);
    expect(() => parseMcpConfig({ mcpServers: { u: { url: 'ftp://x' } } })).toThrow(/server "u"/);
  });
});

describe('role access and grants', () => {
  const servers = parseMcpConfig({
    mcpServers: {
      fs: { command: 'fs-mcp' },
      web: { url: 'http://127.0.0.1:1/mcp', troupe: { roles: ['researcher'] } },
    },
  });

  it('joins what a role names with the servers whose troupe.roles list it', () => {
    expect(roleMcpAccess('researcher', [{ server: 'fs', tools: ['read'] }], servers)).toEqual([
      { server: 'fs', tools: ['read'] },
      { server: 'web' },
    ]);
    expect(roleMcpAccess('analyst', [], servers)).toEqual([]);
    expect(
      roleMcpAccess(
        'x',
        [
          { server: 'fs', tools: ['a'] },
          { server: 'fs', tools: ['b'] },
        ],
        servers,
      ),
    ).toEqual([{ server: 'fs', tools: ['a', 'b'] }]);
  });

  it('refuses an unknown server and an ungranted one with the --allow fix', () => {
    expect(checkRoleMcp('r', [{ server: 'nope' }], servers, ['read'])?.message).toMatch(
      /names MCP server "nope".*Configured servers: fs, web/,
    );
    const denied = checkRoleMcp('r', [{ server: 'fs' }], servers, ['read', 'network']);
    expect(denied?.code).toBe('permission.denied');
    expect(denied?.message).toContain('--allow read,exec,network');
    expect(checkRoleMcp('r', [{ server: 'fs' }], servers, ['exec', 'network'])).toBeUndefined();
  });

  it('warns about servers no role reaches', () => {
    expect(unreachableServers(servers, [])).toEqual(['fs']);
    expect(unreachableServers(servers, [{ name: 'a', mcp: [{ server: 'fs' }] }])).toEqual([]);
  });
});

describe('names, env and results', () => {
  it('prefixes tool names and keeps them provider-safe', () => {
    expect(mcpToolName('fs', 'read_text_file')).toBe('fs__read_text_file');
    expect(mcpToolName('gh', 'repo.search/all')).toBe('gh__repo_search_all');
    const long = mcpToolName('server', 'x'.repeat(80));
    expect(long).toMatch(/^[a-zA-Z0-9_-]{64}$/);
    expect(long).not.toBe(mcpToolName('server', `${'x'.repeat(79)}y`));
  });

  it('expands $-brace references with and without defaults, and says when a variable is missing', () => {
    expect(expandEnv(`Bearer ${ref('TOKEN')}`, { TOKEN: 't' }, 'h')).toBe('Bearer t');
    expect(expandEnv(ref('HOST:-localhost'), {}, 'h')).toBe('localhost');
    expect(() => expandEnv(ref('TOKEN'), {}, 'MCP server "x" header A')).toThrow(/TOKEN.*not set/);
  });

  it('renders content blocks as text for the model', () => {
    expect(
      renderMcpResult({
        content: [
          { type: 'text', text: 'hello' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'resource_link', uri: 'file:///a', name: 'a' },
        ],
      }),
    ).toBe('hello\n[image image/png, 3 bytes, not shown]\n[resource link a file:///a]');
    expect(renderMcpResult({ structuredContent: { n: 1 } })).toBe('{\n  "n": 1\n}');
    expect(renderMcpResult({})).toBe('(no output)');
  });
});
