import type { AgentEvent, AgentStatus, RunStatus } from '../events/schema.js';
import { addUsage, emptyUsage, totalTokens, type Usage } from '../model/types.js';
import { humanDuration } from '../util/duration.js';
import { groupDigits } from '../util/text-order.js';

/** What one agent looks like to the renderers, folded from its events. */
export interface AgentView {
  id: string;
  role: string | undefined;
  parentId: string | undefined;
  task: string | undefined;
  model: string | undefined;
  /** `running` until its `agent.finished` (or the run's end, for the coordinator). */
  status: 'running' | AgentStatus;
  /** What it is doing now, in a few words ("calling read_file", "waiting on channel findings"). */
  activity: string;
  steps: number;
  usage: Usage;
  /** Cost in US dollars, when the pricing is known. */
  costUsd: number;
  startTs: number;
  endTs: number | undefined;
  progress: string | undefined;
  error: string | undefined;
  final: string | undefined;
  children: string[];
  /** Channels it received messages on (for "waiting on channel …"). */
  channels: Set<string>;
}

/** Prices a model call: US dollars for `usage` on `model` (the agent.spawned model label). */
export type PriceFunction = (model: string | undefined, usage: Usage) => number | undefined;

/**
 * The state of a run as the renderers see it, folded from AgentEvents alone,
 * so that a live run and a replayed trace give the same picture. Agents are
 * created on their first event (the coordinator has no `agent.spawned`; a
 * resumed run's reused agents have none at all, and show only when they
 * publish their channel messages again, as completed).
 */
export class RunState {
  runId: string | undefined;
  task: string | undefined;
  startTs: number | undefined;
  endTs: number | undefined;
  status: RunStatus | undefined;
  final: string | undefined;
  /** Timestamp of the latest event, for elapsed times in replays. */
  lastTs = 0;
  readonly agents = new Map<string, AgentView>();
  readonly roots: string[] = [];
  /** Model calls answered from the journal (a resume), and the tokens they did not spend again. */
  replayedCalls = 0;
  replayedUsage: Usage = { inputTokens: 0, outputTokens: 0 };
  /** Agents whose journal no longer matched (they went live). */
  diverged = 0;
  /** Roles that run without some tools, from `role.adapted`: "researcher without fetch_url (network)". */
  readonly adaptations: Array<{ role: string; dropped: string[]; tiers: string[] }> = [];
  /** The tree budget's limit that stopped the run, from its `budget.exceeded` (scope tree). */
  budgetStop: { metric: 'tokens' | 'cost' | 'time'; limit: number } | undefined;
  readonly #price: PriceFunction | undefined;
  // Kept as events arrive, so a frame of a run of 100,000 agents reads them instead of walking
  // every agent: each agent's subtree sums (an agent and what it spawned, along the tree's links),
  // the run's totals, the agents per status and the sub-agents per role.
  readonly #subtrees = new Map<string, SubtreeSums>();
  readonly #total: SubtreeSums = { usage: emptyUsage(), cost: 0, parent: undefined };
  readonly #counts: Record<'running' | AgentStatus, number> = {
    running: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    timed_out: 0,
  };
  readonly #roles = new Map<string, number>();

  constructor(options: { price?: PriceFunction | undefined } = {}) {
    this.#price = options.price;
  }

  /** Folds one event into the state. */
  apply(event: AgentEvent): void {
    this.lastTs = Math.max(this.lastTs, event.ts);
    this.runId ??= event.runId;
    if (event.type === 'run.started') {
      this.task = event.task;
      this.startTs = event.ts;
    }
    if (event.type === 'run.finished') {
      this.status = event.status;
      this.final = event.final;
      this.endTs = event.ts;
      for (const agent of this.agents.values()) {
        if (agent.status !== 'running') continue;
        this.#setStatus(agent, event.status === 'completed' ? 'completed' : 'cancelled');
        agent.activity = agent.status;
        agent.endTs = event.ts;
      }
      return;
    }
    const fresh = !this.agents.has(event.agentId);
    const agent = this.#agent(event);
    // A reused agent of a resumed run has no agent.spawned: its first event is
    // a replayed message.sent, and it finished in the earlier run.
    if (fresh && event.type === 'message.sent') {
      this.#setStatus(agent, 'completed');
      agent.endTs = event.ts;
    }
    switch (event.type) {
      case 'run.started':
        agent.activity = 'planning';
        break;
      case 'agent.spawned':
        agent.task = event.task;
        agent.model = event.model;
        agent.startTs = event.ts;
        agent.activity = 'starting';
        break;
      case 'agent.finished':
        this.#setStatus(agent, event.status);
        agent.endTs = event.ts;
        agent.final = event.final;
        agent.error = event.error?.message;
        agent.activity = event.status === 'completed' ? 'done' : event.status.replace('_', ' ');
        if (event.steps !== undefined) agent.steps = Math.max(agent.steps, event.steps);
        if (event.usage !== undefined && totalTokens(event.usage) > totalTokens(agent.usage)) {
          this.#setUsage(
            agent,
            event.usage,
            this.#price?.(agent.model, event.usage) ?? agent.costUsd,
          );
        }
        break;
      case 'agent.progress':
        agent.progress = event.note;
        break;
      case 'agent.nudged':
        agent.progress = `nudged: ${event.reason}`;
        break;
      case 'model.request':
        agent.activity = event.replayed === true ? 'replaying from the journal' : 'thinking';
        break;
      case 'model.delta':
        agent.activity =
          event.kind === 'text'
            ? 'writing'
            : event.kind === 'thinking'
              ? 'thinking'
              : 'preparing a tool call';
        break;
      case 'model.response':
        if (event.replayed === true) {
          this.replayedCalls += 1;
          if (event.replayedUsage !== undefined)
            this.replayedUsage = addUsage(this.replayedUsage, event.replayedUsage);
        }
        this.#setUsage(
          agent,
          addUsage(agent.usage, event.usage),
          agent.costUsd + (this.#price?.(agent.model, event.usage) ?? 0),
        );
        agent.activity =
          event.toolCalls.length > 0
            ? `calling ${[...new Set(event.toolCalls.map((call) => call.name))].join(', ')}`
            : agent.channels.size > 0
              ? `waiting on channel ${[...agent.channels].join(', ')}`
              : 'answered';
        break;
      case 'tool.call':
        agent.activity = describeCall(event.name, event.input);
        break;
      case 'tool.result':
        agent.activity = event.ok ? `${event.name} done` : `${event.name} failed`;
        break;
      case 'step':
        agent.steps = Math.max(agent.steps, event.step.index + 1);
        break;
      case 'message.sent':
        agent.activity = fresh
          ? `reused: published on ${event.channel} again`
          : `published on ${event.channel}`;
        break;
      case 'message.received':
        agent.channels.add(event.channel);
        agent.activity = `reading ${event.channel} from ${event.from}`;
        break;
      case 'budget.warning':
        agent.progress = `budget warning: ${describeBudget(event.metric, event.used, event.limit)}`;
        break;
      case 'budget.exceeded':
        agent.progress = `budget exceeded: ${describeBudget(event.metric, event.used, event.limit)}`;
        if (event.scope === 'tree')
          this.budgetStop ??= { metric: event.metric, limit: event.limit };
        break;
      case 'history.compressed':
        agent.progress = `history compressed: ${event.beforeMessages} → ${event.afterMessages} messages, ~${event.afterTokens} tokens`;
        if (event.usage !== undefined) {
          this.#setUsage(
            agent,
            addUsage(agent.usage, event.usage),
            agent.costUsd + (this.#price?.(agent.model, event.usage) ?? 0),
          );
        }
        break;
      case 'journal.diverged':
        this.diverged += 1;
        agent.progress = `journal diverged at model call ${event.step}: going live`;
        break;
      case 'role.adapted':
        this.adaptations.push({ role: event.name, dropped: event.dropped, tiers: event.tiers });
        break;
      case 'callback.error':
      case 'warning.raised':
        break;
    }
  }

  /** Usage of an agent and all its descendants. */
  subtreeUsage(id: string): Usage {
    const sums = this.#subtrees.get(id);
    return sums === undefined ? emptyUsage() : { ...sums.usage };
  }

  /** Tokens of an agent and all its descendants (`totalTokens` of `subtreeUsage`). */
  subtreeTokens(id: string): number {
    const sums = this.#subtrees.get(id);
    return sums === undefined ? 0 : totalTokens(sums.usage);
  }

  /** Cost of an agent and all its descendants, in US dollars. */
  subtreeCost(id: string): number {
    return this.#subtrees.get(id)?.cost ?? 0;
  }

  /** Usage of every agent together. */
  totalUsage(): Usage {
    return { ...this.#total.usage };
  }

  /** Cost of every agent together, in US dollars. */
  totalCost(): number {
    return this.#total.cost;
  }

  /** Number of agents in each status. */
  countByStatus(): Record<'running' | AgentStatus, number> {
    return { ...this.#counts };
  }

  /** Sub-agents per role (roots not counted; "?" for an agent whose role is not known yet). */
  subAgentsByRole(): ReadonlyMap<string, number> {
    return this.#roles;
  }

  #setStatus(agent: AgentView, status: 'running' | AgentStatus): void {
    this.#counts[agent.status] -= 1;
    this.#counts[status] += 1;
    agent.status = status;
  }

  // The agent's usage and cost become these; its subtree sums and its ancestors' follow.
  #setUsage(agent: AgentView, usage: Usage, costUsd: number): void {
    const cost = costUsd - agent.costUsd;
    const previous = agent.usage;
    agent.usage = usage;
    agent.costUsd = costUsd;
    for (let sums = this.#subtrees.get(agent.id); sums !== undefined; sums = sums.parent) {
      moveUsage(sums, previous, usage, cost);
    }
    moveUsage(this.#total, previous, usage, cost);
  }

  #countRole(role: string | undefined, by: number): void {
    const name = role ?? '?';
    const count = (this.#roles.get(name) ?? 0) + by;
    if (count === 0) this.#roles.delete(name);
    else this.#roles.set(name, count);
  }

  #agent(event: AgentEvent): AgentView {
    const known = this.agents.get(event.agentId);
    if (known !== undefined) {
      if (known.role === undefined && event.role !== undefined) {
        if (known.parentId !== undefined) {
          this.#countRole(undefined, -1);
          this.#countRole(event.role, 1);
        }
        known.role = event.role;
      }
      return known;
    }
    const agent: AgentView = {
      id: event.agentId,
      role: event.role,
      parentId: event.parentId,
      task: undefined,
      model: undefined,
      status: 'running',
      activity: 'starting',
      steps: 0,
      usage: emptyUsage(),
      costUsd: 0,
      startTs: event.ts,
      endTs: undefined,
      progress: undefined,
      error: undefined,
      final: undefined,
      children: [],
      channels: new Set(),
    };
    this.agents.set(agent.id, agent);
    this.#counts.running += 1;
    if (agent.parentId !== undefined) this.#countRole(agent.role, 1);
    const parent = event.parentId === undefined ? undefined : this.agents.get(event.parentId);
    if (parent === undefined) this.roots.push(agent.id);
    else parent.children.push(agent.id);
    this.#subtrees.set(agent.id, {
      usage: emptyUsage(),
      cost: 0,
      parent: parent === undefined ? undefined : this.#subtrees.get(parent.id),
    });
    return agent;
  }
}

function describeCall(name: string, input: unknown): string {
  const args =
    typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  if (name === 'delegate' && Array.isArray(args['tasks'])) {
    const count = args['tasks'].length;
    return `delegating ${count} task${count === 1 ? '' : 's'}`;
  }
  if (name === 'wait_agents') return 'waiting on sub-agents';
  if (name === 'spawn_agent') return 'spawning a sub-agent';
  const target = ['path', 'url', 'pattern', 'channel']
    .map((key) => args[key])
    .find((v) => typeof v === 'string');
  return typeof target === 'string' ? `calling ${name} ${target}` : `calling ${name}`;
}

/** "1.2k", "12k", "1.3M": a token count for narrow columns. */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) return String(tokens);
  if (tokens < 10_000) return `${(tokens / 1000).toFixed(1)}k`;
  if (tokens < 1_000_000) return `${Math.round(tokens / 1000)}k`;
  return `${(tokens / 1_000_000).toFixed(1)}M`;
}

/** "850ms", "4.2s", "3m05s": a duration for narrow columns. */
export function formatDuration(milliseconds: number): string {
  const ms = Math.max(0, Math.round(milliseconds));
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  return `${minutes}m${String(seconds).padStart(2, '0')}s`;
}

/** "time 3.0s of 3s", "tokens 20,114 of 20,000", "cost $0.0123 of $0.01". */
export function describeBudget(
  metric: 'tokens' | 'cost' | 'time',
  used: number,
  limit: number,
): string {
  if (metric === 'time') return `time ${formatDuration(used)} of ${humanDuration(limit)}`;
  if (metric === 'cost') return `cost $${used.toFixed(4)} of $${limit.toFixed(4)}`;
  return `tokens ${groupDigits(Math.round(used))} of ${groupDigits(Math.round(limit))}`;
}

/** "$0.0123": a cost, or an empty string when there is none. */
export function formatCost(costUsd: number): string {
  if (costUsd <= 0) return '';
  return costUsd < 1 ? `$${costUsd.toFixed(4)}` : `$${costUsd.toFixed(2)}`;
}

/** An agent's subtree sums (itself and its descendants), linked to its parent's. */
interface SubtreeSums {
  usage: Usage;
  cost: number;
  parent: SubtreeSums | undefined;
}

// Moves `sums` from counting `previous` to counting `next` (one agent's usage), and adds `cost`.
function moveUsage(sums: SubtreeSums, previous: Usage, next: Usage, cost: number): void {
  const usage = sums.usage;
  usage.inputTokens += next.inputTokens - previous.inputTokens;
  usage.outputTokens += next.outputTokens - previous.outputTokens;
  if (next.cacheReadTokens !== undefined || previous.cacheReadTokens !== undefined)
    usage.cacheReadTokens =
      (usage.cacheReadTokens ?? 0) + (next.cacheReadTokens ?? 0) - (previous.cacheReadTokens ?? 0);
  if (next.cacheWriteTokens !== undefined || previous.cacheWriteTokens !== undefined)
    usage.cacheWriteTokens =
      (usage.cacheWriteTokens ?? 0) +
      (next.cacheWriteTokens ?? 0) -
      (previous.cacheWriteTokens ?? 0);
  sums.cost += cost;
}
