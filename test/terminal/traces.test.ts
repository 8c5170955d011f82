import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockOpenAIServer } from '../helpers/mock-openai-server.js';
import { hasPython, ptyEnv, runCommandInPty, runInPty, troupeBin } from '../helpers/pty.js';
import { runFanOut, startFanOutServer } from './fan-out.js';

async function troupeInPty(args: string[], cols = 100, rows = 30) {
  const session = runInPty(args, { cols, rows });
  const code = await session.exited;
  return { code, screen: session.screen.transcript() };
}

// Issue 13, problem 7: traces you can find (runs, latest), true summaries for
// filtered replays, unknown agents named, a dead writer noticed, closed pipes quiet.
describe.runIf(hasPython())('finding and replaying traces (pty)', () => {
  const out = mkdtempSync(join(tmpdir(), 'troupe-pty-traces-'));
  let server: MockOpenAIServer;
  beforeAll(async () => {
    const demo = await troupeInPty(['demo', '--quiet', '--out', out]);
    expect(demo.code, demo.screen).toBe(0);
    server = await startFanOutServer({
      tasks: [
        { role: 'researcher', task: 'slow topic A' },
        { role: 'researcher', task: 'slow topic B' },
      ],
      answer: 'never reached',
      delayMs: 60_000,
    });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it('lists runs with troupe runs and replays the newest with trace latest', async () => {
    const runs = await troupeInPty(['runs', '--out', out]);
    expect(runs.code).toBe(0);
    const [id] = readdirSync(out);
    expect(runs.screen).toMatch(/^run +started +status +agents +tokens +task/m);
    expect(runs.screen).toMatch(
      new RegExp(
        `^${id} +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d +completed +7 +\\d+k +Research the documents`,
        'm',
      ),
    );
    const latest = await troupeInPty(['trace', 'latest', '--out', out, '--quiet']);
    expect(latest.code).toBe(0);
    expect(latest.screen).toContain(`run ${id} started`);
  }, 120_000);

  it('prints the summary of the whole run for a filtered replay', async () => {
    const filtered = await troupeInPty(['trace', 'latest', '--out', out, '--type', 'tool.call']);
    expect(filtered.code).toBe(0);
    expect(filtered.screen).not.toContain('finished completed');
    expect(filtered.screen).toMatch(
      /Run \S+ completed in \S+ · 7 agents \(7 completed\) · \d+k tokens/,
    );
  }, 60_000);

  it('names the agents that exist when --agent names none of them', async () => {
    const result = await troupeInPty(['trace', 'latest', '--out', out, '--agent', 'nobody']);
    expect(result.code).toBe(2);
    expect(result.screen.replace(/\s+/g, ' ')).toContain(
      'No agent "nobody" in this run. Its agents: coordinator, researcher-1',
    );
  }, 60_000);

  it('fails at once on a mistyped run id with --follow', async () => {
    const result = await troupeInPty(['trace', '2026-no-such-run', '--follow', '--out', out]);
    expect(result.code).toBe(2);
    expect(result.screen).toContain('No run "2026-no-such-run"');
    expect(result.screen.replace(/\s+/g, ' ')).toContain('Recent runs:');
  }, 60_000);

  it('ends quietly when the output pipe closes (trace | head)', async () => {
    const run = runCommandInPty(
      [
        'bash',
        '-c',
        `"${process.execPath}" "${troupeBin}" trace latest --out "${out}" | head -2; echo "exit=\${PIPESTATUS[0]}"`,
      ],
      { cols: 100, rows: 30, env: ptyEnv() },
    );
    await run.exited;
    const piped = { screen: run.screen.transcript() };
    expect(piped.screen).toContain('exit=0');
    expect(piped.screen).not.toContain('EPIPE');
    expect(piped.screen).not.toContain('Unhandled');
  }, 60_000);

  it('notices a writer that was killed and stops following, saying so', async () => {
    const killedOut = mkdtempSync(join(tmpdir(), 'troupe-pty-killed-'));
    const { session } = runFanOut(server, { cols: 100, rows: 30, args: ['--out', killedOut] });
    await session.waitFor(/researcher-2/);
    // Closing the terminal kills the run (SIGHUP): its writer.lock stays behind.
    session.kill();
    await session.exited;
    const [id = ''] = readdirSync(killedOut);
    expect(existsSync(join(killedOut, id, 'writer.lock'))).toBe(true);
    const follow = await troupeInPty(['trace', id, '--follow', '--quiet', '--out', killedOut]);
    expect(follow.code).toBe(1);
    expect(follow.screen.replace(/\s+/g, ' ')).toMatch(
      /stopped following: the process that was writing this run \(pid \d+\) is gone/,
    );
    expect(follow.screen).toContain('run ');
    expect(follow.screen).toMatch(/Run \S+ unfinished/);
  }, 120_000);
});
