import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/job/pipeline.js';
import { findingsChannel } from '../../src/roles/builtin.js';
import { defineRole, userTool } from '../../src/roles/role.js';
import { closeRuntimes, expectWellFormed, makeRuntime, ofType } from '../integration/helpers.js';

const dirs: string[] = [];
afterEach(async () => {
  await closeRuntimes();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// A researcher that can be held at a gate the test opens.
const scout = defineRole({
  name: 'scout',
  description: 's',
  system: 's',
  tools: [userTool('wait_for_file')],
  publishes: [findingsChannel],
});

const finding = (source: string) => ({
  source,
  title: `About ${source}`,
  summary: `What ${source} says.`,
  keyPoints: ['a point'],
  figures: ['42 GW in 2023'],
});

describe('runPipeline', () => {
  it('starts the analysis before the last researcher finishes, then hands it to the reporter', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'troupe-pipeline-'));
    dirs.push(workspace);
    const { runtime, events } = makeRuntime({
      roles: [scout],
      workspace,
      grants: ['read', 'write'],
      model: {
        provider: 'scripted',
        script: {
          steps: [
            {
              match: { agent: 'scout-1', call: 1 },
              toolCalls: [{ name: 'publish_findings', arguments: finding('solar.md') }],
            },
            { match: { agent: 'scout-1' }, content: 'scout-1 done' },
            {
              match: { agent: 'scout-2', call: 1 },
              toolCalls: [{ name: 'wait_for_file', arguments: { path: 'gate' } }],
            },
            {
              match: { agent: 'scout-2', call: 2 },
              toolCalls: [{ name: 'publish_findings', arguments: finding('wind.md') }],
            },
            { match: { agent: 'scout-2' }, content: 'scout-2 done' },
            {
              match: { role: 'analyst', lastUserContains: 'closed' },
              content: 'analysis of solar.md and wind.md',
            },
            { match: { role: 'analyst' }, content: 'interim note', repeat: true },
            {
              match: { role: 'reporter', conversationContains: 'analysis of solar.md and wind.md' },
              content: 'report written',
            },
          ],
        },
      },
    });
    // The gate holding the second researcher opens only once the analyst has read a finding.
    runtime.bus.on('message.received', (event) => {
      if (event.role === 'analyst') writeFileSync(join(workspace, 'gate'), 'open');
    });

    const result = await runPipeline({
      runtime,
      topics: ['solar.md', 'wind.md'],
      goal: 'Compare solar and wind.',
      roles: { researcher: 'scout' },
    });

    expect(result.status).toBe('completed');
    expect(result.research.map((entry) => entry.final)).toEqual(['scout-1 done', 'scout-2 done']);
    expect(result.analysis.final).toBe('analysis of solar.md and wind.md');
    expect(result.report?.final).toBe('report written');
    const firstRead = ofType(events, 'message.received').find((event) => event.role === 'analyst');
    const lastResearcher = ofType(events, 'agent.finished').find(
      (event) => event.agentId === 'scout-2',
    );
    expect(firstRead?.seq).toBeLessThan(lastResearcher?.seq ?? -1);
    expect(
      ofType(events, 'message.received').filter((event) => event.role === 'analyst'),
    ).toHaveLength(2);
    expectWellFormed(events);
  });
});
