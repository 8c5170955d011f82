import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS, createProgram, requestedCommand, runCli } from '../../src/cli/program.js';
import { AgentEventSchema } from '../../src/events/schema.js';
import { freePort } from '../helpers/nats-server.js';
import { sampleRun } from './events.js';
import { argv, fakeIo } from './io.js';

const corpus = new URL('../../examples/corpus/', import.meta.url).pathname;

function traceFixture(): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'troupe-cli-'));
  const path = join(dir, 'runs', 'run-1', 'trace.jsonl');
  mkdirSync(join(dir, 'runs', 'run-1'), { recursive: true });
  writeFileSync(
    path,
    `${sampleRun()
      .map((event) => JSON.stringify(event))
      .join('\n')}\n{"torn`,
  );
  return { dir, path };
}

describe('createProgram', () => {
  it('lists the commands in its help', async () => {
    const names = (await createProgram(fakeIo())).commands.map((command) => command.name());
    expect(names).toEqual(['run', 'chat', 'trace', 'runs', 'demo', 'worker', 'nodes', 'mcp']);
  });

  it('lists every command in COMMANDS as the command itself describes it', async () => {
    const program = await createProgram(fakeIo());
    const help = program.createHelp();
    const listed = program.commands.map((command) => [
      command.name(),
      help.subcommandTerm(command),
      help.subcommandDescription(command),
    ]);
    expect(listed).toEqual(
      Object.entries(COMMANDS).map(([name, command]) => [name, command.term, command.description]),
    );
  });

  it('prints the same top-level help without loading any command', async () => {
    const io = fakeIo();
    expect(await runCli(argv('--help'), io)).toBe(0);
    const loaded = fakeIo();
    (await createProgram(loaded)).outputHelp();
    expect(io.stdout.text).toBe(loaded.stdout.text);
    expect(io.stdout.text).toContain('Examples:\n  $ troupe demo');
    expect(io.stdout.text).toContain('130  interrupted');
  });

  it('loads only the command argv names, also after help', async () => {
    expect(requestedCommand(argv('run', 'x', '--provider', 'offline'))).toBe('run');
    expect(requestedCommand(argv('help', 'trace'))).toBe('trace');
    expect(requestedCommand(argv('--help'))).toBeUndefined();
    expect(requestedCommand(argv('bogus'))).toBeUndefined();
    const names = (await createProgram(fakeIo(), argv('demo', '--fast'))).commands.map((command) =>
      command.name(),
    );
    expect(names).toEqual(['demo']);
  });

  it('suggests a command for a misspelt one and exits 2', async () => {
    const io = fakeIo();
    expect(await runCli(argv('demoo'), io)).toBe(2);
    expect(io.stderr.text).toContain("unknown command 'demoo'");
    expect(io.stderr.text).toContain('demo');
  });
});

describe('runCli', () => {
  it('prints the version and exits 0 when given --version', async () => {
    const io = fakeIo();
    expect(await runCli(argv('--version'), io)).toBe(0);
    expect(io.stdout.text).toMatch(/^\d+\.\d+\.\d+\n$/);
  });

  it("exits 2 with commander's message when an option is unknown", async () => {
    const io = fakeIo();
    expect(await runCli(argv('run', 'x', '--frobnicate'), io)).toBe(2);
    expect(io.stderr.text).toContain("unknown option '--frobnicate'");
  });

  it('exits 2 and says what is missing when run has no task', async () => {
    const io = fakeIo();
    expect(await runCli(argv('run', '--provider', 'offline'), io)).toBe(2);
    expect(io.stderr.text).toContain('troupe run needs a task');
  });

  it('names both key variables and --provider offline when no key is set', async () => {
    const io = fakeIo({ env: {} });
    expect(await runCli(argv('run', 'Summarize the notes'), io)).toBe(2);
    expect(io.stderr.text).toContain('ANTHROPIC_API_KEY');
    expect(io.stderr.text).toContain('OPENAI_API_KEY');
    expect(io.stderr.text).toContain('--provider offline');
  });

  it('exits 2 when a flag value is invalid', async () => {
    for (const args of [
      ['run', 'x', '--provider', 'bogus'],
      ['run', 'x', '--provider', 'offline', '--allow', 'rede'],
      ['run', 'x', '--provider', 'offline', '--budget', 'lots'],
      ['run', 'x', '--provider', 'offline', '--threads', '0'],
      ['run', 'x', '--provider', 'offline', '--timeout', 'soon'],
      ['run', 'x', '--provider', 'offline', '--workspace', '/no/such/folder'],
      ['run', 'x', '--provider', 'anthropic'],
    ]) {
      const io = fakeIo();
      expect(await runCli(argv(...args), io), args.join(' ')).toBe(2);
      expect(io.stderr.text.length, args.join(' ')).toBeGreaterThan(10);
    }
  });

  it('suggests the closest tier when --allow has a typo', async () => {
    const io = fakeIo();
    await runCli(argv('run', 'x', '--provider', 'offline', '--allow', 'rede'), io);
    expect(io.stderr.text).toContain('did you mean "read"');
  });

  it('exits 2 and says what to pass when worker has no --nats', async () => {
    const io = fakeIo();
    expect(await runCli(argv('worker'), io)).toBe(2);
    expect(io.stderr.text).toContain('troupe worker needs --nats <url>');
  });

  it('exits 2 and says the unit when worker --dead-after is too short to hear coordinators', async () => {
    const io = fakeIo();
    expect(
      await runCli(argv('worker', '--nats', 'nats://127.0.0.1:1', '--dead-after', '3'), io),
    ).toBe(2);
    expect(io.stderr.text).toContain('in milliseconds and must be at least 2000');
    expect(io.stderr.text).toContain('for 3 seconds, pass 3000');
  });

  it('exits 2 and says to start a server when no NATS server answers', async () => {
    const port = await freePort();
    const io = fakeIo();
    expect(await runCli(argv('nodes', '--nats', `nats://127.0.0.1:${port}`), io)).toBe(2);
    expect(io.stderr.text).toContain(`Cannot connect to NATS at nats://127.0.0.1:${port}`);
    expect(io.stderr.text).toContain('nats-server -js');
  });

  it('exits 2 and names the paths it tried when a trace is missing', async () => {
    const io = fakeIo();
    expect(await runCli(argv('trace', 'no-such-run', '--out', '/tmp/none'), io)).toBe(2);
    expect(io.stderr.text).toContain('No trace found for "no-such-run"');
  });
});

describe('troupe trace', () => {
  it('replays a trace by run id in line mode and notes the torn last line', async () => {
    const { dir } = traceFixture();
    const io = fakeIo({ cwd: dir });
    expect(await runCli(argv('trace', 'run-1', '--out', 'runs'), io)).toBe(0);
    expect(io.stdout.text).toContain('researcher-1   call read_file {"path":"a.md"}');
    expect(io.stdout.text).toContain('Run run-1 completed');
    expect(io.stderr.text).toContain('skipped 1 unreadable line');
  });

  it('prints schema-valid NDJSON filtered by agent and type when given --json --agent --type', async () => {
    const { path } = traceFixture();
    const io = fakeIo();
    expect(
      await runCli(
        argv('trace', path, '--json', '--agent', 'researcher-1,researcher-2', '--type', 'tool.*'),
        io,
      ),
    ).toBe(0);
    const events = io.stdout.text
      .trimEnd()
      .split('\n')
      .map((line) => AgentEventSchema.parse(JSON.parse(line)));
    expect(events.map((event) => `${event.agentId} ${event.type}`)).toEqual([
      'researcher-1 tool.call',
      'researcher-2 tool.result',
    ]);
  });

  it('exits 2 when --type names no event type', async () => {
    const { path } = traceFixture();
    const io = fakeIo();
    expect(await runCli(argv('trace', path, '--type', 'tool.called'), io)).toBe(2);
    expect(io.stderr.text).toContain('unknown event type "tool.called"');
  });
});

describe('troupe chat', () => {
  it('prints the provider and tools, the layered steps and the final answer, then leaves on exit', async () => {
    const io = fakeIo({ stdinLines: ['What is here?', 'exit', 'never read'] });
    const code = await runCli(argv('chat', '--provider', 'offline', '--workspace', corpus), io);
    expect(code).toBe(0);
    const lines = io.stdout.text.split('\n');
    expect(lines[0]).toContain('troupe chat · offline (heuristic)');
    expect(lines[1]).toBe(
      'tools: read_file, list_dir, search_files, fetch_url · type exit or quit to leave',
    );
    expect(lines).toContain('  🤔 list_dir({"path":"."})');
    expect(lines.some((line) => line.startsWith('  ✅ list_dir → '))).toBe(true);
    expect(
      lines.some((line) => line.startsWith('(offline heuristic model) I am not a language model')),
    ).toBe(true);
  });

  it('keeps history across turns and shows a failed tool with its whole message', async () => {
    const io = fakeIo({
      stdinLines: ['summarize missing-file.md', 'summarize grid-reliability-report.md'],
    });
    const code = await runCli(argv('chat', '--provider', 'offline', '--workspace', corpus), io);
    expect(code).toBe(0);
    expect(io.stdout.text).toMatch(/ {2}❌ read_file failed: .*missing-file\.md/);
    expect(io.stdout.text).toContain('**Keeping the Lights On: Storage and Grid Reliability**');
  });

  it('leaves cleanly at end of input', async () => {
    const io = fakeIo({ stdinLines: [] });
    expect(await runCli(argv('chat', '--provider', 'offline', '--workspace', corpus), io)).toBe(0);
  });
});

describe('troupe run --roles', () => {
  it('exits 2 when the roles module is missing, broken or exports no role', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'troupe-roles-'));
    writeFileSync(join(dir, 'none.mjs'), 'export const answer = 42;\n');
    writeFileSync(join(dir, 'broken.mjs'), 'export const = ;\n');
    for (const [file, message] of [
      ['missing.mjs', 'no such file'],
      ['broken.mjs', 'the module failed to load'],
      ['none.mjs', 'exports no roles'],
    ] as const) {
      const io = fakeIo({ cwd: dir });
      const code = await runCli(argv('run', 'x', '--provider', 'offline', '--roles', file), io);
      expect(code, file).toBe(2);
      expect(io.stderr.text, file).toContain(message);
    }
  });
});
