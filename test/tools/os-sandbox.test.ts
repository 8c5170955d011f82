import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTroupeError } from '../../src/errors.js';
import {
  bwrapArgs,
  DEFAULT_EXEC_LIMITS,
  defaultHiddenPaths,
  prlimitArgs,
  probeSandbox,
  programMount,
  requireSandbox,
} from '../../src/tools/os-sandbox.js';
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

  it('mounts system folders read-only, never the whole root, and the workspace read-only by default', () => {
    const args = bwrapArgs(spec);
    const joined = args.join(' ');
    expect(joined).toContain('--ro-bind /usr /usr');
    expect(joined).not.toContain('--ro-bind / /');
    expect(joined).not.toMatch(/--(?:ro-)?bind (?:\/home|\/root|\/var|\/opt|\/srv|\/mnt|\/run) /);
    expect(joined).toContain('--ro-bind /work/ws /work/ws');
    expect(joined).not.toContain('--bind /work/ws /work/ws');
    expect(joined.indexOf('--ro-bind /work/ws /work/ws')).toBeGreaterThan(
      joined.indexOf('--tmpfs /tmp'),
    );
  });

  it('mounts writable folders, then protected paths read-only on top of them', () => {
    const joined = bwrapArgs({
      ...spec,
      writable: ['/work/ws'],
      readOnlyOver: ['/work/ws/.git'],
    }).join(' ');
    expect(joined.indexOf('--ro-bind /work/ws/.git /work/ws/.git')).toBeGreaterThan(
      joined.indexOf('--bind /work/ws /work/ws'),
    );
  });

  it('unshares every namespace (network too), runs as a non-root user, dies with the parent and clears the environment', () => {
    const args = bwrapArgs(spec);
    for (const flag of [
      '--unshare-all',
      '--unshare-user',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ]) {
      expect(args).toContain(flag);
    }
    expect(args).not.toContain('--share-net');
    expect(args[args.indexOf('--uid') + 1]).not.toBe('0');
    expect(args.join(' ')).toContain('--setenv PATH /usr/bin');
    expect(args.join(' ')).toContain('--setenv HOME /tmp/home');
    expect(args.slice(-5)).toEqual(['--chdir', '/work/ws/sub', '--', '/usr/bin/ls', '-la']);
  });

  it('keeps the host network only when asked (stdio MCP servers)', () => {
    expect(bwrapArgs({ ...spec, shareNetwork: true })).toContain('--share-net');
  });

  it('wraps the program in prlimit with every limit, and sizes the private /tmp', () => {
    const args = bwrapArgs({ ...spec, prlimitPath: '/usr/bin/prlimit' });
    const at = args.indexOf('/usr/bin/prlimit');
    expect(args.slice(at + 1, at + 6)).toEqual(prlimitArgs(DEFAULT_EXEC_LIMITS));
    expect(args.slice(at + 6)).toEqual(['--', '/usr/bin/ls', '-la']);
    expect(args.join(' ')).toContain(`--size ${DEFAULT_EXEC_LIMITS.tmpBytes} --tmpfs /tmp`);
  });

  it('hides credential files and folders when a mount would show them', async () => {
    const home = path.join(world.base, 'home');
    await mkdir(path.join(home, '.ssh'), { recursive: true });
    await writeFile(path.join(home, '.netrc'), 'machine x password y');
    const hiddenPaths = defaultHiddenPaths(home);
    const args = bwrapArgs({ ...spec, workspace: home, cwd: home, hiddenPaths }).join(' ');
    expect(args).toContain(`--tmpfs ${path.join(home, '.ssh')}`);
    expect(args).toContain(`--ro-bind /dev/null ${path.join(home, '.netrc')}`);
    expect(args).not.toContain('.aws');
    expect(bwrapArgs({ ...spec, hiddenPaths }).join(' ')).not.toContain('.ssh');
  });

  it('mounts the installation folder of a program outside /usr, read-only', () => {
    expect(programMount('/usr/bin/env')).toBeUndefined();
    expect(bwrapArgs({ ...spec, readOnly: ['/opt/node'] }).join(' ')).toContain(
      '--ro-bind /opt/node /opt/node',
    );
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
