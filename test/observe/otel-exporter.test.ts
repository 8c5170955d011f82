import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/events/schema.js';
import { exportEventsToOtel } from '../../src/observe/otel-exporter.js';
import {
  deadCollectorUrl,
  type OtlpReceiver,
  type ReceivedSpan,
  startOtlpReceiver,
} from '../helpers/otlp-receiver.js';
import { closeRuntimes, ofType } from '../integration/helpers.js';
import { readerRun, SECRET } from './scripted-runs.js';

const receivers: OtlpReceiver[] = [];
afterEach(async () => {
  await closeRuntimes();
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

function byName(spans: readonly ReceivedSpan[], name: string): ReceivedSpan[] {
  return spans.filter((span) => span.name === name);
}

// Span shape without ids: name, parent's name, times, attributes.
function shape(spans: readonly ReceivedSpan[]) {
  const names = new Map(spans.map((span) => [span.spanId, span.name]));
  return spans
    .map((span) => ({
      name: span.name,
      parent: span.parentSpanId === undefined ? undefined : names.get(span.parentSpanId),
      startMs: span.startMs,
      endMs: span.endMs,
      attributes: span.attributes,
    }))
    .sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name));
}

describe('OpenTelemetry export', () => {
  it('exports a run as GenAI spans that mirror the agent tree, to a real OTLP/HTTP receiver', async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const warnings: string[] = [];
    const { job, events, report } = await readerRun({
      url: receiver.url,
      headers: { 'x-team': 'observability' },
      serviceName: 'troupe-test',
      onWarning: (message) => warnings.push(message),
    });

    // One reader broke: an answer, but not every sub-agent completed.
    expect(job.status).toBe('partial');
    expect(warnings).toEqual([]);
    const spans = receiver.spans;
    expect(report?.exportedSpans).toBe(spans.length);
    expect(report?.failedSpans).toBe(0);
    expect(receiver.requests[0]?.contentType).toBe('application/json');
    expect(receiver.requests[0]?.headers['x-team']).toBe('observability');
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(1);
    expect(spans.every((span) => span.serviceName === 'troupe-test')).toBe(true);

    // The agent tree: the coordinator is the root; each reader is its child.
    const [coordinator] = byName(spans, 'invoke_agent coordinator');
    const readers = byName(spans, 'invoke_agent reader');
    expect(coordinator?.parentSpanId).toBeUndefined();
    expect(readers).toHaveLength(3);
    for (const span of readers) expect(span.parentSpanId).toBe(coordinator?.spanId);
    const agentSpans = [coordinator!, ...readers];
    const spanOfAgent = new Map(
      agentSpans.map((span) => [span.attributes['gen_ai.agent.id'] as string, span]),
    );
    expect([...spanOfAgent.keys()].sort()).toEqual(
      ofType(events, 'agent.spawned')
        .map((event) => event.agentId)
        .sort(),
    );
    expect(coordinator?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'coordinator',
      'gen_ai.provider.name': 'scripted',
      'troupe.run_id': job.runId,
      'troupe.agent.status': 'completed',
      'gen_ai.usage.input_tokens': 700,
      'gen_ai.usage.output_tokens': 70,
    });

    // One chat span per model call, under its agent, with that call's tokens.
    const chats = spans.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    const responses = ofType(events, 'model.response');
    // The broken reader's call has no response: its chat span ends with the agent, as an open call.
    expect(chats).toHaveLength(ofType(events, 'model.request').length);
    expect(responses).toHaveLength(2 + 2 * 2);
    for (const response of responses) {
      const agentSpan = spanOfAgent.get(response.agentId)!;
      const chat = chats.find(
        (span) =>
          span.parentSpanId === agentSpan.spanId &&
          span.endMs === response.ts &&
          span.attributes['gen_ai.usage.input_tokens'] === response.usage.inputTokens,
      );
      expect(chat, `chat span of ${response.agentId} at ${response.ts}`).toBeDefined();
      expect(chat?.kind).toBe(3); // SPAN_KIND_CLIENT
      expect(chat?.attributes).toMatchObject({
        'gen_ai.provider.name': 'scripted',
        'gen_ai.usage.output_tokens': response.usage.outputTokens,
        'gen_ai.response.finish_reasons': [response.stopReason ?? 'unknown'],
      });
    }
    const chatInput = chats.reduce(
      (sum, span) =>
        sum + ((span.attributes['gen_ai.usage.input_tokens'] as number | undefined) ?? 0),
      0,
    );
    expect(chatInput).toBe(job.usage.inputTokens);

    const broken = readers.find((span) => span.attributes['troupe.agent.status'] === 'failed');
    expect(broken?.status).toMatchObject({
      code: 2,
      message: expect.stringContaining('broke down'),
    });
    expect(broken?.attributes['error.type']).toBe('model.server');

    // Tool spans: the coordinator's delegate, each reader's read_file; a failed read is an error.
    const tools = spans.filter(
      (span) => span.attributes['gen_ai.operation.name'] === 'execute_tool',
    );
    expect(tools).toHaveLength(ofType(events, 'tool.call').length);
    const [delegate] = byName(tools, 'execute_tool delegate');
    expect(delegate?.parentSpanId).toBe(coordinator?.spanId);
    expect(delegate?.attributes).toMatchObject({
      'gen_ai.tool.name': 'delegate',
      'troupe.tool.waits': true,
    });
    const reads = byName(tools, 'execute_tool read_file');
    expect(reads).toHaveLength(2);
    for (const read of reads) {
      expect(readers.map((span) => span.spanId)).toContain(read.parentSpanId);
      expect(read.attributes['gen_ai.tool.call.id']).toEqual(expect.any(String));
    }
    const failed = reads.find((read) => read.attributes['troupe.tool.ok'] === false);
    expect(failed?.status.code).toBe(2); // STATUS_CODE_ERROR
    expect(failed?.attributes['error.type']).toEqual(expect.any(String));

    // Times are the events' own.
    const spawned = ofType(events, 'agent.spawned').find(
      (event) => event.agentId === 'coordinator',
    );
    const finished = ofType(events, 'agent.finished').find(
      (event) => event.agentId === 'coordinator',
    );
    expect(coordinator?.startMs).toBe(spawned?.ts);
    expect(coordinator?.endMs).toBe(finished?.ts);

    // Content is off by default: no prompt, completion or tool text anywhere.
    const text = JSON.stringify(spans);
    expect(text).not.toContain('gen_ai.output.messages');
    expect(text).not.toContain('gen_ai.tool.call.arguments');
    expect(text).not.toContain('package.json');
  });

  it('exports a finished trace after the fact as the same spans', async () => {
    const live = await startOtlpReceiver();
    const later = await startOtlpReceiver();
    receivers.push(live, later);
    const { events } = await readerRun({ url: live.url, onWarning: () => {} });

    const report = await exportEventsToOtel(events as AgentEvent[], { url: later.url, env: {} });

    expect(report?.exportedSpans).toBe(live.spans.length);
    expect(shape(later.spans)).toEqual(shape(live.spans));
  });

  it('puts content on spans only when asked, with secrets redacted', async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const { events } = await readerRun({ url: receiver.url, onWarning: () => {} });
    const capture = await startOtlpReceiver();
    receivers.push(capture);

    await exportEventsToOtel(events, {
      url: capture.url,
      env: { MY_API_KEY: SECRET, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' },
    });

    const text = JSON.stringify(capture.spans);
    expect(text).not.toContain(SECRET);
    const reader = capture.spans.find((span) =>
      String(span.attributes['troupe.agent.task']).includes('read package.json'),
    );
    expect(reader?.attributes['troupe.agent.task']).toContain('[redacted]');
    const read = capture.spans.find(
      (span) =>
        span.name === 'execute_tool read_file' &&
        String(span.attributes['gen_ai.tool.call.arguments']).includes('package.json'),
    );
    expect(read?.attributes['gen_ai.tool.call.result']).toContain('"name"');
    const chat = capture.spans.find(
      (span) => span.attributes['gen_ai.output.messages'] !== undefined,
    );
    expect(JSON.parse(String(chat?.attributes['gen_ai.output.messages']))).toEqual([
      expect.objectContaining({ role: 'assistant', parts: expect.any(Array) }),
    ]);
  });

  it('lets a run with the collector down complete, at the cost of one warning', async () => {
    const url = await deadCollectorUrl();
    const warnings: string[] = [];

    const { job, report } = await readerRun({
      url,
      onWarning: (message) => warnings.push(message),
    });

    // One reader broke: an answer, but not every sub-agent completed.
    expect(job.status).toBe('partial');
    expect(report?.exportedSpans).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(url);
  });
});

describe('loading', () => {
  it('loads the OpenTelemetry packages only by dynamic import, so they load only when export is on', () => {
    const dist = new URL('../../dist/src/', import.meta.url).pathname;
    const files = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.js'),
    );
    const staticImports = files.filter((file) =>
      /^\s*import\s[^;]*['"]@opentelemetry\//m.test(readFileSync(join(dist, file), 'utf8')),
    );
    const dynamicImports = files.filter((file) =>
      /\bimport\(['"]@opentelemetry\//.test(readFileSync(join(dist, file), 'utf8')),
    );

    expect(files.length).toBeGreaterThan(50);
    expect(staticImports).toEqual([]);
    expect(dynamicImports).toEqual([join('observe', 'otel-exporter.js')]);
  });
});
