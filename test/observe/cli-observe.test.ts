import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { readTrace } from '../../src/events/trace.js';
import { argv, fakeIo } from '../cli/io.js';
import {
  deadCollectorUrl,
  type OtlpReceiver,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.js';
import { timelineData } from './timeline-data.js';

const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(): Promise<OtlpReceiver> {
  const started = await startOtlpReceiver();
  receivers.push(started);
  return started;
}

function endpoint(url: string): string {
  return url.replace(/\/v1\/traces$/, '');
}

describe('troupe --otel and trace --html', () => {
  it('exports the demo live with --otel, writes timeline.html, and exports and renders the trace again later', async () => {
    const live = await receiver();
    const out = mkdtempSync(join(tmpdir(), 'troupe-observe-cli-'));
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint(live.url), OTEL_SERVICE_NAME: 'demo-test' };
    const io = fakeIo({ env, cwd: out });

    expect(await runCli(argv('demo', '--fast', '--quiet', '--otel', '--out', out), io)).toBe(0);

    const [runId] = readdirSync(out);
    const runDir = join(out, runId!);
    const { events } = readTrace(join(runDir, 'trace.jsonl'));
    const agents = events.filter((event) => event.type === 'agent.spawned').length;
    expect(io.stdout.plain).toContain(`timeline ${join(runId!, 'timeline.html')}`);
    expect(io.stdout.plain).toContain(`otel     ${live.spans.length} spans to ${live.url}`);
    expect(io.stderr.plain).not.toContain('warning');
    expect(live.spans.filter((span) => span.name.startsWith('invoke_agent '))).toHaveLength(agents);
    expect(live.spans.every((span) => span.serviceName === 'demo-test')).toBe(true);
    const timeline = timelineData(readFileSync(join(runDir, 'timeline.html'), 'utf8'));
    expect(timeline.agents).toHaveLength(agents);

    const later = await receiver();
    const replay = fakeIo({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: later.url }, cwd: out });
    expect(
      await runCli(argv('trace', runId!, '--out', out, '--otel', '--html', 'copy.html'), replay),
    ).toBe(0);
    expect(later.spans).toHaveLength(live.spans.length);
    expect(replay.stdout.plain).toContain(`otel     ${live.spans.length} spans to ${later.url}`);
    expect(timelineData(readFileSync(join(out, 'copy.html'), 'utf8'))).toEqual(timeline);
  });

  it('finishes a run whose collector is down with exit 0 and one warning', async () => {
    const out = mkdtempSync(join(tmpdir(), 'troupe-observe-dead-'));
    const url = await deadCollectorUrl();
    const io = fakeIo({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url } });

    expect(await runCli(argv('demo', '--fast', '--quiet', '--otel', '--out', out), io)).toBe(0);

    const warnings = io.stderr.plain.split('\n').filter((line) => line.startsWith('warning:'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(url);
    expect(io.stdout.plain).toContain('otel     0 spans');
    const [runId] = readdirSync(out);
    expect(existsSync(join(out, runId!, 'timeline.html'))).toBe(true);
  });

  it('writes timeline.html beside the trace for trace --html with no file', async () => {
    const out = mkdtempSync(join(tmpdir(), 'troupe-observe-html-'));
    expect(await runCli(argv('demo', '--fast', '--quiet', '--out', out), fakeIo())).toBe(0);
    const [runId] = readdirSync(out);
    const io = fakeIo({ cwd: out });

    expect(await runCli(argv('trace', join(out, runId!), '--html'), io)).toBe(0);

    expect(io.stdout.plain.trim()).toBe(`timeline ${join(out, runId!, 'timeline.html')}`);
  });
});
