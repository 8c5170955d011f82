import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { captureHelpSnapshot, helpCommandLines } from '../../src/cli/help-capture.js';
import {
  helpEntryFor,
  mayBeHelp,
  readHelpSnapshot,
  renderHelpParts,
} from '../../src/cli/help-snapshot.js';
import { createProgram, runProgram } from '../../src/cli/program.js';
import { argv, fakeIo } from './io.js';

const BUILT_SNAPSHOT = new URL('../../dist/src/cli/help-snapshot.json', import.meta.url);
const BIN = fileURLToPath(new URL('../../bin/troupe.js', import.meta.url));

/** Commander's own output for `args` at `width` columns (undefined: not a terminal). */
async function commanderPrints(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  width: number | undefined,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const io = fakeIo({ env });
  const program = await createProgram(io, argv(...args));
  const setWidth = (command: Command): void => {
    // Commander's types say number; its own default returns undefined when not a terminal.
    const columns = (): number => width as number;
    command.configureOutput({ getOutHelpWidth: columns, getErrHelpWidth: columns });
    for (const sub of command.commands) setWidth(sub);
  };
  setWidth(program);
  const exitCode = await runProgram(program, argv(...args), io);
  return { exitCode, stdout: io.stdout.text, stderr: io.stderr.text };
}

const ENVS: NodeJS.ProcessEnv[] = [
  { XDG_STATE_HOME: '/var/state' },
  { HOME: '/home/a person with a rather long name/and/a/deep/home/folder' },
  { XDG_STATE_HOME: '/odd "quoted" \\ path' },
];
const WIDTHS = [undefined, 0, 10, 39, 40, 41, 45, 52, 60, 72, 79, 80, 81, 100, 133, 180, 250];

describe('help snapshot', () => {
  it('prints what commander prints, byte for byte, at every width and default --out', async () => {
    const snapshot = await captureHelpSnapshot();
    for (const args of helpCommandLines()) {
      for (const env of ENVS) {
        const entry = helpEntryFor(snapshot, args, env);
        expect(entry, args.join(' ')).toBeDefined();
        if (entry === undefined) continue;
        for (const width of WIDTHS) {
          const label = `troupe ${args.join(' ')} at ${width} columns, ${JSON.stringify(env)}`;
          const expected = await commanderPrints(args, env, width);
          expect(entry.exitCode, label).toBe(expected.exitCode);
          expect(renderHelpParts(entry.stdout, width), label).toBe(expected.stdout);
          expect(renderHelpParts(entry.stderr, width), label).toBe(expected.stderr);
        }
      }
    }
  });

  it('covers the top-level help, the version and every command, and nothing else', async () => {
    const snapshot = await captureHelpSnapshot();
    expect(helpEntryFor(snapshot, ['run', '--help'], {})).toBeDefined();
    expect(helpEntryFor(snapshot, ['help', 'mcp'], {})).toBeDefined();
    expect(helpEntryFor(snapshot, ['--version'], {})?.stdout).toEqual([
      expect.stringMatching(/^\d+\.\d+\.\d+\n$/),
    ]);
    expect(helpEntryFor(snapshot, ['run', 'x'], {})).toBeUndefined();
    expect(helpEntryFor(snapshot, ['run', '--hel'], {})).toBeUndefined();
    expect(helpEntryFor(snapshot, ['constructor'], {})).toBeUndefined();
    for (const args of helpCommandLines()) expect(mayBeHelp(args), args.join(' ')).toBe(true);
    expect(mayBeHelp(['run', 'task', '--help'])).toBe(false);
    expect(mayBeHelp(['demo'])).toBe(false);
  });

  it('is what the build wrote (npm run build takes it from the program)', async () => {
    const built = readHelpSnapshot(BUILT_SNAPSHOT);
    expect(built, 'dist/src/cli/help-snapshot.json: run npm run build').toBeDefined();
    expect(built).toEqual(await captureHelpSnapshot());
  });

  it('is what the troupe binary prints for --help and run --help', async () => {
    const run = promisify(execFile);
    const env = { ...process.env, XDG_STATE_HOME: '/var/state' };
    for (const args of [['--help'], ['run', '--help']]) {
      const { stdout } = await run(process.execPath, [BIN, ...args], { env });
      expect(stdout).toBe((await commanderPrints(args, env, undefined)).stdout);
    }
  });
});
