// One process of the peers' fan-out (issue 18): the workload of
// dist/bench/fanout-phases.js on a peer framework, each with a fake model
// written against that framework's own model interface (no HTTP), the same
// `noop` tool with a zod schema, and the same warm-up and timing.
//
//   node --expose-gc bench/peers/fanout.mjs --case '{"impl":"ai","n":1000,"latencyMs":200,"turns":3}'
//
// impl: `ai` (Vercel AI SDK 6, ToolLoopAgent), `openai-agents` (@openai/agents,
// run()), `langgraph` (@langchain/langgraph, createReactAgent). With a
// `baseURL` (openai-agents only), the real SDK path: the `openai` SDK against
// that OpenAI-compatible server, streamed. Prints one JSON line. Needs `npm ci --prefix bench/peers` and a built troupe (npm run build).

import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { FINAL_ANSWER, measurePhases } from '../../dist/bench/fanout-phases.js';

const spec = JSON.parse(process.argv[process.argv.indexOf('--case') + 1] ?? '{}');

// Every fake model decides from the conversation alone (how many tool results it
// holds), so one model object serves every agent, as a provider's client would.
const NOOP_DESCRIPTION = 'Does nothing and says so.';
const noopParameters = z.object({ step: z.number().int().optional() });
// Counts its calls: a run whose agents did not each call it turns - 1 times is wrong.
let toolCalls = 0;
const noop = () => {
  toolCalls += 1;
  return 'ok';
};

// Runs `n` agents with `start`, and counts those that did not answer or call the tool as asked.
async function checked(n, turns, start, answerOf) {
  const before = toolCalls;
  const results = await Promise.all(
    Array.from({ length: n }, (_, index) => start(`task ${index}`)),
  );
  const wrongAnswers = results.filter((result) => answerOf(result) !== FINAL_ANSWER).length;
  return wrongAnswers + Math.abs(toolCalls - before - n * (turns - 1));
}

async function aiSdk(workload) {
  const { ToolLoopAgent, stepCountIs, tool } = await import('ai');
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  };
  const model = {
    specificationVersion: 'v3',
    provider: 'bench',
    modelId: 'fake',
    supportedUrls: {},
    async doGenerate(options) {
      await sleep(workload.latencyMs);
      const results = options.prompt.filter((message) => message.role === 'tool').length;
      if (results + 1 >= workload.turns)
        return {
          content: [{ type: 'text', text: FINAL_ANSWER }],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage,
          warnings: [],
        };
      return {
        content: [
          { type: 'tool-call', toolCallId: `call_${results + 1}`, toolName: 'noop', input: '{}' },
        ],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    },
    async doStream() {
      throw new Error('the bench does not stream on the fake model');
    },
  };
  const agent = new ToolLoopAgent({
    model,
    instructions: 'You run the benchmark.',
    tools: {
      noop: tool({ description: NOOP_DESCRIPTION, inputSchema: noopParameters, execute: noop }),
    },
    stopWhen: stepCountIs(workload.turns + 1),
  });
  return (n) =>
    checked(
      n,
      workload.turns,
      (prompt) => agent.generate({ prompt }),
      (result) => result.text,
    );
}

async function openaiAgents(workload) {
  const { Agent, Runner, Usage, setTracingDisabled, tool } = await import('@openai/agents');
  // Tracing would export to OpenAI's servers; a user without them turns it off.
  setTracingDisabled(true);
  const usage = () => new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 });
  const model = {
    async getResponse(request) {
      await sleep(workload.latencyMs);
      const input = typeof request.input === 'string' ? [] : request.input;
      const results = input.filter((item) => item.type === 'function_call_result').length;
      if (results + 1 >= workload.turns)
        return {
          usage: usage(),
          output: [
            {
              type: 'message',
              role: 'assistant',
              status: 'completed',
              content: [{ type: 'output_text', text: FINAL_ANSWER }],
            },
          ],
        };
      return {
        usage: usage(),
        output: [
          {
            type: 'function_call',
            callId: `call_${results + 1}`,
            name: 'noop',
            arguments: '{}',
            status: 'completed',
          },
        ],
      };
    },
    getStreamedResponse() {
      throw new Error('the bench does not stream on the fake model');
    },
  };
  const agent = new Agent({
    name: 'worker',
    instructions: 'You run the benchmark.',
    model: workload.baseURL === undefined ? model : await httpModel(workload.baseURL),
    tools: [
      tool({
        name: 'noop',
        description: NOOP_DESCRIPTION,
        parameters: noopParameters,
        execute: noop,
      }),
    ],
  });
  const runner = new Runner({ tracingDisabled: true });
  // On the real SDK path the run streams, as troupe's agents do; the stream is read to its end.
  const runStreamed = async (task) => {
    if (workload.baseURL === undefined)
      return runner.run(agent, task, { maxTurns: workload.turns + 1 });
    const result = await runner.run(agent, task, { maxTurns: workload.turns + 1, stream: true });
    for await (const _event of result) {
      // Every event is taken, as a caller showing progress would.
    }
    await result.completed;
    return result;
  };
  return (n) =>
    checked(
      n,
      workload.turns,
      (task) => runStreamed(task),
      (result) => result.finalOutput,
    );
}

// The real SDK path: Chat Completions through the `openai` SDK (the version troupe uses)
// against the bench's local server, one client for every agent.
async function httpModel(baseURL) {
  const { OpenAI } = await import('openai');
  const { OpenAIChatCompletionsModel } = await import('@openai/agents');
  return new OpenAIChatCompletionsModel(new OpenAI({ apiKey: 'no-key', baseURL }), 'bench');
}

async function langGraph(workload) {
  const { BaseChatModel } = await import('@langchain/core/language_models/chat_models');
  const { AIMessage } = await import('@langchain/core/messages');
  const { tool } = await import('@langchain/core/tools');
  const { createReactAgent } = await import('@langchain/langgraph/prebuilt');
  class FakeToolModel extends BaseChatModel {
    _llmType() {
      return 'bench-fake';
    }
    bindTools() {
      return this;
    }
    async _generate(messages) {
      await sleep(workload.latencyMs);
      const results = messages.filter((message) => message.getType() === 'tool').length;
      const message =
        results + 1 >= workload.turns
          ? new AIMessage({ content: FINAL_ANSWER })
          : new AIMessage({
              content: '',
              tool_calls: [
                { id: `call_${results + 1}`, name: 'noop', args: {}, type: 'tool_call' },
              ],
            });
      return {
        generations: [
          { text: typeof message.content === 'string' ? message.content : '', message },
        ],
      };
    }
  }
  const agent = createReactAgent({
    llm: new FakeToolModel({}),
    tools: [tool(noop, { name: 'noop', description: NOOP_DESCRIPTION, schema: noopParameters })],
    prompt: 'You run the benchmark.',
  });
  return (n) =>
    checked(
      n,
      workload.turns,
      (task) => agent.invoke({ messages: [{ role: 'user', content: task }] }),
      (result) => result.messages.at(-1)?.content,
    );
}

const PEERS = { ai: aiSdk, 'openai-agents': openaiAgents, langgraph: langGraph };
const build = PEERS[spec.impl];
if (build === undefined) throw new Error(`unknown peer ${spec.impl}; known: ${Object.keys(PEERS)}`);
const measured = await measurePhases(spec.n, await build(spec));
console.log(JSON.stringify(measured));
