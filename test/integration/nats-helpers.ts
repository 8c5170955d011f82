import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { natsServerState } from '../helpers/nats-server.js';

const BIN = fileURLToPath(new URL('../../bin/troupe.js', import.meta.url));

/** A `troupe worker` process (the built CLI), its stderr kept for failure messages. */
export interface NodeProcess {
  name: string;
  child: ChildProcess;
  log: string[];
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
}

/** Starts `troupe worker --nats <url>` and waits until it takes work. */
export async function startNode(
  url: string,
  name: string,
  extra: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<NodeProcess> {
  const child = spawn(
    process.execPath,
    [
      BIN,
      'worker',
      '--nats',
      url,
      '--name',
      name,
      '--threads',
      '1',
      '--dead-after',
      '3000',
      ...extra,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
  );
  const log: string[] = [];
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  await new Promise<void>((resolve, reject) => {
    let text = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const lines = text.split('\n');
      text = lines.pop() ?? '';
      for (const line of lines) {
        log.push(line);
        if (line.includes('taking work from')) resolve();
      }
    });
    void exited.then((code) =>
      reject(
        new Error(
          `worker ${name} exited (${code}):\n${log.join('\n')}\n${natsServerState(url) ?? ''}`,
        ),
      ),
    );
  });
  return { name, child, log, exited };
}

/** Stops a node process with `signal` (default SIGKILL) and waits for it to exit. */
export async function stopNode(
  node: NodeProcess,
  signal: NodeJS.Signals = 'SIGKILL',
): Promise<void> {
  if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill(signal);
  await node.exited;
}
