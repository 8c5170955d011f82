import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { writeTimelineHtml } from '../../src/observe/html-timeline.js';
import { argv, fakeIo } from '../cli/io.js';
import { closeRuntimes } from '../integration/helpers.js';
import { fanOutRun } from './scripted-runs.js';

/**
 * Clicks an agent's bar where a person would: its middle. A row draws its
 * model, tool and wait segments over the bar (siblings of it in the row,
 * whose click handler takes the click from any of them), so the click goes
 * to the row at that point; clicking the bar element itself fails whenever
 * a segment covers its middle.
 */
async function clickBar(page: Page, agentId: string): Promise<void> {
  const row = page.locator(`.row[data-agent="${agentId}"]`);
  const [rowBox, barBox] = await Promise.all([
    row.boundingBox(),
    row.locator('.bar').boundingBox(),
  ]);
  if (rowBox === null || barBox === null) throw new Error(`no bar shown for ${agentId}`);
  await row.click({
    position: {
      x: barBox.x - rowBox.x + barBox.width / 2,
      y: barBox.y - rowBox.y + barBox.height / 2,
    },
  });
}

// Debian's chromium, driven by playwright-core (no browser download); .ci/run installs it.
const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = new URL('../../test-output/timeline/', import.meta.url).pathname;

let browser: Browser | undefined;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  // Starting Chromium on a busy 2-core machine can take a while.
}, 120_000);
afterAll(async () => {
  await browser?.close();
});
afterEach(closeRuntimes);

/** Opens a timeline file; collects console errors, page errors and every request it makes. */
async function open(path: string) {
  const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
  const errors: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('request', (request) => requests.push(request.url()));
  await page.goto(`file://${path}`);
  await page.waitForSelector('body[data-ready="true"]');
  return { page, errors, requests };
}

describe.skipIf(!existsSync(CHROMIUM))(
  'the HTML timeline in headless Chromium',
  { timeout: 120_000 },
  () => {
    it('opens the demo timeline: rows, bars, arrows, and a transcript on click', async () => {
      const out = mkdtempSync(join(tmpdir(), 'troupe-timeline-demo-'));
      const io = fakeIo();
      expect(await runCli(argv('demo', '--fast', '--quiet', '--out', out), io)).toBe(0);
      const [runId] = readdirSync(out);
      const path = join(out, runId!, 'timeline.html');
      expect(io.stdout.text).toContain('timeline.html');

      const { page, errors, requests } = await open(path);

      const rows = page.locator('.row');
      expect(await rows.count()).toBe(7);
      expect(await rows.first().getAttribute('data-agent')).toBe('coordinator');
      expect(await page.locator('.row .bar').count()).toBe(7);
      expect(await page.locator('.seg-model').count()).toBeGreaterThanOrEqual(7);
      expect(await page.locator('.seg-tool').count()).toBeGreaterThan(0);
      expect(await page.locator('.seg-wait').count()).toBeGreaterThan(0);
      expect(await page.locator('path.arrow').count()).toBe(4);
      // The analyst waited for findings: its wait segment, stretched over its whole bar (a long
      // wait, as CI's load once made it), must not keep a click on the bar from selecting it.
      await page.locator('.row[data-agent="analyst-1"]').evaluate((row) => {
        type Styled = { style: { left: string; width: string } } | null;
        const bar = row.querySelector('.bar') as Styled;
        const wait = row.querySelector('.seg-wait') as Styled;
        if (bar === null || wait === null) throw new Error('the analyst has no bar or no wait');
        wait.style.left = bar.style.left;
        wait.style.width = bar.style.width;
      });
      await clickBar(page, 'analyst-1');
      expect(await page.getAttribute('#panel', 'data-agent')).toBe('analyst-1');
      expect(await page.locator('#panel .entry.k-received').count()).toBe(4);
      expect(await page.locator('.row.selected').getAttribute('data-agent')).toBe('analyst-1');
      await page.screenshot({ path: join(SCREENSHOTS, 'demo.png'), fullPage: true });
      expect(errors).toEqual([]);
      expect(requests).toEqual([`file://${path}`]);
    });

    it('opens the timeline of a 1,000-agent scripted run with virtualised rows', async () => {
      const { events } = await fanOutRun(1_000);
      const path = writeTimelineHtml(join(SCREENSHOTS, 'fan-out-1000.html'), events);

      const { page, errors, requests } = await open(path);

      const rendered = await page.locator('.row').count();
      expect(rendered).toBeGreaterThan(20);
      expect(rendered).toBeLessThan(120);
      expect(await page.locator('.row').first().getAttribute('data-agent')).toBe('coordinator');
      await page.screenshot({ path: join(SCREENSHOTS, 'fan-out-1000-top.png') });
      await page.locator('#scroller').evaluate((node) => {
        node.scrollTop = node.scrollHeight;
      });
      await page.waitForSelector('.row[data-agent="worker-1000"]');
      await clickBar(page, 'worker-1000');
      expect(await page.getAttribute('#panel', 'data-agent')).toBe('worker-1000');
      expect(await page.locator('#panel .entry').count()).toBeGreaterThan(0);
      // A failed worker, picked from the table of agents that did not complete.
      await page.locator('tr.pick', { hasText: 'worker-50' }).first().click();
      expect(await page.getAttribute('#panel', 'data-agent')).toBe('worker-50');
      expect(await page.locator('#panel .err').textContent()).toContain('broke down');
      await page.waitForSelector('.row.selected[data-agent="worker-50"][data-status="failed"]');
      await page.screenshot({ path: join(SCREENSHOTS, 'fan-out-1000-failed.png') });
      // Collapsing the coordinator hides its 1,000 children.
      await page.locator('#scroller').evaluate((node) => {
        node.scrollTop = 0;
      });
      await page.locator('.row[data-agent="coordinator"] .toggle').click();
      expect(await page.locator('.row').count()).toBe(1);
      expect(errors).toEqual([]);
      expect(requests).toEqual([`file://${path}`]);
    });
  },
);
