import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../../src/render/terminal.js';
import type { MockOpenAIServer } from '../helpers/mock-openai-server.js';
import { hasPython } from '../helpers/pty.js';
import type { VirtualScreen } from '../helpers/screen.js';
import { runFanOut, startFanOutServer } from './fan-out.js';

const TOPICS = ['A', 'B', 'C', 'D', 'E', 'F'];

/** The agent rows of the live frame on screen (one per sub-agent). */
function agentRows(screen: VirtualScreen): string[] {
  return screen.lines().filter((line) => /researcher-\d/.test(line) && /[├└]─/.test(line));
}

// Issue 13, problems 3 and 4: the live view fits any window (numbers never
// fall off the edge, a resize redraws cleanly) and failure reasons are shown
// in full, with the fix they carry.
describe.runIf(hasPython())('the live view in a window of any size (pty)', () => {
  let server: MockOpenAIServer;
  beforeAll(async () => {
    server = await startFanOutServer({
      tasks: [
        ...TOPICS.map((topic) => ({ role: 'researcher', task: `look into topic ${topic}` })),
        { role: 'reporter', task: 'write the report' },
      ],
      answer: 'All done.',
      delayMs: 2500,
      // After the researchers are on screen: at 60x15 the failure's lines leave room for fewer
      // than three agent rows, so a reporter that failed at once could beat the first frame.
      failAfterMs: 1000,
      fail: (task) =>
        task.includes('write the report')
          ? `The deployment refuses this request: ${'the account has no access to the model in this region. '.repeat(3)}Rerun with --allow read,write,network, or remove those tools from the role.`
          : undefined,
    });
  });
  afterAll(async () => {
    await server.close();
  });

  for (const [cols, rows] of [
    [120, 40],
    [80, 24],
    [60, 15],
  ] as const) {
    it(`shows status, id, tokens and time for every visible agent at ${cols}x${rows}`, async () => {
      const { session } = runFanOut(server, { cols, rows, args: ['--allow', 'read,network'] });
      await session.waitFor((screen) => agentRows(screen).length >= 3);
      for (const line of session.screen.lines()) expect(displayWidth(line)).toBeLessThan(cols);
      for (const row of agentRows(session.screen)) {
        expect(row).toMatch(/[├└]─ \S researcher-\d/);
        expect(row).toMatch(/\d+(\.\d)?k? tok/);
        expect(row).toMatch(/\d+(\.\d)?(ms|s)$/);
      }
      expect(session.screen.lines()[0]).toMatch(/agents: \d+ running/);
      await session.exited;
    }, 120_000);
  }

  it('redraws cleanly when the window shrinks from 120x40 to 60x15 mid-run', async () => {
    const { session } = runFanOut(server, {
      cols: 120,
      rows: 40,
      args: ['--allow', 'read,network'],
    });
    await session.waitFor((screen) => agentRows(screen).length >= 6);
    session.resize(60, 15);
    // The next frame is laid out for 60 columns (the header drops the model and run id first).
    await session.waitFor(
      (screen) =>
        / agents: \d+ running/.test(screen.lines()[0] ?? '') &&
        !(screen.lines()[0] ?? '').includes('openai/gpt-test') &&
        agentRows(screen).length > 0,
    );
    await session.exited;
    // The last frame, then the summary: drawn for 60 columns, with no stale rows of
    // the wider frame mixed in (what scrolled off above the window stays in the scrollback).
    const transcript = session.screen.transcript().split('\n');
    const header = transcript.findLastIndex((line) => / agents: \d+ running/.test(line));
    const last = transcript.slice(header);
    expect(last.filter((line) => line.includes('── recent ──'))).toHaveLength(1);
    const summary = last.findIndex((line) => /^Run \S+ (completed|partial)/.test(line));
    expect(summary).toBeGreaterThan(0);
    for (const line of last.slice(0, summary)) expect(displayWidth(line)).toBeLessThan(60);
  }, 120_000);

  it('names every failure with its whole reason, the fix included, in the view and the summary', async () => {
    const { session } = runFanOut(server, {
      cols: 80,
      rows: 24,
      args: ['--allow', 'read,network'],
    });
    await session.waitFor('── failures (1) ──');
    expect(session.screen.text()).toContain('✖ reporter-1');
    await session.exited;
    const transcript = session.screen.transcript();
    const summary = transcript.slice(transcript.indexOf('1 agent did not complete:'));
    expect(summary).toContain('reporter-1 failed:');
    // The whole reason, wrapped under the agent: its advice is on screen.
    expect(summary.replace(/\s+/g, ' ')).toMatch(
      /Rerun with --allow read,write,network, or remove those tools from the role\./,
    );
    // The summary's lines are wrapped to the window (the file paths after it may be longer).
    const reasons = summary.slice(0, summary.indexOf('trace    '));
    for (const line of reasons.split('\n')) expect(displayWidth(line)).toBeLessThan(80);
  }, 120_000);
});
