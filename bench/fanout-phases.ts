/**
 * The side-by-side fan-out of issue 18 (`npm run bench -- --peers`): the
 * workload, how one process measures it, and the Promise.all floor. The
 * peers' runner (bench/peers/fanout.mjs) imports this built file too, so
 * every implementation is warmed, timed and reported the same way. It
 * imports nothing of troupe: a peer's process loads only the peer.
 */

/** The workload every implementation runs: per agent, `turns` model calls of `latencyMs` each. */
export interface PeerWorkload {
  n: number;
  latencyMs: number;
  /** Model turns per agent: a tool call on each but the last, which answers. */
  turns: number;
  /**
   * The real SDK path: the agents call this OpenAI-compatible server
   * (bench/openai-server.ts, streaming) through the `openai` SDK instead of
   * a fake model; the server waits `latencyMs` per call.
   */
  baseURL?: string;
  /** troupe only: the run keeps a journal (a FileJournal in its folder), as `troupe run` does. */
  journal?: boolean;
}

/** What one process reports for one implementation and one N. */
export interface PhaseMeasurement {
  /** The warm run: after the cold one and its same-size repeats. */
  wallMs: number;
  cpuMs: number;
  /** Peak RSS of the process after the cold run (what one such job needs). */
  peakRssMiB: number;
  coldWallMs: number;
  coldCpuMs: number;
  /** Agents whose run did not end with the expected answer, over every run (must be 0). */
  wrong: number;
}

/** Runs `n` agents of the workload to the end; resolves with how many did not answer `done`. */
export type FanoutRun = (n: number) => Promise<number>;

/** The warm-up before the cold run: two agents, as a user's first run of a process has none. */
export const WARM_UP_AGENTS = 2;

/** The answer the fake model gives on its last turn. */
export const FINAL_ANSWER = 'done';

// Repeats after the cold run, in the same process: enough agents through the code for the JIT.
export function warmRepeats(n: number): number {
  return Math.min(3, Math.max(1, Math.ceil(2000 / n)));
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/**
 * One process's measurement: a 2-agent warm-up, the cold run of `n` (its
 * wall, CPU of every thread of the process, and the peak RSS after it), then
 * `warmRepeats(n)` more runs of `n`, the last of which is the warm figure.
 */
export async function measurePhases(n: number, run: FanoutRun): Promise<PhaseMeasurement> {
  let wrong = await run(WARM_UP_AGENTS);
  const once = async (): Promise<{ wallMs: number; cpuMs: number }> => {
    collectGarbage();
    const cpu = process.cpuUsage();
    const started = performance.now();
    wrong += await run(n);
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return { wallMs, cpuMs: (used.user + used.system) / 1000 };
  };
  const cold = await once();
  const peakRssMiB = process.resourceUsage().maxRSS / 1024;
  let warm = cold;
  for (let index = 0; index < warmRepeats(n); index += 1) warm = await once();
  return {
    wallMs: warm.wallMs,
    cpuMs: warm.cpuMs,
    peakRssMiB,
    coldWallMs: cold.wallMs,
    coldCpuMs: cold.cpuMs,
    wrong,
  };
}

interface FloorMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  toolCallId?: string;
}

interface FloorResponse {
  content: string;
  toolCall?: { id: string; name: string; arguments: string };
}

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/**
 * The floor: no framework, each agent a loop over a fake model (a timer,
 * then a tool call until the last turn) and the trivial tool, all agents
 * under one Promise.all. What the workload costs with nothing around it.
 */
export function floorFanout(workload: PeerWorkload): FanoutRun {
  const model = async (messages: readonly FloorMessage[]): Promise<FloorResponse> => {
    await sleep(workload.latencyMs);
    const toolResults = messages.filter((message) => message.role === 'tool').length;
    if (toolResults + 1 >= workload.turns) return { content: FINAL_ANSWER };
    return {
      content: '',
      toolCall: { id: `call_${toolResults + 1}`, name: 'noop', arguments: '{}' },
    };
  };
  const noop = (input: unknown): string => (typeof input === 'object' ? 'ok' : 'bad input');
  const agent = async (task: string): Promise<string> => {
    const messages: FloorMessage[] = [{ role: 'user', content: task }];
    for (;;) {
      const response = await model(messages);
      messages.push({ role: 'assistant', content: response.content });
      if (response.toolCall === undefined) return response.content;
      const output = noop(JSON.parse(response.toolCall.arguments));
      messages.push({ role: 'tool', content: output, toolCallId: response.toolCall.id });
    }
  };
  return async (n) => {
    const answers = await Promise.all(
      Array.from({ length: n }, (_, index) => agent(`task ${index}`)),
    );
    return answers.filter((answer) => answer !== FINAL_ANSWER).length;
  };
}
