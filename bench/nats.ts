import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What the NATS fan-out needs around it: a `nats-server -js` on a free
 * loopback port with its own store, and two `troupe worker` processes
 * connected to it. `stop()` tears all of it down.
 */
export interface NatsCluster {
  url: string;
  /**
   * CPU the server and the nodes have used so far (user + system, every
   * thread), in milliseconds; undefined where /proc cannot say (not Linux).
   */
  cpuMs(): number | undefined;
  /** The server's and each node's name and process id. */
  processes(): [string, number][];
  stop(): Promise<void>;
}

// A process's user + system time from /proc/<pid>/stat, in ms (clock ticks are 1/100 s on Linux).
function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** The nats-server binary (Debian's package, or NATS_SERVER), if installed. */
export function natsServerPath(): string | undefined {
  for (const path of [
    process.env['NATS_SERVER'],
    '/usr/sbin/nats-server',
    '/usr/bin/nats-server',
  ]) {
    if (path !== undefined && existsSync(path)) return path;
  }
  return undefined;
}

/** Starts the server and `nodes` worker processes of `threads` actor threads and at most `toolThreads` tool threads each. */
export async function startNatsCluster(
  binary: string,
  nodes: number,
  threads: number,
  toolThreads: number,
): Promise<NatsCluster> {
  const port = await new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        resolve(typeof address === 'object' && address !== null ? address.port : 0),
      );
    });
  });
  const store = mkdtempSync(join(tmpdir(), 'troupe-bench-nats-'));
  const children: ChildProcess[] = [];
  const ready = (child: ChildProcess, marker: string, what: string): Promise<void> =>
    new Promise((resolve, reject) => {
      let text = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes(marker)) resolve();
      });
      child.once('exit', (code) => reject(new Error(`${what} exited (${code}): ${text}`)));
    });
  const server = spawn(binary, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', store], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(server);
  await ready(server, 'Server is ready', 'nats-server');
  const url = `nats://127.0.0.1:${port}`;
  const bin = fileURLToPath(new URL('../../bin/troupe.js', import.meta.url));
  await Promise.all(
    Array.from({ length: nodes }, (_, index) => {
      const child = spawn(
        process.execPath,
        [
          // Extra Node flags for the nodes (`--cpu-prof --cpu-prof-dir <dir>` to profile them: Node
          // refuses those in NODE_OPTIONS), split on spaces.
          ...(process.env['TROUPE_BENCH_NODE_FLAGS'] ?? '')
            .split(' ')
            .filter((flag) => flag !== ''),
          bin,
          'worker',
          '--nats',
          url,
          '--name',
          `bench-${index + 1}`,
          '--threads',
          String(threads),
          '--tool-threads',
          String(toolThreads),
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      children.push(child);
      return ready(child, 'taking work from', `worker bench-${index + 1}`);
    }),
  );
  return {
    url,
    cpuMs: () => {
      let total = 0;
      for (const child of children) {
        const ms = processCpuMs(child.pid);
        if (ms === undefined) return undefined;
        total += ms;
      }
      return total;
    },
    processes: () =>
      children.flatMap((child, index): [string, number][] =>
        child.pid === undefined
          ? []
          : [[index === 0 ? 'nats-server' : `bench-${index}`, child.pid]],
      ),
    stop: async () => {
      // Nodes run with extra flags (profiling) end with SIGTERM before the server goes, so they
      // write what they collected; otherwise everything is killed at once.
      const gentle = (process.env['TROUPE_BENCH_NODE_FLAGS'] ?? '') !== '';
      const end = (child: ChildProcess, signal: NodeJS.Signals): Promise<void> =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill(signal);
          if (signal !== 'SIGKILL') setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
        });
      // The server is the first child, the nodes follow.
      if (gentle) await Promise.all(children.slice(1).map((child) => end(child, 'SIGTERM')));
      await Promise.all([...children].reverse().map((child) => end(child, 'SIGKILL')));
      rmSync(store, { recursive: true, force: true });
    },
  };
}
