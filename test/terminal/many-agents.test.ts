import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockOpenAIServer } from '../helpers/mock-openai-server.js';
import { hasPython, KEYS } from '../helpers/pty.js';
import type { VirtualScreen } from '../helpers/screen.js';
import { runFanOut, startFanOutServer } from './fan-out.js';

const RESEARCHERS = 199;
/** Researchers 1–60 answer at once, 61–63 fail, the rest work until they are cancelled. */
const QUICK = 60;
const FAILING = [61, 62, 63];
const FOREVER_MS = 600_000;

function topicOf(task: string): number {
  return Number(/topic (\d+)/.exec(task)?.[1] ?? 0);
}

function researcherLine(screen: VirtualScreen): string {
  return screen.lines().find((line) => /^researcher +\S* +\d+\/199 done/.test(line)) ?? '';
}

// Issue 13, problem 5: 200 agents at a glance (a progress line per role with
// an ETA, working and failed agents before the rest, the only reporter never
// folded away), and an interactive view: a selection that reaches every
// agent, a filter, an agent's transcript, cancelling one agent, stopping the run.
describe.runIf(hasPython())('the live view of 200 agents (pty)', () => {
  let server: MockOpenAIServer;
  beforeAll(async () => {
    server = await startFanOutServer({
      tasks: [
        ...Array.from({ length: RESEARCHERS }, (_, index) => ({
          role: 'researcher',
          task: `look into topic ${index + 1}`,
        })),
        { role: 'reporter', task: 'write the report on every topic' },
      ],
      answer: 'All done.',
      reply: (task) => `Findings on topic ${topicOf(task)}: nothing unusual.`,
      fail: (task) =>
        FAILING.includes(topicOf(task))
          ? `The deployment refuses topic ${topicOf(task)}. Rerun with --allow read,network.`
          : undefined,
      delayFor: (task) =>
        task.includes('report') || topicOf(task) > QUICK + FAILING.length ? FOREVER_MS : 0,
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('shows per-role progress and the rare role, and lets a person browse, open, filter, cancel and stop', async () => {
    const { session, out } = runFanOut(server, { cols: 100, rows: 30 });
    // At a glance: one line per role, with what is done, failed and an ETA.
    await session.waitFor((screen) => /63\/199 done · 3 failed/.test(researcherLine(screen)));
    await session.waitFor((screen) => /ETA \d/.test(researcherLine(screen)));
    let screen = session.screen.text();
    expect(screen).toMatch(/^reporter +\S* +0\/1 done/m);
    // The only reporter has a row of its own among 199 researchers; the rest are counted.
    expect(screen).toMatch(/[├└]─ \S reporter-1 /);
    expect(screen).toMatch(/… \d+ more not shown \(\d+ running\) · ↓ browses them all/);
    expect(screen).toContain('↑↓ select · ⏎ open · f filter: all agents · c cancel · q stop');

    // ↓ starts a selection; End reaches the last agent of the list, however many there are.
    await session.press(KEYS.down);
    await session.waitFor((screen) => screen.lines().some((line) => line.startsWith('› ')));
    await session.press('\u001b[F');
    await session.waitFor((screen) => /^ +↑ \d+ more$/m.test(screen.text()));
    const selected = session.screen.lines().find((line) => line.startsWith('› ')) ?? '';
    expect(selected).toMatch(/researcher-\d+/);

    // f narrows the list: to the running agents, then the failed ones.
    await session.press('f', 'f');
    await session.waitFor('f filter: failed');
    const listed = session.screen.lines().filter((line) => /^[› ] \S researcher-\d+ /.test(line));
    expect(listed.map((line) => /researcher-\d+/.exec(line)?.[0])).toEqual(
      FAILING.map((id) => `researcher-${id}`),
    );
    for (const line of listed) expect(line).toMatch(/^[› ] ✖ /);

    // Back to every agent; walk to a researcher that still works, deep in the list.
    await session.press(KEYS.escape);
    await session.waitFor((screen) => !screen.text().includes('f filter: failed'));
    await session.press('f');
    await session.waitFor('f filter: running');
    await session.press(...Array.from({ length: 40 }, () => KEYS.down));

    // Enter opens its transcript: what it was asked, that it is waiting on its model.
    await session.press(KEYS.enter);
    // A frame can reach the pty in several reads: wait for its header and its footer both.
    await session.waitFor(
      (screen) =>
        screen.text().includes('── transcript ·') &&
        screen.text().includes('esc back · ↑↓ PgUp PgDn scroll'),
    );
    screen = session.screen.text();
    const chosen = /^\S (researcher-\d+) · researcher · thinking/.exec(screen)?.[1] ?? '';
    // Far past the rows the overview had room for.
    expect(Number(chosen.split('-')[1])).toBeGreaterThan(90);
    expect(screen).toMatch(/▸ started as researcher on openai\/gpt-test/);
    expect(screen).toContain(`task: look into topic ${chosen.split('-')[1]}`);
    expect(screen).toMatch(/→ asked the model: call 1, 2 messages, \d+ tools/);
    expect(screen).toContain('esc back · ↑↓ PgUp PgDn scroll');

    // c asks first; y cancels it (and only it).
    await session.press('c');
    await session.waitFor(`Cancel ${chosen}? y/n`);
    await session.press('y');
    await session.waitFor(/⊘ \S*\s*cancelled|✖ cancelled|cancelled: /);
    await session.press(KEYS.escape);
    await session.waitFor((screen) => /1 cancelled/.test(researcherLine(screen)));

    // q stops the run as Ctrl-C does: everything cancelled, the trace flushed, exit 130.
    await session.press('q');
    expect(await session.exited).toBe(130);
    const transcript = session.screen.transcript();
    expect(transcript).toMatch(/Run \S+ \w+ in /);
    expect(transcript).toContain('Resume with: troupe run --resume');
    // The transcript's agent was cancelled by the key, before the run was stopped.
    const trace = readFileSync(
      join(
        out,
        /Resume with: troupe run --resume (\S+)/.exec(transcript)?.[1] ?? '',
        'trace.jsonl',
      ),
      'utf8',
    );
    const finished = trace
      .split('\n')
      .filter((line) => line.includes('"agent.finished"') && line.includes(`"${chosen}"`));
    expect(finished).toHaveLength(1);
    expect(finished[0]).toContain('cancelled from the live view');
  }, 120_000);
});
