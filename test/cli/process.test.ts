import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { followTrace } from '../../src/events/follow.js';
import { type AgentEvent, AgentEventSchema } from '../../src/events/schema.js';
import { readTrace } from '../../src/events/trace.js';
import { stripAnsi } from '../../src/render/terminal.js';

// The CLI as a person runs it: node bin/troupe.js on the built dist/ (npm test builds first).
const root = new URL('../../', import.meta.url).pathname;
const bin = join(root, 'bin', 'troupe.js');
const corpus = join(root, 'examples', 'corpus');
const TASK = 'Compare the storage documents and write a report.';

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A clean environment: no API keys from the machine running the tests. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: tmpdir(), ...extra };
}

function troupe(
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
  binary: string = bin,
): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [binary, ...args],
      { env, cwd: root, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
          stdout,
          stderr,
        });
      },
    );
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function outDir(): string {
  return mkdtempSync(join(tmpdir(), 'troupe-cli-out-'));
}

function onlyRun(out: string): string {
  const runs = readdirSync(out);
  expect(runs).toHaveLength(1);
  return runs[0]!;
}

function parseLines(stdout: string): AgentEvent[] {
  return stdout
    .trimEnd()
    .split('\n')
    .map((line) => AgentEventSchema.parse(JSON.parse(line)));
}

beforeAll(() => {
  if (!existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) {
    throw new Error('dist/ is missing: run `npm run build` before these tests (npm test does).');
  }
});

describe('troupe (child process, offline model)', () => {
  it('runs the demo to completion and writes the trace and the report', async () => {
    const out = outDir();
    const result = await troupe(['demo', '--quiet', '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    const runDir = join(out, onlyRun(out));
    const trace = readTrace(join(runDir, 'trace.jsonl'));
    expect(trace.invalidLines).toEqual([]);
    expect(trace.events.at(-1)).toMatchObject({ type: 'run.finished', status: 'completed' });
    const report = readFileSync(join(runDir, 'report.md'), 'utf8');
    expect(report).toMatch(/^# /);
    expect(report).toContain('no language model was used');
    expect(report).toContain('### Figures side by side');
    expect(result.stdout).toMatch(/Run \S+ completed in/);
    // Outside the working folder, inside HOME (the temporary folder here): shown with ~.
    expect(result.stdout).toContain(`report   ~/${relative(tmpdir(), join(runDir, 'report.md'))}`);
  });

  it('prints only schema-valid NDJSON on stdout with --json, progress on stderr', async () => {
    const out = outDir();
    const result = await troupe([
      'run',
      TASK,
      '--provider',
      'offline',
      '--workspace',
      corpus,
      '--out',
      out,
      '--threads',
      '1',
      '--json',
    ]);
    expect(result.code, result.stderr).toBe(0);
    const events = parseLines(result.stdout);
    expect(events[0]?.type).toBe('run.started');
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'completed' });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const spawned = events
      .filter((event) => event.type === 'agent.spawned')
      .map((event) => event.agentId);
    expect(spawned).toEqual(
      expect.arrayContaining([
        'coordinator',
        'researcher-1',
        'researcher-4',
        'analyst-1',
        'reporter-1',
      ]),
    );
    expect(result.stderr).toContain('trace');
  });

  it('replays a trace with the same lines the run printed in line mode', async () => {
    const out = outDir();
    const live = await troupe([
      'run',
      TASK,
      '--provider',
      'offline',
      '--workspace',
      corpus,
      '--out',
      out,
    ]);
    expect(live.code, live.stderr).toBe(0);
    const runId = onlyRun(out);
    const replay = await troupe(['trace', runId, '--out', out]);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout.length).toBeGreaterThan(1000);
    expect(live.stdout.slice(0, replay.stdout.length)).toBe(replay.stdout);
    expect(live.stdout.slice(replay.stdout.length)).toMatch(
      /^\ntrace {4}\S+\nreport {3}\S+\nanswer {3}\S+\ntimeline \S+\n$/,
    );
  });

  it('loads custom roles from --roles and ends with exit 1 when the token budget runs out', async () => {
    const out = outDir();
    const rolesFile = join(out, 'roles.mjs');
    writeFileSync(
      rolesFile,
      `import { defineRole } from ${JSON.stringify(pathToFileURL(join(root, 'dist/src/roles/role.js')).href)};\n` +
        "export const critic = defineRole({ name: 'critic', description: 'Finds weak claims.', system: 'Be critical.', tools: ['read_file'] });\n",
    );
    const ok = await troupe([
      'run',
      TASK,
      '--provider',
      'offline',
      '--workspace',
      corpus,
      '--out',
      out,
      '--roles',
      rolesFile,
      '--quiet',
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    const tight = await troupe([
      'run',
      TASK,
      '--provider',
      'offline',
      '--workspace',
      corpus,
      '--out',
      out,
      '--budget',
      '3k',
      '--quiet',
    ]);
    expect(tight.code, tight.stderr).toBe(1);
    expect(tight.stdout).toMatch(/run finished: budget/);
  });

  it("runs roles whose channel a user's module made with its own zod (the binary is a bundle with its own)", async () => {
    // The binary and its threads run troupe and zod from dist/bundle; a --roles module
    // imports the package (dist/src) and zod from node_modules, as a user's does.
    const run = async (title: string): Promise<AgentEvent[]> => {
      const out = outDir();
      const rolesFile = join(out, 'roles.mjs');
      const url = (path: string): string => JSON.stringify(pathToFileURL(join(root, path)).href);
      writeFileSync(
        rolesFile,
        [
          `import { z } from ${url('node_modules/zod/index.js')};`,
          `import { defineChannel, defineRole } from ${url('dist/src/index.js')};`,
          'const Finding = z.object({',
          `  source: z.string(), title: ${title}, summary: z.string(),`,
          '  keyPoints: z.array(z.string()), figures: z.array(z.string()),',
          '});',
          "const findings = defineChannel('findings', Finding, { description: 'One finding per message.' });",
          "export const researcher = defineRole({ name: 'researcher', description: 'Reads sources and publishes findings.', system: 'Publish findings.', tools: ['read_file', 'list_dir'], publishes: [findings] });",
          "export const analyst = defineRole({ name: 'analyst', description: 'Analyses findings.', system: 'Analyse them.', tools: ['read_file'], subscribes: [findings] });",
        ].join('\n'),
      );
      const result = await troupe(
        [
          'run',
          TASK,
          '--provider',
          'offline',
          '--workspace',
          corpus,
          '--out',
          out,
          '--roles',
          rolesFile,
        ],
        cleanEnv({ TROUPE_OFFLINE_DELAY_MS: '0' }),
      );
      expect(result.code, result.stderr).toBe(0);
      const [runId] = readdirSync(out).filter((name) => name !== 'roles.mjs');
      return readTrace(join(out, runId ?? '', 'trace.jsonl')).events;
    };
    const delivered = await run('z.string()');
    expect(delivered.filter((event) => event.type === 'message.sent').length).toBeGreaterThan(0);
    expect(delivered.filter((event) => event.type === 'message.received').length).toBeGreaterThan(
      0,
    );
    // The user's rule (no title over 12 characters; the built-in channel has none) is the one applied.
    const refused = (await run('z.string().max(12)')).filter(
      (event) => event.type === 'tool.result' && event.name === 'publish_findings' && !event.ok,
    );
    expect(refused.length).toBeGreaterThan(0);
    expect(JSON.stringify(refused[0])).toContain('expected string to have <=12 characters');
  });

  it('says to build when the copy it runs from was never built (no dist/bundle)', async () => {
    const copy = outDir();
    mkdirSync(join(copy, 'bin'));
    copyFileSync(bin, join(copy, 'bin', 'troupe.js'));
    const result = await troupe(['--help'], cleanEnv(), join(copy, 'bin', 'troupe.js'));
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('this copy is not built; run `npm run build`');
  });

  it('exits 2 with a clear message and nothing on stdout when arguments are bad', async () => {
    for (const args of [
      ['run', '--provider', 'offline'],
      ['run', TASK, '--provider', 'offline', '--threads', 'two'],
      ['trace'],
      ['frobnicate'],
    ]) {
      const result = await troupe(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout, args.join(' ')).toBe('');
      expect(result.stderr, args.join(' ')).toMatch(/error|troupe/);
    }
  });

  it('names the key variables and --provider offline when no key is set', async () => {
    const result = await troupe(['run', TASK]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('ANTHROPIC_API_KEY');
    expect(result.stderr).toContain('OPENAI_API_KEY');
    expect(result.stderr).toContain('--provider offline');
  });

  /**
   * Starts a run whose `slowRole` waits a minute for each model answer (every
   * other call is answered at once), kills it with SIGKILL at the first event
   * `killAt` accepts, resumes it with --json, and returns both attempts'
   * events and the ids of the sub-agents whose results the first attempt
   * stored. The slow role holds the run at the moment to kill, however far
   * this process's reading of the trace lags behind the run.
   */
  async function killAndResume(
    slowRole: string,
    killAt: (event: AgentEvent) => boolean,
  ): Promise<{
    runDir: string;
    first: AgentEvent[];
    stored: Set<string>;
    resumed: Outcome;
    events: AgentEvent[];
  }> {
    const out = outDir();
    const env = cleanEnv({ TROUPE_OFFLINE_DELAY_MS: `${slowRole}=60000` });
    const child = spawn(
      process.execPath,
      [
        bin,
        'run',
        TASK,
        '--provider',
        'offline',
        '--workspace',
        corpus,
        '--out',
        out,
        '--threads',
        '1',
        '--quiet',
      ],
      { env, cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // A run that ends before the moment to kill stops the wait (and fails the test below).
    const ended = new AbortController();
    const done = exited(child).then(() => ended.abort());
    let runId: string | undefined;
    while (runId === undefined && !ended.signal.aborted) {
      runId = readdirSync(out)[0];
      if (runId === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (runId === undefined) throw new Error(`the run ended before it made its folder: ${stderr}`);
    const runDir = join(out, runId);
    const tracePath = join(runDir, 'trace.jsonl');
    let killed = false;
    for await (const event of followTrace(tracePath, {
      pollIntervalMs: 20,
      signal: ended.signal,
    })) {
      if (killAt(event)) {
        killed = child.kill('SIGKILL');
        break;
      }
    }
    await done;
    expect(killed, `the run ended before the moment to kill it: ${stderr}`).toBe(true);
    const first = readTrace(tracePath).events;
    expect(first.some((event) => event.type === 'run.finished')).toBe(false);
    const resultsDir = join(runDir, 'results');
    const stored = new Set(
      (existsSync(resultsDir) ? readdirSync(resultsDir) : [])
        .filter((name) => name.endsWith('.json'))
        .map(
          (name) =>
            (
              JSON.parse(readFileSync(join(resultsDir, name), 'utf8')) as {
                result: { agentId: string };
              }
            ).result.agentId,
        ),
    );
    const resumed = await troupe([
      'run',
      '--resume',
      runId,
      '--provider',
      'offline',
      '--workspace',
      corpus,
      '--out',
      out,
      '--threads',
      '1',
      '--json',
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const events = parseLines(resumed.stdout);
    expect(events[0]).toMatchObject({ type: 'run.started', task: TASK });
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'completed' });
    expect(existsSync(join(runDir, 'trace.1.jsonl'))).toBe(true);
    return { runDir, first, stored, resumed, events };
  }

  function spawnedIds(events: readonly AgentEvent[]): string[] {
    return events.filter((event) => event.type === 'agent.spawned').map((event) => event.agentId);
  }

  it('re-runs only the reporter when a run killed with SIGKILL after the analyst finished is resumed', async () => {
    // Killed once the analyst has finished (after every researcher), while the reporter waits for its model.
    const { runDir, first, stored, events } = await killAndResume(
      'reporter',
      (event) => event.type === 'agent.finished' && event.agentId === 'analyst-1',
    );
    expect(
      spawnedIds(first)
        .filter((id) => id !== 'coordinator' && id !== 'reporter-1')
        .sort(),
    ).toEqual(['analyst-1', 'researcher-1', 'researcher-2', 'researcher-3', 'researcher-4']);
    expect([...stored].sort()).toEqual([
      'analyst-1',
      'researcher-1',
      'researcher-2',
      'researcher-3',
      'researcher-4',
    ]);
    expect(spawnedIds(events)).toEqual(['coordinator', 'reporter-1']);
    expect(readFileSync(join(runDir, 'report.md'), 'utf8')).toContain('Figures side by side');
  });

  it('re-runs only unfinished agents and keeps every finding when a run killed with SIGKILL before the analyst finished is resumed', async () => {
    // Killed as the first researcher finishes: the analyst, waiting for its model, cannot have finished.
    const { runDir, first, stored, events } = await killAndResume(
      'analyst',
      (event) =>
        event.type === 'agent.finished' &&
        event.role === 'researcher' &&
        event.status === 'completed',
    );
    expect(stored.has('analyst-1')).toBe(false);
    expect([...stored].some((id) => id.startsWith('researcher-'))).toBe(true);
    const unfinished = spawnedIds(first).filter((id) => id !== 'coordinator' && !stored.has(id));
    expect(spawnedIds(events).sort()).toEqual(
      [...new Set(['coordinator', ...unfinished, 'analyst-1', 'reporter-1'])].sort(),
    );
    // The reused researchers published their findings again; the new analyst read every one.
    const senders = new Set(
      events
        .filter((event) => event.type === 'message.sent' && event.channel === 'findings')
        .map((event) => event.agentId),
    );
    for (const id of stored) if (id.startsWith('researcher-')) expect(senders.has(id)).toBe(true);
    const readFrom = new Set(
      events
        .filter((event) => event.type === 'message.received' && event.agentId === 'analyst-1')
        .map((event) => (event.type === 'message.received' ? event.from : '')),
    );
    expect([...readFrom].sort()).toEqual([
      'researcher-1',
      'researcher-2',
      'researcher-3',
      'researcher-4',
    ]);
    const report = readFileSync(join(runDir, 'report.md'), 'utf8');
    expect(report).toContain('Analysis across 4 sources');
    for (const source of readdirSync(corpus)) expect(report).toContain(`(${source})`);
  });
});

describe('troupe interrupted and followed (child process)', () => {
  async function startSlowRun(
    out: string,
    extra: string[] = [],
  ): Promise<{
    child: ChildProcess;
    runId: string;
    stderr: () => string;
    done: Promise<number | null>;
  }> {
    const child = spawn(
      process.execPath,
      [
        bin,
        'run',
        TASK,
        '--provider',
        'offline',
        '--workspace',
        corpus,
        '--out',
        out,
        '--quiet',
        ...extra,
      ],
      {
        env: cleanEnv({ TROUPE_OFFLINE_DELAY_MS: '200' }),
        cwd: root,
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const done = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );
    let runId: string | undefined;
    while (runId === undefined) {
      runId = readdirSync(out)[0];
      if (runId === undefined) await new Promise((resolve) => setImmediate(resolve));
    }
    return { child, runId, stderr: () => stderr, done };
  }

  it('cancels every agent, flushes the trace and exits 130 on Ctrl-C', async () => {
    const out = outDir();
    const run = await startSlowRun(out);
    const tracePath = join(out, run.runId, 'trace.jsonl');
    for await (const event of followTrace(tracePath, { pollIntervalMs: 20 })) {
      if (event.type === 'tool.call' && event.agentId === 'researcher-1') {
        run.child.kill('SIGINT');
        break;
      }
    }
    expect(await run.done).toBe(130);
    expect(run.stderr()).toMatch(/Interrupted: \d+ agents? cancelled/);
    expect(run.stderr()).toContain(`Resume with: troupe run --resume ${run.runId}`);
    const events = readTrace(tracePath).events;
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'cancelled' });
    const spawned = events
      .filter((event) => event.type === 'agent.spawned')
      .map((event) => event.agentId);
    const finished = events
      .filter((event) => event.type === 'agent.finished')
      .map((event) => event.agentId);
    expect(finished.sort()).toEqual(spawned.sort());
  });

  it('follows a run in progress and prints what a replay of the finished trace prints', async () => {
    const out = outDir();
    const run = await startSlowRun(out);
    const followed = await troupe(['trace', run.runId, '--out', out, '--follow']);
    expect(await run.done).toBe(0);
    expect(followed.code, followed.stderr).toBe(0);
    const replay = await troupe(['trace', run.runId, '--out', out]);
    expect(followed.stdout).toBe(replay.stdout);
    expect(followed.stdout).toContain('run finished: completed');
  });
});

describe('troupe live view (pseudo-terminal)', () => {
  const hasScript = existsSync('/usr/bin/script') || existsSync('/bin/script');

  it.skipIf(!hasScript)('draws the agent tree and ends with the summary', async () => {
    const out = outDir();
    const log = join(out, 'typescript.log');
    const command = `stty cols 120 rows 40; ${JSON.stringify(process.execPath)} ${JSON.stringify(bin)} demo --out ${JSON.stringify(out)}`;
    const result = await new Promise<Outcome>((resolve) => {
      execFile(
        'script',
        ['-qfec', command, log],
        { env: cleanEnv({ TERM: 'xterm-256color', TROUPE_OFFLINE_DELAY_MS: '120' }), cwd: root },
        (error, stdout, stderr) => {
          resolve({
            code: error === null ? 0 : typeof error.code === 'number' ? error.code : null,
            stdout,
            stderr,
          });
        },
      );
    });
    expect(result.code, result.stderr).toBe(0);
    const screen = readFileSync(log, 'utf8');
    expect(screen).toContain('\u001b[?25l');
    expect(screen).toContain('\u001b[?25h');
    expect(screen).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
    expect(screen).toContain('├─');
    expect(screen).toContain('└─');
    expect(screen).toContain('── recent ──');
    const plain = stripAnsi(screen);
    const tail = plain.slice(plain.lastIndexOf('Run '));
    expect(tail).toMatch(/^Run \S+ completed in \S+ · 7 agents \(7 completed\)/);
    expect(tail).toMatch(/total\s+7\s+7\s+0\s+0/);
    expect(tail).toContain('report   ');
  });
});
