/**
 * Example 3: a custom role and a custom typed channel, in user code.
 *
 * `summarizer` actors read one document each and publish a typed summary on
 * the `summaries` channel (the payload is validated against the zod schema
 * when sent and when received); one `digest` actor subscribes, gets each
 * summary as it arrives, and answers with all of them side by side once the
 * channel closes (every summarizer finished).
 *
 *   npm run build
 *   node dist/examples/custom-role-channel.js
 */
import { readdirSync } from 'node:fs';
import { z } from 'zod';
import { createRunId, defineChannel, defineRole, Runtime } from '../src/index.js';
import { corpusDir, modelFromFlags, outDirFor } from './support.js';

const summaries = defineChannel(
  'summaries',
  z.object({
    file: z.string().describe('The workspace path of the document.'),
    title: z.string().describe('Its title.'),
    wordCount: z.number().int().nonnegative().describe('How many words it has.'),
    figures: z.array(z.string()).describe('Sentences with numbers, verbatim.'),
  }),
  { description: 'One summary per document.' },
);

const summarizer = defineRole({
  name: 'summarizer',
  description: 'Reads one document and publishes a typed summary of it.',
  system:
    'You read one document and publish exactly one summary of it with publish_summaries. Copy figures verbatim.',
  tools: ['read_file'],
  publishes: [summaries],
  maxSteps: 6,
});

const digest = defineRole({
  name: 'digest',
  description: 'Collects every summary into one table.',
  system:
    'You receive summaries as they are published. When the channel closes, answer with a Markdown table of all of them.',
  subscribes: [summaries],
  maxSteps: 12,
});

const runId = createRunId();
const runtime = new Runtime({
  model: modelFromFlags(),
  roles: [summarizer, digest],
  runId,
  workspace: corpusDir(),
  outDir: outDirFor('custom-role-channel', runId),
  grants: ['read'],
  threads: 2,
});
runtime.bus.on('message.received', (event) =>
  console.log(`${event.agentId} received a summary from ${event.from}`),
);

const documents = readdirSync(corpusDir()).filter((name) => name.endsWith('.md'));
// spawnBatch starts publishers before subscribers, so the digest never sees a channel already closed.
const refs = runtime.spawnBatch('example', [
  ...documents.map((file) => ({ role: 'summarizer', task: `Summarize "${file}".` })),
  { role: 'digest', task: 'Collect the summaries into one table.' },
]);
const results = await Promise.all(refs.map((ref) => ref.result));
await runtime.close();

const table = results.find((result) => result.role === 'digest');
console.log(`\n${table?.final ?? '(no digest)'}`);
process.exitCode = results.every((result) => result.status === 'completed') ? 0 : 1;
