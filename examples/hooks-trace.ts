/**
 * Example 4: the library with hooks, printing the trace its own way.
 *
 * Instead of troupe's renderers, this listens on the run's EventBus: a
 * timeline of tool calls and channel messages with times relative to the
 * start, `waitForEvent` to grab the analyst's result the moment it is
 * ready, and at the end a per-agent bar chart of when each agent worked.
 *
 *   npm run build
 *   node dist/examples/hooks-trace.js
 */

import { totalTokens } from '../src/entries/models.js';
import {
  type AgentEvent,
  createRunId,
  DEFAULT_GRANTS,
  Runtime,
  runJob,
  waitForEvent,
} from '../src/index.js';
import { corpusDir, modelFromFlags, outDirFor } from './support.js';

const runId = createRunId();
const runtime = new Runtime({
  model: modelFromFlags(),
  runId,
  workspace: corpusDir(),
  outDir: outDirFor('hooks-trace', runId),
  // The built-in researcher has fetch_url, so it needs network; the defaults are read, write, network.
  grants: [...DEFAULT_GRANTS],
  threads: 2,
});

const start = Date.now();
const at = (event: AgentEvent): string => `+${((event.ts - start) / 1000).toFixed(3)}s`.padEnd(9);
const spans = new Map<string, { from: number; to: number; tokens: number }>();

runtime.bus.onAny((event) => {
  const span = spans.get(event.agentId) ?? { from: event.ts, to: event.ts, tokens: 0 };
  span.to = event.ts;
  if (event.type === 'model.response') span.tokens += totalTokens(event.usage);
  spans.set(event.agentId, span);
});
runtime.bus.on('tool.call', (event) => {
  const target = JSON.stringify(event.input).slice(0, 60);
  console.log(`${at(event)} ${event.agentId.padEnd(13)} → ${event.name} ${target}`);
});
runtime.bus.on('tool.result', (event) => {
  if (!event.ok)
    console.log(
      `${at(event)} ${event.agentId.padEnd(13)} ✗ ${event.name}: ${event.error?.message}`,
    );
});
runtime.bus.on('message.received', (event) => {
  console.log(`${at(event)} ${event.agentId.padEnd(13)} ✉ ${event.channel} from ${event.from}`);
});

// Resolves when the analyst finishes, while the rest of the job still runs.
const analysis = waitForEvent(runtime.bus, 'agent.finished', (event) => event.role === 'analyst');
const job = runJob({ runtime, task: 'Compare the documents in the workspace and write a report.' });
const analyst = await analysis;
console.log(
  `\nthe analyst finished first-hand (${analyst.status}); its answer starts:\n${(analyst.final ?? '').split('\n').slice(0, 4).join('\n')}\n`,
);
const result = await job;
await runtime.close();

// A bar per agent: when it was active, on a 50-column timeline.
const end = Math.max(...[...spans.values()].map((span) => span.to));
const width = 50;
console.log(`\n${result.status} in ${end - start} ms\n`);
for (const [agentId, span] of spans) {
  const from = Math.floor(((span.from - start) / Math.max(end - start, 1)) * width);
  const to = Math.max(from + 1, Math.ceil(((span.to - start) / Math.max(end - start, 1)) * width));
  const bar = `${' '.repeat(from)}${'█'.repeat(to - from)}`.padEnd(width);
  console.log(`${agentId.padEnd(14)}|${bar}| ${span.tokens} tokens`);
}
process.exitCode = result.status === 'completed' ? 0 : 1;
