import { Readable } from 'node:stream';
import type { CliIo } from '../../src/cli/context.js';
import { FakeTerminal } from '../render/fake-terminal.js';

/** A CliIo of fakes: recorded stdout/stderr, a given env, optional scripted stdin lines. */
export function fakeIo(
  options: {
    env?: NodeJS.ProcessEnv;
    cwd?: string;
    stdinLines?: string[];
    stdinTTY?: boolean;
    signal?: AbortSignal;
  } = {},
): CliIo & { stdout: FakeTerminal; stderr: FakeTerminal } {
  const stdin =
    options.stdinLines === undefined
      ? undefined
      : Object.assign(Readable.from(options.stdinLines.map((line) => `${line}\n`)), {
          isTTY: options.stdinTTY ?? false,
        });
  return {
    stdout: new FakeTerminal(),
    stderr: new FakeTerminal(),
    env: options.env ?? {},
    stdin,
    cwd: options.cwd ?? process.cwd(),
    signal: options.signal,
  };
}

/** argv as node passes it. */
export function argv(...args: string[]): string[] {
  return ['node', 'troupe', ...args];
}
