import type { AgentEvent, EventOf } from '../events/schema.js';
import type { Usage } from '../model/types.js';
import { createRedactor } from '../util/redact.js';

/** US dollars for a model's usage, or undefined when its price is unknown (as `--prices` gives). */
export type TimelinePrice = (model: string | undefined, usage: Usage) => number | undefined;

/** What a segment of an agent's row stands for: a model call, a tool call, or a wait. */
export type SegmentKind = 'model' | 'tool' | 'wait';

/** One segment: `[kind, startMs, endMs, label, failed]`, times relative to the run's start. */
export type TimelineSegment = [SegmentKind, number, number, string, 0 | 1];

/** What a transcript line shows. */
export type TranscriptKind =
  | 'task'
  | 'thinking'
  | 'text'
  | 'call'
  | 'result'
  | 'error'
  | 'sent'
  | 'received'
  | 'note'
  | 'final';

/** One transcript line: `[kind, atMs, text]`. */
export type TranscriptEntry = [TranscriptKind, number, string];

/** One agent's row. */
export interface TimelineAgent {
  id: string;
  /** Index of the parent agent in `agents`, or -1 for a root. */
  parent: number;
  role: string;
  model: string;
  depth: number;
  task: string;
  startMs: number;
  /** When it finished, or the run's end for an agent that never did. */
  endMs: number;
  /** `completed`, `failed`, `cancelled`, `timed_out`, or `unfinished`. */
  status: string;
  error: string;
  final: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  /** Tokens and cost of this agent and everything below it. */
  subtree: { agents: number; inputTokens: number; outputTokens: number; costUsd: number | null };
  segments: TimelineSegment[];
  transcript: TranscriptEntry[];
}

/** A channel message as an arrow between two rows: `[fromIndex, toIndex, sentMs, receivedMs, channel]`. */
export type TimelineMessage = [number, number, number, number, string];

/** Totals per role. */
export interface RoleTotals {
  role: string;
  agents: number;
  failed: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

/** Everything the HTML timeline draws, summarised from a run's events (no deltas). */
export interface TimelineData {
  runId: string;
  task: string;
  status: string;
  final: string;
  error: string;
  /** Epoch milliseconds of the run's first event; every other time is relative to it. */
  startedAt: number;
  durationMs: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  eventCount: number;
  /** Agents in tree order: each parent before its children, children by spawn time. */
  agents: TimelineAgent[];
  messages: TimelineMessage[];
  roles: RoleTotals[];
  /** True when some transcript text was shortened to keep the file small. */
  shortened: boolean;
}

/** Options of buildTimeline. */
export interface TimelineOptions {
  /** Prices usage; without it costs are null. */
  price?: TimelinePrice | undefined;
  /** Environment whose secret values are redacted from every text (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Characters of transcript text kept over the whole run (default 2,000,000; at least 1,500 per agent). */
  transcriptBudgetChars?: number;
}

const WAIT_TOOLS = new Set(['delegate', 'wait_agents']);
const ENTRY_CHARS = 1_000;

interface Building {
  agent: TimelineAgent;
  parentId: string | undefined;
  spawnSeq: number;
  children: string[];
  modelStart: number | undefined;
  idleSince: number | undefined;
  tools: Map<string, { start: number; name: string }>;
  usage: Usage;
  chars: number;
  dropped: number;
}

function addCost(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : a + b;
}

/**
 * Folds a run's events into the timeline's data: one row per agent in tree
 * order, model calls, tool calls and waits as segments, channel messages as
 * arrows, tokens and cost per agent, subtree and role, and a transcript per
 * agent whose text is capped so a 100,000-event run stays a few MiB.
 */
export function buildTimeline(
  events: readonly AgentEvent[],
  options: TimelineOptions = {},
): TimelineData {
  const redact = createRedactor(options.env);
  const startedAt = events.reduce(
    (min, event) => Math.min(min, event.ts),
    Number.POSITIVE_INFINITY,
  );
  const t0 = Number.isFinite(startedAt) ? startedAt : 0;
  const endedAt = events.reduce((max, event) => Math.max(max, event.ts), t0);
  const at = (ts: number): number => Math.max(0, Math.round(ts - t0));
  const spawnedCount = events.filter((event) => event.type === 'agent.spawned').length;
  const perAgentChars = Math.max(
    1_500,
    Math.floor((options.transcriptBudgetChars ?? 2_000_000) / Math.max(1, spawnedCount)),
  );
  const agents = new Map<string, Building>();
  const sent = new Map<string, { agentId: string; ts: number }>();
  const arrows: Array<[string, string, number, number, string]> = [];
  let shortened = false;
  const run = { runId: '', task: '', status: 'unfinished', final: '', error: '' };

  const say = (building: Building, kind: TranscriptKind, ts: number, text: string): void => {
    if (building.chars >= perAgentChars) {
      building.dropped += 1;
      shortened = true;
      return;
    }
    let clean = redact(text);
    if (clean.length > ENTRY_CHARS) {
      clean = `${clean.slice(0, ENTRY_CHARS)}… (${clean.length - ENTRY_CHARS} more characters in trace.jsonl)`;
      shortened = true;
    }
    building.chars += clean.length;
    building.agent.transcript.push([kind, at(ts), clean]);
  };

  const spawn = (event: EventOf<'agent.spawned'>): void => {
    const agent: TimelineAgent = {
      id: event.agentId,
      parent: -1,
      role: event.role ?? event.agentId,
      model: event.model ?? '',
      depth: event.depth ?? 0,
      task: redact(event.task.slice(0, 600)),
      startMs: at(event.ts),
      endMs: at(endedAt),
      status: 'unfinished',
      error: '',
      final: '',
      inputTokens: 0,
      outputTokens: 0,
      costUsd: null,
      subtree: { agents: 1, inputTokens: 0, outputTokens: 0, costUsd: null },
      segments: [],
      transcript: [],
    };
    const building: Building = {
      agent,
      parentId: event.parentId,
      spawnSeq: event.seq,
      children: [],
      modelStart: undefined,
      idleSince: undefined,
      tools: new Map(),
      usage: { inputTokens: 0, outputTokens: 0 },
      chars: 0,
      dropped: 0,
    };
    agents.set(event.agentId, building);
    if (event.parentId !== undefined) agents.get(event.parentId)?.children.push(event.agentId);
    say(building, 'task', event.ts, event.task);
  };

  for (const event of events) {
    if (event.type === 'run.started') {
      run.runId = event.runId;
      run.task = redact(event.task);
      continue;
    }
    if (event.type === 'run.finished') {
      run.runId = event.runId;
      run.status = event.status;
      run.final = redact(event.final ?? '');
      run.error = redact(event.error?.message ?? '');
      continue;
    }
    if (event.type === 'agent.spawned') {
      spawn(event);
      continue;
    }
    const building = agents.get(event.agentId);
    if (building === undefined) continue;
    const { agent } = building;
    switch (event.type) {
      case 'model.request':
        building.modelStart = event.ts;
        break;
      case 'model.response': {
        const start = building.modelStart ?? event.ts;
        building.modelStart = undefined;
        building.usage.inputTokens += event.usage.inputTokens;
        building.usage.outputTokens += event.usage.outputTokens;
        agent.segments.push([
          'model',
          at(start),
          at(event.ts),
          `${event.usage.inputTokens} in / ${event.usage.outputTokens} out${event.stopReason === undefined ? '' : `, ${event.stopReason}`}`,
          0,
        ]);
        if (event.thinking !== undefined && event.thinking !== '') {
          say(building, 'thinking', event.ts, event.thinking);
        }
        if (event.content !== '') say(building, 'text', event.ts, event.content);
        break;
      }
      case 'tool.call':
        building.tools.set(event.callId, { start: event.ts, name: event.name });
        say(building, 'call', event.ts, `${event.name}(${JSON.stringify(event.input) ?? ''})`);
        break;
      case 'tool.result': {
        const call = building.tools.get(event.callId);
        building.tools.delete(event.callId);
        const start = call?.start ?? event.ts;
        const isWait = WAIT_TOOLS.has(event.name);
        const waitedOn = isWait
          ? building.children.filter((childId) => {
              const child = agents.get(childId)?.agent;
              return child !== undefined && child.startMs <= at(event.ts);
            })
          : [];
        const label = isWait
          ? `${event.name}: waited on ${waitedOn.slice(0, 6).join(', ')}${waitedOn.length > 6 ? ` and ${waitedOn.length - 6} more` : ''}`
          : `${event.name}${event.ok ? '' : ` failed: ${event.error?.message ?? ''}`}`;
        agent.segments.push([
          isWait ? 'wait' : 'tool',
          at(start),
          at(event.ts),
          redact(label.slice(0, 300)),
          event.ok ? 0 : 1,
        ]);
        say(building, event.ok ? 'result' : 'error', event.ts, `${event.name}: ${event.content}`);
        break;
      }
      case 'step':
        if (event.step.kind === 'final') building.idleSince = event.ts;
        break;
      case 'message.sent':
        sent.set(event.messageId, { agentId: event.agentId, ts: event.ts });
        say(
          building,
          'sent',
          event.ts,
          `→ ${event.channel}${event.to === undefined ? '' : ` to ${event.to}`} (${event.messageId}): ${JSON.stringify(event.payload) ?? ''}`,
        );
        break;
      case 'message.received': {
        if (building.idleSince !== undefined) {
          agent.segments.push([
            'wait',
            at(building.idleSince),
            at(event.ts),
            `waited for ${event.channel}: ${event.from} sent ${event.messageId}`,
            0,
          ]);
          building.idleSince = undefined;
        }
        const from = sent.get(event.messageId);
        if (from !== undefined) {
          arrows.push([from.agentId, event.agentId, from.ts, event.ts, event.channel]);
        }
        say(
          building,
          'received',
          event.ts,
          `← ${event.channel} from ${event.from} (${event.messageId})`,
        );
        break;
      }
      case 'agent.progress':
        say(building, 'note', event.ts, `progress: ${event.note}`);
        break;
      case 'agent.nudged':
        say(building, 'note', event.ts, `nudged: ${event.reason}`);
        break;
      case 'budget.warning':
      case 'budget.exceeded':
        say(
          building,
          'note',
          event.ts,
          `${event.type}: ${event.scope} ${event.metric} ${event.used} of ${event.limit}`,
        );
        break;
      case 'history.compressed':
        say(
          building,
          'note',
          event.ts,
          `history compressed: ${event.beforeTokens} → ${event.afterTokens} tokens`,
        );
        break;
      case 'callback.error':
        say(building, 'error', event.ts, `callback ${event.callback}: ${event.error.message}`);
        break;
      case 'warning.raised':
        say(building, 'note', event.ts, `warning: ${event.message}`);
        break;
      case 'role.adapted':
        say(
          building,
          'note',
          event.ts,
          `role ${event.name} runs without ${event.dropped.join(', ')} (${event.tiers.join(', ')} not granted)`,
        );
        break;
      case 'agent.finished': {
        agent.endMs = at(event.ts);
        agent.status = event.status;
        agent.final = redact((event.final ?? '').slice(0, 4_000));
        agent.error = redact(event.error?.message ?? '');
        if (event.usage !== undefined) {
          building.usage = { ...event.usage };
        }
        if (building.modelStart !== undefined) {
          agent.segments.push([
            'model',
            at(building.modelStart),
            at(event.ts),
            'model call without a reply',
            1,
          ]);
          building.modelStart = undefined;
        }
        for (const [, call] of building.tools) {
          agent.segments.push(['tool', at(call.start), at(event.ts), `${call.name} unfinished`, 1]);
        }
        building.tools.clear();
        if (event.status === 'completed' && event.final !== undefined) {
          say(building, 'final', event.ts, event.final);
        } else if (event.status !== 'completed') {
          say(building, 'error', event.ts, `${event.status}: ${event.error?.message ?? ''}`);
        }
        break;
      }
    }
  }

  // Tree order: roots by spawn, then each parent's children by spawn.
  const ordered: Building[] = [];
  const visit = (building: Building): void => {
    ordered.push(building);
    for (const childId of building.children) {
      const child = agents.get(childId);
      if (child !== undefined) visit(child);
    }
  };
  for (const building of [...agents.values()].sort((a, b) => a.spawnSeq - b.spawnSeq)) {
    if (building.parentId === undefined || !agents.has(building.parentId)) visit(building);
  }
  const index = new Map(ordered.map((building, position) => [building.agent.id, position]));

  for (const building of ordered) {
    const { agent, usage } = building;
    agent.parent = building.parentId === undefined ? -1 : (index.get(building.parentId) ?? -1);
    agent.inputTokens = usage.inputTokens;
    agent.outputTokens = usage.outputTokens;
    agent.costUsd = options.price?.(agent.model || undefined, usage) ?? null;
    agent.subtree = {
      agents: 1,
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUsd: agent.costUsd,
    };
    agent.segments.sort((a, b) => a[1] - b[1]);
    if (building.dropped > 0) {
      agent.transcript.push([
        'note',
        agent.endMs,
        `… ${building.dropped} more entries left out to keep this file small; the full record is in trace.jsonl.`,
      ]);
    }
  }
  // Children come after their parent, so a reverse pass sums subtrees bottom-up.
  for (let position = ordered.length - 1; position >= 0; position -= 1) {
    const agent = ordered[position]?.agent;
    const parent = agent === undefined || agent.parent < 0 ? undefined : ordered[agent.parent];
    if (agent === undefined || parent === undefined) continue;
    const totals = parent.agent.subtree;
    totals.agents += agent.subtree.agents;
    totals.inputTokens += agent.subtree.inputTokens;
    totals.outputTokens += agent.subtree.outputTokens;
    totals.costUsd = addCost(totals.costUsd, agent.subtree.costUsd);
  }

  const roles = new Map<string, RoleTotals>();
  for (const { agent } of ordered) {
    const totals = roles.get(agent.role) ?? {
      role: agent.role,
      agents: 0,
      failed: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: null,
    };
    totals.agents += 1;
    if (agent.status !== 'completed') totals.failed += 1;
    totals.inputTokens += agent.inputTokens;
    totals.outputTokens += agent.outputTokens;
    totals.costUsd = addCost(totals.costUsd, agent.costUsd);
    roles.set(agent.role, totals);
  }
  const list = ordered.map((building) => building.agent);
  return {
    runId: run.runId || (events[0]?.runId ?? ''),
    task: run.task,
    status: run.status,
    final: run.final,
    error: run.error,
    startedAt: t0,
    durationMs: at(endedAt),
    inputTokens: list.reduce((sum, agent) => sum + agent.inputTokens, 0),
    outputTokens: list.reduce((sum, agent) => sum + agent.outputTokens, 0),
    costUsd: list.reduce<number | null>((sum, agent) => addCost(sum, agent.costUsd), null),
    eventCount: events.length,
    agents: list,
    messages: arrows.flatMap(([from, to, sentAt, receivedAt, channel]) => {
      const fromIndex = index.get(from);
      const toIndex = index.get(to);
      return fromIndex === undefined || toIndex === undefined
        ? []
        : [[fromIndex, toIndex, at(sentAt), at(receivedAt), channel] as TimelineMessage];
    }),
    roles: [...roles.values()].sort(
      (a, b) => b.inputTokens + b.outputTokens - (a.inputTokens + a.outputTokens),
    ),
    shortened,
  };
}
