import { execFileSync, spawn } from 'node:child_process';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runProcess } from '../../../src/tools/builtin/run-process.js';
import { createShellTool, shellTool } from '../../../src/tools/builtin/shell.js';
import {
  callTool,
  contextFor,
  createWorld,
  outcome,
  sandboxed,
  sandboxStatus,
  snapshot,
  type World,
} from '../harness.js';

const noSandbox = !sandboxStatus.available;
const SECRET = 'sk-troupe-test-marker-0123456789abcdef';

let world: World;
beforeEach(async () => {
  world = await createWorld();
  await writeFile(path.join(world.workspace, 'a.txt'), 'alpha\nbeta\n');
});
afterEach(() => world.cleanup());

function secretEnv(): NodeJS.ProcessEnv {
  return { ...process.env, OPENAI_API_KEY: SECRET, TROUPE_TEST_TOKEN: SECRET };
}

describe('shell', () => {
  it('refuses with an install hint when bubblewrap cannot start', async () => {
    const tool = createShellTool({ sandbox: { bwrapPath: '/nonexistent/bwrap' } });
    const result = await callTool(tool, { program: 'ls', args: [] }, contextFor(world.workspace));
    expect(outcome(result)).toBe('sandbox.unavailable');
    expect(result.content).toContain('apt-get install bubblewrap');
    expect(result.content).toContain('--unsafe-no-sandbox');
  });

  it('runs without the sandbox only under the explicit opt-out, environment still scrubbed', async () => {
    const tool = createShellTool({ sandbox: { bwrapPath: '/nonexistent/bwrap' } });
    const context = contextFor(world.workspace, { unsafeNoSandbox: true, env: secretEnv() });
    const result = await callTool(
      tool,
      { program: 'node', args: ['-e', 'process.stdout.write(JSON.stringify(process.env))'] },
      context,
    );
    expect(result.ok).toBe(true);
    expect(result.content).not.toContain(SECRET);
  });

  it('does not ask for approval when the sandbox cannot start anyway', async () => {
    const approve = vi.fn(async () => true);
    const tool = createShellTool({ sandbox: { bwrapPath: '/nonexistent/bwrap' } });
    const result = await callTool(
      tool,
      { program: 'ls' },
      contextFor(world.workspace, { approve }),
    );
    expect(outcome(result)).toBe('sandbox.unavailable');
    expect(approve).not.toHaveBeenCalled();
  });

  it('is refused without the exec tier', async () => {
    const result = await callTool(
      shellTool,
      { program: 'ls' },
      contextFor(world.workspace, { grants: ['read'] }),
    );
    expect(outcome(result)).toBe('permission.denied');
    expect(result.content).toContain('--allow exec');
  });

  it('asks for approval on every call and does not run on a no', async () => {
    const approve = vi.fn(async () => false);
    // The opt-out keeps this test independent of bubblewrap; the approval comes first either way.
    const context = contextFor(world.workspace, { approve, unsafeNoSandbox: true });
    const result = await callTool(shellTool, { program: 'ls', args: ['-a'] }, context);
    expect(approve).toHaveBeenCalledWith({
      tool: 'shell',
      agentId: 'agent-test',
      summary: 'run `ls -a` in .',
      detail: 'ls -a\n(working directory: .)',
    });
    expect(outcome(result)).toBe('tool.refused');
    expect(result.content).toContain('did not approve');
  });

  it.skipIf(noSandbox)(sandboxed('lists the workspace in the sandbox'), async () => {
    const result = await callTool(
      shellTool,
      { program: 'ls', args: ['-1'] },
      contextFor(world.workspace),
    );
    expect(result).toEqual({ ok: true, content: 'stdout:\na.txt' });
  });

  it.skipIf(noSandbox)(sandboxed('runs after an approval'), async () => {
    const context = contextFor(world.workspace, { approve: async () => true });
    const result = await callTool(shellTool, { program: 'cat', args: ['a.txt'] }, context);
    expect(result.content).toBe('stdout:\nalpha\nbeta');
  });

  it.skipIf(noSandbox)(sandboxed('runs in a working directory inside the workspace'), async () => {
    await mkdir(path.join(world.workspace, 'sub'));
    const result = await callTool(
      shellTool,
      { program: 'pwd', cwd: 'sub' },
      contextFor(world.workspace),
    );
    expect(result.content).toBe(`stdout:\n${path.join(world.workspace, 'sub')}`);
  });

  it('refuses a working directory outside the workspace or missing', async () => {
    expect(
      outcome(
        await callTool(
          shellTool,
          { program: 'ls', cwd: '../outside' },
          contextFor(world.workspace),
        ),
      ),
    ).toBe('sandbox.escape');
    expect(
      outcome(
        await callTool(shellTool, { program: 'ls', cwd: 'missing' }, contextFor(world.workspace)),
      ),
    ).toBe('tool.failed');
  });

  it.skipIf(noSandbox)(
    sandboxed('reports a non-zero exit as a failure carrying stderr'),
    async () => {
      const result = await callTool(
        shellTool,
        { program: 'ls', args: ['missing'] },
        contextFor(world.workspace),
      );
      expect(outcome(result)).toBe('tool.failed');
      expect(result.content).toMatch(/ls missing exited with code 2\.\nstderr:\n.*missing/);
    },
  );

  it.skipIf(noSandbox)(sandboxed('kills a program that runs past its timeout'), async () => {
    const result = await callTool(
      shellTool,
      { program: 'node', args: ['-e', 'setInterval(() => {}, 1000)'], timeoutMs: 300 },
      contextFor(world.workspace),
    );
    expect(outcome(result)).toBe('tool.timeout');
    expect(result.content).toContain('did not finish within 300 ms');
  });

  it.skipIf(noSandbox)(sandboxed('stops a program at the output cap and says so'), async () => {
    const tool = createShellTool({ maxOutputBytes: 1_000 });
    const result = await callTool(
      tool,
      { program: 'node', args: ['-e', "process.stdout.write('x'.repeat(100000))"] },
      contextFor(world.workspace),
    );
    expect(result.ok).toBe(true);
    expect(result.content).toContain('output cap reached');
    expect(result.content.match(/x/g)?.length).toBe(1_000);
  });

  it.skipIf(noSandbox)(sandboxed('runs read-only git subcommands'), async () => {
    execFileSync('git', ['init', '-q'], { cwd: world.workspace });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'add', 'a.txt'], {
      cwd: world.workspace,
    });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'first'], {
      cwd: world.workspace,
    });
    const result = await callTool(
      shellTool,
      { program: 'git', args: ['log', '--format=%s'] },
      contextFor(world.workspace),
    );
    expect(result.content).toBe('stdout:\nfirst');
  });

  it.skipIf(noSandbox)(
    sandboxed('ignores a program planted in the workspace on PATH'),
    async () => {
      await mkdir(path.join(world.workspace, 'bin'));
      await writeFile(path.join(world.workspace, 'bin', 'ls'), '#!/bin/sh\necho hijacked\n');
      await chmod(path.join(world.workspace, 'bin', 'ls'), 0o755);
      const env = { ...process.env, PATH: `${path.join(world.workspace, 'bin')}:/usr/bin:/bin` };
      const result = await callTool(
        shellTool,
        { program: 'ls' },
        contextFor(world.workspace, { env }),
      );
      expect(result.content).not.toContain('hijacked');
      expect(result.content).toContain('a.txt');
    },
  );

  it('says when an allowlisted program is not installed', async () => {
    const tool = createShellTool({
      policy: { programs: ['troupe-no-such-program'] },
      sandbox: { bwrapPath: '/nonexistent/bwrap' },
    });
    const result = await callTool(
      tool,
      { program: 'troupe-no-such-program' },
      contextFor(world.workspace, { unsafeNoSandbox: true }),
    );
    expect(outcome(result)).toBe('tool.failed');
    expect(result.content).toContain('not installed');
  });
});

describe('shell sandbox', () => {
  it.skipIf(noSandbox)(
    sandboxed('keeps the root read-only and the workspace writable'),
    async () => {
      const code = `
      const fs = require('fs');
      fs.writeFileSync('inside.txt', 'ok');
      try { fs.writeFileSync(${JSON.stringify(path.join(world.outside, 'pwned.txt'))}, 'x'); console.log('WROTE OUTSIDE'); }
      catch (e) { console.log('outside:', e.code); }
      try { fs.writeFileSync('/usr/troupe-pwned.txt', 'x'); console.log('WROTE ROOT'); }
      catch (e) { console.log('root:', e.code); }`;
      const before = await snapshot(world.outside);
      const result = await callTool(
        shellTool,
        { program: 'node', args: ['-e', code] },
        contextFor(world.workspace),
      );
      // The outside folder is under the host /tmp, which the private /tmp hides (ENOENT).
      expect(result.content).toMatch(/outside: (EROFS|ENOENT)/);
      expect(result.content).toContain('root: EROFS');
      expect(await readdir(world.workspace)).toContain('inside.txt');
      expect(await snapshot(world.outside)).toEqual(before);
    },
  );

  it.skipIf(noSandbox)(sandboxed('gives the program a private /tmp'), async () => {
    const marker = `troupe-private-tmp-${process.pid}-${Date.now()}`;
    const code = `require('fs').writeFileSync('/tmp/${marker}', 'x'); console.log(require('fs').readdirSync('/tmp').length)`;
    const result = await callTool(
      shellTool,
      { program: 'node', args: ['-e', code] },
      contextFor(world.workspace),
    );
    expect(result.ok).toBe(true);
    await expect(readdir('/tmp')).resolves.not.toContain(marker);
  });

  it.skipIf(noSandbox)(
    sandboxed('hides the environment secrets from env and from /proc/1/environ'),
    async () => {
      const context = contextFor(world.workspace, { env: secretEnv() });
      const env = await callTool(
        shellTool,
        { program: 'node', args: ['-e', 'process.stdout.write(JSON.stringify(process.env))'] },
        context,
      );
      const pid1 = await callTool(
        shellTool,
        { program: 'cat', args: ['/proc/1/environ'] },
        context,
      );
      expect(env.ok && pid1.ok).toBe(true);
      expect(env.content).not.toContain(SECRET);
      expect(pid1.content).not.toContain(SECRET);
    },
  );

  it.skipIf(noSandbox)(
    sandboxed('cannot see another process, so cannot read its /proc/<pid>/environ'),
    async () => {
      const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
        env: { ...process.env, TROUPE_TEST_API_KEY: SECRET },
        stdio: 'ignore',
      });
      try {
        const pid = holder.pid ?? 0;
        const result = await callTool(
          shellTool,
          { program: 'cat', args: [`/proc/${pid}/environ`] },
          contextFor(world.workspace),
        );
        expect(result.content).not.toContain(SECRET);
        const parent = await callTool(
          shellTool,
          {
            program: 'node',
            args: [
              '-e',
              `try { process.stdout.write(require('fs').readFileSync('/proc/' + process.ppid + '/environ')) } catch (e) { console.log(e.code) }`,
            ],
          },
          contextFor(world.workspace, { env: secretEnv() }),
        );
        expect(parent.content).not.toContain(SECRET);
      } finally {
        holder.kill('SIGKILL');
      }
    },
  );

  it.skipIf(noSandbox)(
    sandboxed("never reaches the host's loopback services, with or without the network tier"),
    async () => {
      let requests = 0;
      const server = http.createServer((_request, response) => {
        requests += 1;
        response.end('hi');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const code = `require('http').get('http://127.0.0.1:${port}/', (r) => { console.log('status', r.statusCode); process.exit(0); }).on('error', (e) => { console.log('error', e.code); process.exit(3); })`;
      try {
        const offline = await callTool(
          shellTool,
          { program: 'node', args: ['-e', code] },
          contextFor(world.workspace, { grants: ['exec'] }),
        );
        expect(outcome(offline)).toBe('tool.failed');
        expect(requests).toBe(0);
        const online = await callTool(
          shellTool,
          { program: 'node', args: ['-e', code] },
          contextFor(world.workspace, { grants: ['exec', 'network'] }),
        );
        expect(outcome(online)).toBe('tool.failed');
        expect(online.content).not.toContain('status 200');
        expect(requests).toBe(0);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );
});

describe('runProcess', () => {
  it('kills the process group when the signal aborts', async () => {
    const controller = new AbortController();
    let pid = 0;
    const running = runProcess({
      file: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      cwd: world.workspace,
      env: { PATH: process.env['PATH'] ?? '' },
      timeoutMs: 60_000,
      maxOutputBytes: 1_000,
      signal: controller.signal,
      onSpawn: (spawned) => {
        pid = spawned;
      },
    });
    controller.abort(new Error('stop'));
    await expect(running).rejects.toThrow('stop');
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
  });

  // A stand-in for bwrap --info-fd 3 --block-fd 4: it reports `child-pid` (its own child's, or
  // the pid given), then waits for the gate's byte before it exits 0.
  const FAKE_BWRAP = `
    const fs = require('node:fs');
    const { spawn } = require('node:child_process');
    const own = process.argv[1] === 'own';
    const child = own ? spawn('sleep', ['30'], { stdio: 'ignore' }) : undefined;
    fs.writeSync(3, JSON.stringify({ 'child-pid': own ? child.pid : Number(process.argv[1]) }));
    fs.closeSync(3);
    fs.readSync(4, Buffer.alloc(2));
    process.stdout.write('program started');
    child?.kill();
  `;
  const gated = (reported: string, gate: (pid: number) => Promise<void>) =>
    runProcess({
      file: process.execPath,
      args: ['-e', FAKE_BWRAP, reported],
      cwd: world.workspace,
      env: { PATH: process.env['PATH'] ?? '' },
      timeoutMs: 60_000,
      maxOutputBytes: 1_000,
      signal: new AbortController().signal,
      gate,
    });

  it('passes the sandbox pid bwrap reports through the gate while that process waits', async () => {
    const seen: number[] = [];
    const result = await gated('own', async (pid) => {
      seen.push(pid);
    });
    expect(result.refused).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('program started');
    expect(seen).toHaveLength(1);
  });

  it('never gates a pid that is not the waiting sandbox (one reused after a kill)', async () => {
    // The test's own pid stands for a process that took a dead sandbox's pid: its parent is not
    // bwrap, so it must not be moved into the sandbox's cgroup (whose release kills everything).
    const seen: number[] = [];
    const result = await gated(String(process.pid), async (pid) => {
      seen.push(pid);
    });
    expect(seen).toEqual([]);
    expect(result.refused).toBe('the sandbox ended before its program started');
    // Refused means nothing ran: the stand-in was killed before it could go on.
    expect(result.stdout).toBe('');
  });
});
