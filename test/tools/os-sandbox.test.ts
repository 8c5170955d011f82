import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.js';
import { bwrapArgs, probeSandbox, requireSandbox } from '../../src/tools/os-sandbox.js';
import { createWorld, type World } from './harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
});
afterEach(() => world.cleanup());

describe('bwrapArgs', () => {
  const spec = {
    program: '/usr/bin/ls',
    args: ['-la'],
    workspace: '/work/ws',
    cwd: '/work/ws/sub',
    env: { PATH: '/usr/bin', HOME: '/nonexistent-home' },
  };

  it('mounts the root read-only, /tmp private and the workspace writable, in that order', () => {
    const args = bwrapArgs(spec);
    const joined = args.join(' ');
    expect(joined).toContain('--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp');
    expect(joined.indexOf('--bind /work/ws /work/ws')).toBeGreaterThan(
      joined.indexOf('--tmpfs /tmp'),
    );
  });

  it('unshares PID (fresh /proc) and network, dies with the parent and clears the environment', () => {
    const args = bwrapArgs(spec);
    for (const flag of [
      '--unshare-pid',
      '--unshare-net',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      expect(args).toContain(flag);
    }
    expect(args.join(' ')).toContain('--setenv PATH /usr/bin');
    expect(args.slice(-5)).toEqual(['--chdir', '/work/ws/sub', '--', '/usr/bin/ls', '-la']);
  });

  it('keeps the network when the network tier is granted', () => {
    expect(bwrapArgs({ ...spec, allowNetwork: true })).not.toContain('--unshare-net');
  });

  it('hides credential files and folders under HOME', async () => {
    const home = path.join(world.base, 'home');
    await mkdir(path.join(home, '.ssh'), { recursive: true });
    await writeFile(path.join(home, '.netrc'), 'machine x password y');
    const args = bwrapArgs({ ...spec, env: { HOME: home } }).join(' ');
    expect(args).toContain(`--tmpfs ${path.join(home, '.ssh')}`);
    expect(args).toContain(`--ro-bind /dev/null ${path.join(home, '.netrc')}`);
    expect(args).not.toContain('.aws');
  });
});

describe('probeSandbox', () => {
  it('reports bwrap as unavailable when the binary does not exist', async () => {
    const status = await probeSandbox({ bwrapPath: '/nonexistent/bwrap' });
    expect(status.available).toBe(false);
    expect(status.reason).toContain('cannot start');
  });

  it('caches the probe per bwrap path', () => {
    expect(probeSandbox({ bwrapPath: '/nonexistent/bwrap' })).toBe(
      probeSandbox({ bwrapPath: '/nonexistent/bwrap' }),
    );
  });

  it('finds bubblewrap, or says why it cannot start', async () => {
    const status = await probeSandbox();
    if (status.available) expect(status.bwrapPath).toMatch(/bwrap$/);
    else expect(status.reason).toMatch(/bwrap/);
  });
});

describe('requireSandbox', () => {
  it('throws sandbox.unavailable with the install hint', async () => {
    const error = await requireSandbox('shell', { bwrapPath: '/nonexistent/bwrap' }).catch(
      (caught: unknown) => caught,
    );
    expect(isTroupeError(error, 'sandbox.unavailable')).toBe(true);
    expect(String((error as Error).message)).toContain('apt-get install bubblewrap');
  });
});
