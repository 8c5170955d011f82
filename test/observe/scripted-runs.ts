import { runJob } from '../../src/job/coordinator.js';
import type { ScriptStep } from '../../src/model/script.js';
import { exportToOtel, type OtelExportOptions } from '../../src/observe/otel-exporter.js';
import { defineRole } from '../../src/roles/role.js';
import { makeRuntime } from '../integration/helpers.js';

/** A secret that appears in a task; exports and timelines must never show it. */
export const SECRET = 'sk-test-abcdefghijklmnopqrstuvwxyz';

const reader = defineRole({
  name: 'reader',
  description: 'Reads one file.',
  system: 'Read.',
  tools: ['read_file'],
  retry: 'fail_fast',
});

// The coordinator delegates to three readers: one reads a file, one fails to
// read a missing one, and one fails outright (its model call errors).
const readerSteps: ScriptStep[] = [
  {
    match: { role: 'coordinator', call: 1 },
    toolCalls: [
      {
        name: 'delegate',
        arguments: {
          tasks: [
            { role: 'reader', task: `read package.json (key ${SECRET})` },
            { role: 'reader', task: 'read the missing file' },
            { role: 'reader', task: 'break down' },
          ],
        },
      },
    ],
    usage: { inputTokens: 300, outputTokens: 30 },
  },
  {
    match: { role: 'coordinator' },
    content: 'two read, one broke',
    usage: { inputTokens: 400, outputTokens: 40 },
  },
  {
    match: { role: 'reader', lastUserContains: 'break down' },
    error: { code: 'model.server', message: 'the scripted model broke down' },
  },
  {
    match: { role: 'reader', lastUserContains: 'missing' },
    toolCalls: [{ name: 'read_file', arguments: { path: 'no-such-file.txt' } }],
    usage: { inputTokens: 120, outputTokens: 12 },
  },
  {
    match: { role: 'reader', lastUserContains: 'package.json' },
    toolCalls: [{ name: 'read_file', arguments: { path: 'package.json' } }],
    usage: { inputTokens: 100, outputTokens: 10 },
  },
  {
    match: { role: 'reader' },
    content: 'read it',
    usage: { inputTokens: 200, outputTokens: 20 },
    repeat: true,
  },
];

/** A scripted job on a real pool (close with closeRuntimes), optionally exported to OTel. */
export async function readerRun(otel?: OtelExportOptions) {
  const { runtime, events } = makeRuntime({
    roles: [reader],
    model: { provider: 'scripted', script: { steps: readerSteps } },
    env: { MY_API_KEY: SECRET },
  });
  const exporter = otel === undefined ? undefined : exportToOtel(runtime.bus, otel);
  const job = await runJob({ task: 'read three files', runtime });
  const report = await exporter?.close();
  return { job, events, report };
}

const worker = defineRole({
  name: 'worker',
  description: 'Does one small task.',
  system: 'Work.',
  tools: [],
  retry: 'fail_fast',
});

/** A scripted job whose coordinator delegates `count` tasks; every 50th worker fails. */
export async function fanOutRun(count: number) {
  const tasks = Array.from({ length: count }, (_, index) => ({
    role: 'worker',
    task: index % 50 === 49 ? `task ${index}: break down` : `task ${index}`,
  }));
  const { runtime, events } = makeRuntime({
    roles: [worker],
    model: {
      provider: 'scripted',
      script: {
        steps: [
          {
            match: { role: 'coordinator', call: 1 },
            toolCalls: [{ name: 'delegate', arguments: { tasks } }],
            usage: { inputTokens: 5_000, outputTokens: 2_000 },
          },
          { match: { role: 'coordinator' }, content: `${count} tasks done`, repeat: true },
          {
            match: { role: 'worker', lastUserContains: 'break down' },
            error: { code: 'model.server', message: 'the scripted model broke down' },
            repeat: true,
          },
          {
            match: { role: 'worker' },
            content: 'done',
            usage: { inputTokens: 50, outputTokens: 5 },
            repeat: true,
          },
        ],
      },
    },
  });
  const job = await runJob({ task: `do ${count} tasks`, runtime });
  return { job, events };
}
