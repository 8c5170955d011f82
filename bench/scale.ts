import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBus } from '../src/events/bus.js';
import { TraceWriter } from '../src/events/trace.js';
import type { Script } from '../src/model/script.js';
import type { AnyRole } from '../src/roles/role.js';
import { Runtime } from '../src/runtime/runtime.js';
import { countedLiveView } from './live-frame.js';
import { median } from './stats.js';

/**
 * One fan-out of `n` sub-agents, cold (after one 2-agent warm-up), as
 * `troupe run` would host it on a terminal: the run's trace writer and the
 * interactive live view (120 x 40, its output counted) on the bus. Checks that
 * every agent finished exactly once, and measures what the trace costs per
 * event (time inside the writer on the main thread) and what an agent costs
 * in memory (RSS growth over the run, per agent).
 */
export interface ScaleMeasurement {
  n: number;
  wallMs: number;
  cpuMs: number;
  peakRssMiB: number;
  /** (peak RSS − RSS before the spawns) / n. */
  rssKiBPerAgent: number;
  /** Main-thread time from the first spawn until the last spawn call returned. */
  spawnLoopMs: number;
  events: number;
  traceBytes: number;
  /** Main-thread time inside the trace writer (serialize, redact, write), per event. */
  traceUsPerEvent: number;
  /** Agents that finished more than once or never (must be 0). */
  finishedWrong: number;
  /** Main-thread time inside the live view's event handler, per event. */
  liveUsPerEvent: number;
  /** Frames the live view drew during the run, their median and longest time, and the longest gap between two. */
  liveFrames: number;
  liveFrameMsMedian: number;
  liveFrameMsMax: number;
  liveFrameGapMsMax: number;
  /** When each frame ended, ms after the first spawn. */
  liveFrameEndsMs: number[];
}

export async function scaleFanout(
  n: number,
  script: Script,
  roles: { bench: AnyRole; warm: AnyRole },
  toolModule: string,
): Promise<ScaleMeasurement> {
  const workspace = mkdtempSync(join(tmpdir(), 'troupe-scale-'));
  const bus = new EventBus();
  const trace = new TraceWriter(join(workspace, 'run', 'trace.jsonl'));
  let traceNs = 0n;
  let liveNs = 0n;
  let events = 0;
  const finished = new Map<string, number>();
  const { live } = countedLiveView();
  // Frames as the view's timer draws them: their times, and when each ended.
  const frames: number[] = [];
  const frameEnds: number[] = [];
  const draw = live.draw.bind(live);
  live.draw = () => {
    const started = performance.now();
    draw();
    const ended = performance.now();
    frameEnds.push(ended);
    frames.push(ended - started);
  };
  bus.onAny((event) => {
    const started = process.hrtime.bigint();
    trace.write(event);
    const written = process.hrtime.bigint();
    live.handle(event);
    liveNs += process.hrtime.bigint() - written;
    traceNs += written - started;
    events += 1;
    if (event.type === 'agent.finished')
      finished.set(event.agentId, (finished.get(event.agentId) ?? 0) + 1);
  });
  const runtime = new Runtime({
    bus,
    model: { provider: 'scripted', script },
    roles: [roles.bench, roles.warm],
    workspace,
    grants: ['read'],
    toolModules: [toolModule],
    maxActorsPerThread: n,
    ...(process.env['TROUPE_BENCH_TOOLS'] === 'thread' ? { toolIsolation: 'thread' as const } : {}),
    maxQueued: n,
  });
  try {
    await runtime.spawn(roles.warm.name, 'warm up').result;
    finished.clear();
    events = 0;
    traceNs = 0n;
    liveNs = 0n;
    frames.length = 0;
    frameEnds.length = 0;
    live.start();
    (globalThis as { gc?: () => void }).gc?.();
    const rssBefore = process.memoryUsage.rss();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const refs = new Array(n);
    for (let index = 0; index < n; index += 1)
      refs[index] = runtime.spawn(roles.bench.name, `task ${index}`).result;
    const spawnLoopMs = performance.now() - started;
    const results = await Promise.all(refs);
    const wallMs = performance.now() - started;
    live.finish();
    const used = process.cpuUsage(cpu);
    const peakRssMiB = process.resourceUsage().maxRSS / 1024;
    const failed = results.filter((result) => result.status !== 'completed');
    if (failed.length > 0)
      throw new Error(`${failed.length} agents did not complete: ${failed[0]?.error?.message}`);
    let finishedWrong = Math.max(0, n - finished.size);
    for (const count of finished.values()) if (count !== 1) finishedWrong += 1;
    trace.flush();
    return {
      n,
      wallMs,
      cpuMs: (used.user + used.system) / 1000,
      peakRssMiB,
      rssKiBPerAgent: (peakRssMiB * 1024 - rssBefore / 1024) / n,
      spawnLoopMs,
      events,
      traceBytes: statSync(trace.path).size,
      traceUsPerEvent: Number(traceNs) / 1000 / Math.max(1, events),
      finishedWrong,
      liveUsPerEvent: Number(liveNs) / 1000 / Math.max(1, events),
      liveFrames: frames.length,
      liveFrameMsMedian: frames.length === 0 ? 0 : median(frames),
      liveFrameMsMax: Math.max(0, ...frames),
      liveFrameEndsMs: frameEnds.map((end) => Math.round(end - started)),
      liveFrameGapMsMax: frameEnds.reduce(
        (gap, end, index) =>
          Math.max(gap, index === 0 ? end - started : end - (frameEnds[index - 1] ?? end)),
        0,
      ),
    };
  } finally {
    live.finish();
    await runtime.close();
    trace.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}
