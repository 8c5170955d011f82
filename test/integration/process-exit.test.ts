import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const runtimeModule = fileURLToPath(new URL('../../dist/src/runtime/runtime.js', import.meta.url));
const roleModule = fileURLToPath(new URL('../../dist/src/roles/role.js', import.meta.url));

// A real process: after close() nothing (thread, port, timer) keeps it alive,
// so it exits by itself. The harness timeout only guards against a hang.
const program = `
import { Runtime } from ${JSON.stringify(runtimeModule)};
import { defineRole } from ${JSON.stringify(roleModule)};
const worker = defineRole({ name: 'worker', description: 'w', system: 'w' });
const runtime = new Runtime({
  model: { provider: 'scripted', script: { steps: [{ content: 'done', repeat: true }] } },
  roles: [worker], threads: 2, workspace: process.cwd(), grants: [],
});
const results = await Promise.all([runtime.spawn('worker', 'a').result, runtime.spawn('worker', 'b').result]);
await runtime.close();
process.stdout.write(results.map((result) => result.status).join(','));
`;

describe('Runtime.close', () => {
  it('lets the process exit by itself once closed', async () => {
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--input-type=module', '-e', program],
        { timeout: 20_000 },
        (error, stdout) => {
          if (error) reject(error);
          else resolve(stdout);
        },
      );
    });
    expect(output).toBe('completed,completed');
  });
});
