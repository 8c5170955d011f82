import type { AgentEvent } from '../src/events/schema.js';
import { LiveRenderer } from '../src/render/live.js';

/**
 * What one frame of the live view costs with `n` sub-agents under the
 * coordinator (a third finished, a third working, a third starting), on a
 * 120 x 40 terminal whose output is only counted: the view's state is built
 * from events, then it draws `frames` times; the median and the range of
 * the draws, in milliseconds (`--case '{"kind":"live-frame","n":100000}'`).
 */
export interface LiveFrameMeasurement {
  n: number;
  frames: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** Characters the last frame wrote. */
  frameChars: number;
}

/**
 * The interactive live view as `troupe run` shows it on a 120 x 40 colour
 * terminal, its output only counted (`screen.chars`).
 */
export function countedLiveView(now?: () => number): {
  live: LiveRenderer;
  screen: { chars: number };
} {
  const screen = { chars: 0 };
  const live = new LiveRenderer({
    output: {
      isTTY: true,
      columns: 120,
      rows: 40,
      write: (text: string) => {
        screen.chars += text.length;
      },
    },
    color: true,
    now,
    actions: { stop: () => undefined, cancel: () => undefined },
  });
  return { live, screen };
}

export function liveFrame(n: number, frames = 7): LiveFrameMeasurement {
  const { live, screen } = countedLiveView(() => 1_000_000);
  let seq = 0;
  const event = (agentId: string, payload: Record<string, unknown>): AgentEvent =>
    ({
      v: 1,
      seq: seq++,
      ts: 1_000 + seq,
      runId: 'bench',
      agentId,
      ...(agentId === 'coordinator' ? {} : { parentId: 'coordinator', role: 'researcher' }),
      ...payload,
    }) as AgentEvent;
  live.handle(event('coordinator', { type: 'run.started', task: 'fan out' }));
  for (let index = 1; index <= n; index += 1) {
    live.handle(event(`researcher-${index}`, { type: 'agent.spawned', task: 'read', model: 'm' }));
  }
  for (let index = 1; index <= n; index += 1) {
    const id = `researcher-${index}`;
    if (index % 3 === 0) {
      const usage = { inputTokens: 10, outputTokens: 5 };
      live.handle(event(id, { type: 'agent.finished', status: 'completed', steps: 3, usage }));
    } else if (index % 3 === 1) {
      live.handle(event(id, { type: 'model.request', step: 0, messages: 2, tools: 1 }));
    }
  }
  const times: number[] = [];
  for (let frame = 0; frame < frames; frame += 1) {
    const before = screen.chars;
    const started = performance.now();
    live.draw();
    times.push(performance.now() - started);
    if (frame === frames - 1) screen.chars -= before;
  }
  times.sort((a, b) => a - b);
  return {
    n,
    frames,
    medianMs: times[Math.floor(times.length / 2)] ?? 0,
    minMs: times[0] ?? 0,
    maxMs: times[times.length - 1] ?? 0,
    frameChars: screen.chars,
  };
}
