import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's nats-server package puts the binary (or NATS_SERVER). */
export function natsServerBinary(): string | undefined {
  const candidates = [process.env['NATS_SERVER'], '/usr/sbin/nats-server', '/usr/bin/nats-server'];
  for (const candidate of candidates)
    if (candidate !== undefined && existsSync(candidate)) return candidate;
  try {
    return execFileSync('which', ['nats-server'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const servers = new Map<string, NatsServer>();

/** What `NatsServer.state` says of the server at `url`, when a test of this process started one there. */
export function natsServerState(url: string): string | undefined {
  return servers.get(url)?.state();
}

/**
 * A real `nats-server -js` for one test: loopback only, a free port, its own
 * store folder. `restart()` stops it and starts it again on the same port
 * and store (streams and consumers survive, as on a real server restart).
 */
export class NatsServer {
  readonly port: number;
  readonly storeDir: string;
  #process: ChildProcess | undefined;
  readonly #binary: string;
  // The server's last lines of output, and how it ended when nobody stopped it: what a test that
  // finds it gone reports (see `natsServerState`).
  readonly #tail: string[] = [];
  #ended: string | undefined;

  private constructor(binary: string, port: number, storeDir: string) {
    this.#binary = binary;
    this.port = port;
    this.storeDir = storeDir;
  }

  /** Starts a server; throws when the nats-server binary is missing. */
  static async start(): Promise<NatsServer> {
    const binary = natsServerBinary();
    if (binary === undefined)
      throw new Error('nats-server is not installed (apt-get install nats-server).');
    const server = new NatsServer(
      binary,
      await freePort(),
      mkdtempSync(join(tmpdir(), 'troupe-nats-')),
    );
    await server.#launch();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async #launch(): Promise<void> {
    const child = spawn(
      this.#binary,
      ['-js', '-a', '127.0.0.1', '-p', String(this.port), '-sd', this.storeDir],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.#process = child;
    this.#ended = undefined;
    servers.set(this.url, this);
    child.stderr?.on('data', (chunk: Buffer) => {
      this.#tail.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line !== ''),
      );
      this.#tail.splice(0, Math.max(0, this.#tail.length - 20));
    });
    child.once('exit', (code, signal) => {
      if (this.#process === child) this.#ended = `exited unasked (code ${code}, signal ${signal})`;
    });
    await new Promise<void>((resolve, reject) => {
      const onData = (): void => {
        if (this.#tail.some((line) => line.includes('Server is ready'))) {
          child.stderr?.off('data', onData);
          resolve();
        }
      };
      child.stderr?.on('data', onData);
      child.once('exit', (code) =>
        reject(new Error(`nats-server exited (${code}): ${this.#tail.join('\n')}`)),
      );
    });
  }

  /** Whether the server runs, and its last lines of output. */
  state(): string {
    const running =
      this.#process === undefined
        ? 'stopped by the test'
        : (this.#ended ?? `running (pid ${this.#process.pid})`);
    return `nats-server on port ${this.port}: ${running}; its last output:\n${this.#tail.join('\n')}`;
  }

  /** Stops the server (SIGTERM) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    if (child === undefined || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** Stops and starts the server on the same port and store. */
  async restart(): Promise<void> {
    await this.stop();
    await this.#launch();
  }

  /** Stops the server and removes its store. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}
