import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type MockOpenAIServer,
  openaiReply,
  startMockOpenAIServer,
} from '../helpers/mock-openai-server.js';

// `troupe run --roles <module>` with a mistake in a role, as a person runs it
// (node bin/troupe.js on the built dist/): a usage error (exit 2) that says
// what to fix, before the model server sees any request.
const root = new URL('../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'troupe.js');
const roleModule = pathToFileURL(join(root, 'dist', 'src', 'roles', 'role.js')).href;

beforeAll(() => {
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before these tests (npm test does).');
  }
});

let server: MockOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function run(
  roles: string,
  extra: string[] = [],
): Promise<{ code: number | null; stderr: string; out: string }> {
  server = await startMockOpenAIServer({
    respond: () => openaiReply({ content: 'should never be asked' }),
  });
  const dir = mkdtempSync(join(tmpdir(), 'troupe-role-check-'));
  const file = join(dir, 'roles.mjs');
  writeFileSync(file, `import { defineRole } from '${roleModule}';\n${roles}\n`);
  const out = join(dir, 'out');
  const child = spawn(
    process.execPath,
    [
      bin,
      'run',
      'Summarise the notes.',
      '--provider',
      'openai',
      '--model',
      'mock-model',
      '--base-url',
      server.baseURL,
      '--workspace',
      dir,
      '--out',
      out,
      '--roles',
      file,
      '--quiet',
      ...extra,
    ],
    {
      cwd: root,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: tmpdir(), OPENAI_API_KEY: 'k' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) =>
    child.once('exit', (exit) => resolve(exit)),
  );
  return { code, stderr, out };
}

describe('troupe run --roles with a mistake in a role (child process, local model server)', () => {
  it('a typo in a tool name: exit 2 naming the tool and the nearest one, no request, no run folder', async () => {
    const { code, stderr, out } = await run(
      `export const scout = defineRole({ name: 'scout', description: 's', system: 's', tools: ['read_fiel', 'list_dir'] });`,
    );
    expect(code, stderr).toBe(2);
    expect(stderr).toContain('Role scout names tool `read_fiel`');
    expect(stderr).toContain('did you mean `read_file`?');
    expect(server?.requests).toEqual([]);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it('a required tool whose tier is not granted: exit 2 with the --allow fix, no request', async () => {
    const { code, stderr } = await run(
      `export const coder = defineRole({ name: 'coder', description: 'c', system: 'c', tools: ['read_file', 'python'], requiredTools: ['python'] });`,
      ['--allow', 'read'],
    );
    expect(code, stderr).toBe(2);
    expect(stderr).toContain('Role "coder" needs the exec (for python) permission');
    expect(stderr).toContain('--allow read,exec');
    expect(server?.requests).toEqual([]);
  });
});
