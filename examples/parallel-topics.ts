/**
 * Example 2: parallel research runs over N topics, no coordinator.
 *
 * Each topic goes to its own researcher actor; they all run at once on a
 * small pool of worker threads (many actors share a thread), and the results
 * come back as they finish. By default the topics are the corpus documents,
 * repeated to reach --n (default 12), which shows many actors on 2 threads.
 *
 *   npm run build
 *   node dist/examples/parallel-topics.js --n 40
 */
import { readdirSync } from 'node:fs';
import { createRunId, DEFAULT_GRANTS, Runtime } from '../src/index.js';
import { corpusDir, flag, modelFromFlags, outDirFor } from './support.js';

const count = Number(flag('--n') ?? '12');
const documents = readdirSync(corpusDir()).filter((name) => name.endsWith('.md'));
const topics = Array.from(
  { length: count },
  (_, index) => documents[index % documents.length] ?? '',
);

const runId = createRunId();
const runtime = new Runtime({
  model: modelFromFlags(),
  runId,
  workspace: corpusDir(),
  outDir: outDirFor('parallel-topics', runId),
  // The built-in researcher has fetch_url, so it needs network; the defaults are read, write, network.
  grants: [...DEFAULT_GRANTS],
  threads: 2,
});

const started = Date.now();
const refs = topics.map((topic) =>
  runtime.spawn('researcher', `Read "${topic}" and publish its key findings.`, {
    parent: 'example',
  }),
);
console.log(`${refs.length} researchers started on 2 threads`);
for (const ref of refs) {
  void ref.result.then((result) => {
    const tokens = result.usage.inputTokens + result.usage.outputTokens;
    console.log(
      `${result.agentId.padEnd(14)} ${result.status.padEnd(10)} ${String(result.steps).padStart(2)} steps ${String(tokens).padStart(6)} tokens`,
    );
  });
}
const results = await Promise.all(refs.map((ref) => ref.result));
await runtime.close();

const completed = results.filter((result) => result.status === 'completed').length;
const usage = runtime.usage();
console.log(
  `\n${completed}/${results.length} completed in ${Date.now() - started} ms, ${usage.tokens} tokens`,
);
process.exitCode = completed === results.length ? 0 : 1;
