import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../../src/render/terminal.js';
import type { MockOpenAIServer } from '../helpers/mock-openai-server.js';
import { hasPython } from '../helpers/pty.js';
import { runFanOut, startFanOutServer } from './fan-out.js';

const ANSWER = [
  '# Three topics compared',
  '',
  `All three sources agree on the main point, and this paragraph is long on purpose so that it has to wrap several times on a narrow terminal: ${'the figures line up with each other across the reports '.repeat(5).trim()}.`,
  '',
  '## Details',
  '',
  `- Topic A: ${'latency fell by a third after the change, '.repeat(4).trim()}`,
  `- Topic B: ${'storage cost rose slightly but stayed within budget, '.repeat(3).trim()}`,
  '- Topic C: no change.',
  '',
  'The last sentence of the answer ends here.',
].join('\n');

// Issue 13, problem 2: the run's answer is shown in full after the live view,
// wrapped to the window, and saved as answer.md beside report.md.
describe.runIf(hasPython())('the final answer (pty)', () => {
  let server: MockOpenAIServer;
  beforeAll(async () => {
    server = await startFanOutServer({
      tasks: [
        { role: 'researcher', task: 'topic A' },
        { role: 'researcher', task: 'topic B' },
        { role: 'researcher', task: 'topic C' },
      ],
      answer: ANSWER,
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('prints every word of the answer after the summary, wrapped to 80 columns, and saves answer.md', async () => {
    const { session, out } = runFanOut(server, { cols: 80, rows: 24 });
    const code = await session.exited;
    const screen = session.screen.transcript();
    expect(code, screen).toBe(0);
    const lines = screen.split('\n');
    const summary = lines.findIndex((line) => /^Run \S+ completed/.test(line));
    const rule = lines.indexOf('── answer ──');
    expect(summary).toBeGreaterThan(-1);
    expect(rule).toBeGreaterThan(summary);
    const footer = lines.findIndex((line) => line.startsWith('trace    '));
    const shown = lines.slice(rule + 1, footer);
    // Every word, in order, none cut; no line wider than the window.
    expect(shown.join(' ').replace(/\s+/g, ' ').trim()).toBe(ANSWER.replace(/\s+/g, ' '));
    expect(Math.max(...shown.map(displayWidth))).toBeLessThanOrEqual(79);
    // A wrapped list item continues under its text (a hanging indent).
    const item = shown.findIndex((line) => line.startsWith('- Topic A:'));
    expect(shown[item + 1]).toMatch(/^ {2}\S/);
    // Saved in full beside the trace, and the footer names it.
    const runId = readdirSync(out)[0] ?? '';
    expect(readFileSync(join(out, runId, 'answer.md'), 'utf8')).toBe(`${ANSWER}\n`);
    expect(screen).toMatch(/^answer {3}\S+answer\.md$/m);
    expect(server.violations).toEqual([]);
  }, 120_000);
});
