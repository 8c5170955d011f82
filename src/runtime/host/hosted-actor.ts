import { z } from 'zod';
import { Agent } from '../../agent/agent.js';
import type { CallAllowance, CallAsk, CallGrant } from '../../agent/allowance.js';
import { compressionFor } from '../../agent/history.js';
import { type AgentJournal, messageHash } from '../../agent/journal.js';
import { serializeError, TroupeError } from '../../errors.js';
import { makeEvent } from '../../events/envelope.js';
import type { EventPayload, UnsequencedEvent } from '../../events/schema.js';
import { type Model, raisesWarnings } from '../../model/model.js';
import { addUsage, emptyUsage, type Message, type Usage } from '../../model/types.js';
import { type ChannelSpec, formatChannelClosed, publishToolName } from '../../roles/channel.js';
import {
  type DelegateInput,
  type Delegator,
  delegationTools,
} from '../../roles/delegation-tools.js';
import type { ActorResult } from '../../roles/result.js';
import type { ToolRegistry } from '../../tools/registry.js';
import type { AnyTool, ApprovalRequest, ToolContext } from '../../tools/tool.js';
import { type LibraryWarning, withWarningSink } from '../../util/warnings.js';
import type {
  ActorOutcome,
  ChildAnswer,
  ChildRequest,
  HostConfig,
  MainToWorker,
  RoleSpec,
} from '../wire/protocol.js';
import { InboxOrder } from './inbox-order.js';

type StartMessage = Extract<MainToWorker, { type: 'actor.start' }>;

/** What a hosted actor asks of the main thread; each resolves when the main thread answers. */
export interface HostRequests {
  /** A `delegate` fan-out, run by the main thread for `actorId`. */
  spawn(actorId: string, input: DelegateInput): Promise<ActorResult[]>;
  /** A `spawn_agent`, `wait_agents` or `send_message` of `actorId`. */
  child(actorId: string, request: ChildRequest): Promise<ChildAnswer>;
  publish(
    actorId: string,
    channel: string,
    payload: unknown,
  ): Promise<{ ok: boolean; message: string; code?: string | undefined }>;
  approve(actorId: string, request: ApprovalRequest): Promise<boolean>;
  /** Room in the tree budget for one model call of `actorId` (a budgeted run; see HostConfig.budget). */
  reserve(actorId: string, ask: CallAsk, signal: AbortSignal): Promise<CallGrant>;
}

/** What a hosted actor is built from. */
export interface HostedActorOptions {
  start: StartMessage;
  role: RoleSpec;
  /** The role's tools (see roleTools): shared by every actor of the role on this host. */
  tools: ToolRegistry;
  model: Model;
  config: HostConfig;
  emit(event: UnsequencedEvent): void;
  /** Reports that the actor read `count` mailbox messages (frees slots in the main thread's account). */
  consumed(count: number): void;
  /** Reports the end of an Agent run that is not the last (answers `ask`). */
  turn(final: string): void;
  requests: HostRequests;
  env?: NodeJS.ProcessEnv | undefined;
  /** The actor's side of the run's journal, when the run keeps one. */
  journal?: AgentJournal | undefined;
  /** Settles when the actor's tools are ready (its MCP servers started); a rejection fails the actor. */
  ready?: Promise<unknown> | undefined;
}

const NO_MESSAGES: readonly Message[] = Object.freeze([]);

/**
 * How long a resumed subscriber waits for a message its journal says came
 * next while nothing else arrives, before it takes its messages as they
 * come (a publisher that went another way will never send it).
 */
export const INBOX_REPLAY_STALL_MS = 10_000;

interface InboxItem {
  message: Message;
  messageId?: string | undefined;
  channel?: string | undefined;
  from?: string | undefined;
  counted: boolean;
}

/**
 * One actor inside a worker thread: its own Agent, history, narrowed tools
 * and inbox. The history never leaves the thread; only events and the
 * outcome do. A subscriber keeps running its Agent as messages arrive until
 * every channel it reads is closed and its inbox is empty.
 */
export class HostedActor {
  readonly id: string;
  readonly #options: HostedActorOptions;
  readonly #controller = new AbortController();
  readonly #inbox: InboxItem[] = [];
  // The subscribed channels still open; none (no Set) for the many actors that subscribe to nothing.
  readonly #open: Set<string> | undefined;
  readonly #role: RoleSpec;
  #wake: (() => void) | undefined;
  #cancelReason = '';
  readonly #warnings = new Set<string>();
  // The journal's record of the order messages are taken in (a journaled run only).
  readonly #order: InboxOrder | undefined;
  // The index of the model call the next message taken between runs goes before.
  #nextStep = 0;

  constructor(options: HostedActorOptions) {
    this.#options = options;
    this.id = options.start.actorId;
    this.#role = options.role;
    this.#open = options.role.subscribes.length > 0 ? new Set(options.role.subscribes) : undefined;
    this.#order =
      options.journal === undefined
        ? undefined
        : new InboxOrder(options.journal, options.start.journal?.replay.length);
  }

  /** A message for the actor (a channel message or a steering message from its parent). */
  deliver(item: Extract<MainToWorker, { type: 'mailbox.deliver' }>): void {
    this.#inbox.push({
      message: { role: 'user', content: item.content },
      messageId: item.messageId,
      channel: item.channel,
      from: item.from,
      counted: true,
    });
    this.#wakeUp();
  }

  /** The last publisher of `channel` is gone: queue the one close notice, behind every message. */
  closeChannel(channel: string): void {
    if (this.#open?.delete(channel) !== true) return;
    this.#inbox.push({
      message: { role: 'user', content: formatChannelClosed(channel) },
      counted: false,
    });
    this.#wakeUp();
  }

  /** Cooperative cancellation: the Agent stops at its next await; tools see the signal. */
  cancel(reason: string): void {
    if (this.#controller.signal.aborted) return;
    this.#cancelReason = reason;
    this.#controller.abort(new TroupeError('cancelled', reason));
    this.#wakeUp();
  }

  /** Runs the actor to its end. Resolves, never rejects. */
  run(): Promise<ActorOutcome> {
    // A model that cannot warn needs no scope (see raisesWarnings); what else in
    // this thread warns goes to the host's fallback, the newest actor.
    return raisesWarnings(this.#options.model)
      ? withWarningSink(this.warn, () => this.#run())
      : this.#run();
  }

  /** Records a warning raised during this actor's work as its event (once per message). */
  readonly warn = (warning: LibraryWarning): undefined => {
    if (this.#warnings.has(warning.message)) return;
    this.#warnings.add(warning.message);
    this.#emit({ type: 'warning.raised', source: warning.source, message: warning.message });
  };

  async #run(): Promise<ActorOutcome> {
    let usage: Usage = emptyUsage();
    let steps = 0;
    try {
      if (this.#options.ready !== undefined) await this.#untilReady(this.#options.ready);
      const agent = this.#buildAgent();
      let input = this.#options.start.task;
      for (;;) {
        const result = await agent.run(input, { signal: this.#controller.signal });
        usage = addUsage(usage, result.usage);
        steps += result.steps.length;
        // The last run's answer travels in the outcome; only runs that go on report a turn.
        if (result.stopReason !== 'final' || !this.#expectsMore()) {
          return this.#outcome(result.stopReason, result.final, usage, steps, result.error);
        }
        this.#options.turn(result.final);
        const next = await this.#nextMessage();
        if (next === undefined) return this.#outcome('cancelled', result.final, usage, steps);
        input = next.content;
      }
    } catch (error) {
      return this.#outcome('error', '', usage, steps, serializeError(error));
    }
  }

  // A cancel while the role's MCP servers start does not wait for them; the Agent then stops at once.
  #untilReady(ready: Promise<unknown>): Promise<unknown> {
    const signal = this.#controller.signal;
    if (signal.aborted) return Promise.resolve();
    return Promise.race([
      ready,
      new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => resolve(), { once: true }),
      ),
    ]);
  }

  #outcome(
    stopReason: ActorOutcome['stopReason'],
    final: string,
    usage: Usage,
    steps: number,
    error?: ActorOutcome['error'],
  ): ActorOutcome {
    const outcome: ActorOutcome = { stopReason, final, usage, steps };
    if (error !== undefined) outcome.error = error;
    else if (stopReason === 'cancelled') {
      outcome.error = serializeError(
        new TroupeError('cancelled', this.#cancelReason || 'cancelled'),
      );
    }
    return outcome;
  }

  // More is coming while the inbox holds something or a subscribed channel is still open.
  #expectsMore(): boolean {
    return this.#inbox.length > 0 || (this.#open !== undefined && this.#open.size > 0);
  }

  async #nextMessage(): Promise<Message | undefined> {
    const step = this.#nextStep;
    const due = this.#order?.due(step);
    if (due !== undefined) {
      // Replaying: the message the journal says came next, once it is here.
      const [head] = due;
      if (head === undefined) this.#order?.goLive();
      else {
        const taken = await this.#takeRecorded(step, [head]);
        if (taken !== undefined) return taken[0];
      }
    }
    while (this.#inbox.length === 0) {
      if (this.#controller.signal.aborted) return undefined;
      await this.#arrival();
    }
    if (this.#controller.signal.aborted) return undefined;
    const [first] = this.#takeItems(step, this.#inbox.splice(0, 1));
    return first;
  }

  // Resolves at the next arrival, close or cancel.
  #arrival(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = () => {
        this.#wake = undefined;
        resolve();
      };
    });
  }

  #wakeUp(): void {
    this.#wake?.();
  }

  // Before model call `step`: every message in the inbox, or while replaying, what the journal says was taken then.
  readonly #take = (step: number): readonly Message[] | Promise<readonly Message[]> => {
    this.#nextStep = step + 1;
    const due = this.#order?.due(step);
    if (due !== undefined) {
      if (due.length === 0) return NO_MESSAGES;
      return this.#takeRecorded(step, due).then(
        (taken) => taken ?? this.#takeItems(step, this.#inbox.splice(0)),
      );
    }
    // Asked before every model call; the inbox is almost always empty.
    if (this.#inbox.length === 0) return NO_MESSAGES;
    return this.#takeItems(step, this.#inbox.splice(0));
  };

  /**
   * Waits until the inbox holds every message of `hashes` and takes them in
   * that order. Undefined when they will not all come (every subscribed
   * channel closed without them, or nothing arrived for
   * INBOX_REPLAY_STALL_MS): the actor then goes live and takes what is there.
   */
  async #takeRecorded(step: number, hashes: readonly string[]): Promise<Message[] | undefined> {
    let waitedSince = Date.now();
    for (;;) {
      if (this.#controller.signal.aborted) return [];
      const positions = this.#find(hashes);
      if (positions !== undefined) {
        const items = positions.map((position) => this.#inbox[position] as InboxItem);
        const chosen = new Set(positions);
        const rest = this.#inbox.filter((_, position) => !chosen.has(position));
        this.#inbox.length = 0;
        this.#inbox.push(...rest);
        return this.#takeItems(step, items);
      }
      const closed = this.#open === undefined || this.#open.size === 0;
      if (closed || Date.now() - waitedSince >= INBOX_REPLAY_STALL_MS) {
        this.#order?.goLive();
        return undefined;
      }
      const before = this.#inbox.length;
      const timer = setTimeout(() => this.#wakeUp(), INBOX_REPLAY_STALL_MS);
      await this.#arrival();
      clearTimeout(timer);
      if (this.#inbox.length !== before) waitedSince = Date.now();
    }
  }

  // The inbox positions of the messages with these hashes (each position once), or undefined when one is missing.
  #find(hashes: readonly string[]): number[] | undefined {
    const positions: number[] = [];
    const used = new Set<number>();
    for (const hash of hashes) {
      const position = this.#inbox.findIndex(
        (item, index) => !used.has(index) && messageHash(textOf(item.message)) === hash,
      );
      if (position === -1) return undefined;
      used.add(position);
      positions.push(position);
    }
    return positions;
  }

  // Moves items into the history: reports reads, emits message.received, and notes the order in the journal.
  #takeItems(step: number, items: readonly InboxItem[]): Message[] {
    let counted = 0;
    for (const item of items) {
      if (item.counted) counted += 1;
      if (item.channel !== undefined && item.messageId !== undefined) {
        this.#emit({
          type: 'message.received',
          channel: item.channel,
          messageId: item.messageId,
          from: item.from ?? 'unknown',
        });
      }
    }
    if (counted > 0) this.#options.consumed(counted);
    if (this.#order !== undefined && items.length > 0) {
      this.#order.took(
        step,
        items.map((item) => messageHash(textOf(item.message))),
      );
    }
    return items.map((item) => item.message);
  }

  #buildAgent(): Agent {
    const { start, config } = this.#options;
    const role = this.#role;
    const toolContext: Partial<Omit<ToolContext, 'signal' | 'runId' | 'agentId' | 'role'>> = {
      workspace: config.workspace,
      grants: config.grants,
      progress: (note) => this.#emit({ type: 'agent.progress', note }),
    };
    if (config.outDir !== undefined) toolContext.outputDir = config.outDir;
    if (config.unsafeNoSandbox === true) toolContext.unsafeNoSandbox = true;
    if (config.sandbox !== undefined) toolContext.sandbox = config.sandbox;
    if (this.#options.env !== undefined) toolContext.env = this.#options.env;
    if (config.hasApprove) {
      toolContext.approve = (request) => this.#options.requests.approve(this.id, request);
    }
    return new Agent({
      name: this.id,
      agentId: this.id,
      model: this.#options.model,
      tools: this.#options.tools,
      system: role.system,
      maxSteps: role.maxSteps,
      events: { emit: this.#agentEvent },
      runId: config.runId,
      parentId: start.parentId,
      role: role.name,
      toolContext,
      budget: role.budget,
      allowance: this.#allowance(),
      stream: role.stream,
      // On by default for a model whose context window is known; the role's setting over the run's.
      compression: compressionFor(role.compression, this.#options.model.spec),
      inbox: this.#take,
      journal: this.#options.journal,
    });
  }

  // The Agent's events; a replaying actor that goes live takes its messages as they come from then on.
  // On a NATS worker node the node's journal answers the replayed calls (ReplayModel) without the
  // Agent knowing: their requests are not marked, and the order goes live past them (InboxOrder).
  readonly #agentEvent = (event: UnsequencedEvent): void => {
    const order = this.#order;
    if (
      order?.replaying === true &&
      (event.type === 'journal.diverged' ||
        (event.type === 'model.request' &&
          !event.replayed &&
          this.#options.start.journal === undefined))
    ) {
      order.goLive();
    }
    this.#options.emit(event);
  };

  // A budgeted run's calls reserve their room with the main thread; without a budget, no round trip.
  #allowance(): CallAllowance | undefined {
    if (this.#options.config.budget !== true) return undefined;
    const requests = this.#options.requests;
    return { reserve: (ask, signal) => requests.reserve(this.id, ask, signal) };
  }

  #emit(payload: EventPayload): void {
    const { start, config } = this.#options;
    this.#options.emit(
      makeEvent(
        { runId: config.runId, agentId: this.id, parentId: start.parentId, role: this.#role.name },
        payload,
      ),
    );
  }
}

/**
 * The tools of a role on one host: the role's named tools narrowed from
 * everything the host knows (a call to any other is answered "not in your
 * tool set"), plus `publish_<channel>` for each channel it publishes on and
 * `delegate` when it may delegate. They act for the calling agent (its id
 * comes with the call), so one registry serves every actor of the role.
 */
export function roleTools(all: ToolRegistry, role: RoleSpec, requests: HostRequests): ToolRegistry {
  const extra: AnyTool[] = role.publishes.map((channel) => publishTool(channel, requests));
  if (role.canDelegate) extra.push(...delegationTools(hostDelegator(requests)));
  return all.narrow(role.tools).with(extra);
}

/**
 * The delegation tools' side in a worker: each call is a round trip to the
 * main thread, which runs it with the coordinator's semantics. A refusal
 * comes back as an answer and becomes the tool's error result.
 */
function hostDelegator(requests: HostRequests): Delegator {
  const ask = async (actorId: string, request: ChildRequest): Promise<ChildAnswer> => {
    const answer = await requests.child(actorId, request);
    if (!answer.ok) throw new TroupeError(answer.code ?? 'tool.failed', answer.message);
    return answer;
  };
  return {
    delegate: (actorId, input) => requests.spawn(actorId, input),
    spawn: async (actorId, role, task) => {
      const answer = await ask(actorId, { op: 'spawn', role, task });
      if (answer.agentId === undefined) throw new TroupeError('internal', 'Nothing was started.');
      return answer.agentId;
    },
    wait: async (actorId, ids) => (await ask(actorId, { op: 'wait', ids: [...ids] })).results ?? [],
    send: async (actorId, agentId, message) =>
      (await ask(actorId, { op: 'send', agentId, message })).message,
  };
}

function publishTool(channel: ChannelSpec, requests: HostRequests): AnyTool {
  return {
    name: publishToolName(channel.name),
    description: `Publish one message on the "${channel.name}" channel; every subscriber receives it. ${channel.description}`,
    parameters: payloadSchema(channel),
    tiers: [],
    jsonSchema: channel.jsonSchema,
    // Published again on resume, as a reused publisher's stored messages are:
    // the subscribers run again and must read it again.
    replay: 'rerun',
    execute: async (payload: unknown, context) => {
      const answer = await requests.publish(context.agentId, channel.name, payload);
      if (!answer.ok) {
        throw new TroupeError(
          answer.code === 'mailbox.full' ? 'mailbox.full' : 'channel.invalid_payload',
          answer.message,
        );
      }
      return answer.message;
    },
  };
}

// The sender's thread checks the payload against the channel's JSON Schema
// (the model gets the message at once); the router checks it again with the
// channel's own zod schema before any delivery.
function payloadSchema(channel: ChannelSpec): z.ZodType {
  try {
    return z.fromJSONSchema(channel.jsonSchema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return z.record(z.string(), z.unknown());
  }
}

function textOf(message: Message): string {
  return typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
}
