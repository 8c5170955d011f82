/**
 * Example 1: research → analysis → report over the bundled corpus.
 *
 * A coordinator lists the documents and delegates one researcher per
 * document plus an analyst in the same batch; researchers publish findings
 * on the `findings` channel while the analyst aggregates them as they
 * arrive; then a reporter writes report.md. Offline by default (no key, no
 * network); name a real provider to use one:
 *
 *   npm run build
 *   node dist/examples/research-report.js
 *   node dist/examples/research-report.js --provider anthropic   # needs ANTHROPIC_API_KEY
 *   node dist/examples/research-report.js --provider openai --base-url http://localhost:11434/v1 --model llama3.1
 */
import { join } from 'node:path';
import { describeModel } from '../src/entries/models.js';
import { createRunId, DEFAULT_GRANTS, Runtime, runJob, TraceWriter } from '../src/index.js';
import { corpusDir, modelFromFlags, outDirFor } from './support.js';

const model = modelFromFlags();
const runId = createRunId();
const outDir = outDirFor('research-report', runId);
const runtime = new Runtime({
  model,
  runId,
  workspace: corpusDir(),
  outDir,
  // The built-in researcher has fetch_url, so it needs network; the defaults are read, write, network.
  grants: [...DEFAULT_GRANTS],
  threads: 2,
});

// Keep every event, secrets redacted, as `troupe trace` can replay it.
const trace = new TraceWriter(join(outDir, 'trace.jsonl'));
trace.attach(runtime.bus);
runtime.bus.on('agent.spawned', (event) =>
  console.log(`+ ${event.agentId}  ${event.task.slice(0, 70)}…`),
);
runtime.bus.on('message.sent', (event) =>
  console.log(`  ${event.agentId} published on ${event.channel}`),
);
runtime.bus.on('agent.finished', (event) =>
  console.log(
    `${event.status === 'completed' ? '✓' : '✗'} ${event.agentId} ${event.status}${event.error === undefined ? '' : `: ${event.error.message}`}`,
  ),
);

console.log(`model: ${describeModel(model)}; corpus: ${corpusDir()}`);
const job = await runJob({
  runtime,
  task: 'Research the documents in the workspace, compare what they say and write a report.',
});
await runtime.close();
trace.close();

console.log(`\n${job.status}: ${job.final}`);
console.log(`tokens: ${job.usage.inputTokens + job.usage.outputTokens}`);
console.log(`report: ${join(outDir, 'report.md')}`);
console.log(
  `trace:  ${join(outDir, 'trace.jsonl')}  (replay: node bin/troupe.js trace ${join(outDir, 'trace.jsonl')})`,
);
process.exitCode = job.status === 'completed' ? 0 : 1;
