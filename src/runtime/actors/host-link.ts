import { errorMessage, plainError, TroupeError } from '../../errors.js';
import type { EventBus } from '../../events/bus.js';
import { looksLikeEvent } from '../../events/event-check.js';
import type { EventPayload } from '../../events/schema.js';
import type { DelegateInput } from '../../roles/delegation-tools.js';
import type { ApprovalRequest } from '../../tools/tool.js';
import type { Router } from '../messaging/router.js';
import {
  type ChildAnswer,
  type ChildRequest,
  isWireEvent,
  type WorkerToMain,
  type WorkerWireItem,
} from '../wire/protocol.js';
import type { ActorResult } from './actor.js';
import type { ActorTable } from './actor-table.js';
import type { ActorLifecycle } from './lifecycle.js';
import type { Scheduler } from './scheduler.js';

/** What the main thread's side of the protocol acts on. */
export interface HostLinkDeps {
  bus: EventBus;
  runId: string;
  table: ActorTable;
  lifecycle: ActorLifecycle;
  router: Router;
  scheduler: Scheduler;
  approve: ((request: ApprovalRequest) => Promise<boolean>) | undefined;
  delegate(actorId: string, input: DelegateInput): Promise<ActorResult[]>;
  /** Answers a worker actor's spawn_agent, wait_agents or send_message; never rejects. */
  child(actorId: string, request: ChildRequest): Promise<ChildAnswer>;
  emit(agentId: string, payload: EventPayload): void;
}

type Item<TType extends WorkerToMain['type']> = Extract<WorkerToMain, { type: TType }>;

/**
 * The main thread's side of the worker protocol: it takes each host's items
 * in order and acts on them. Events go to the bus (validated there, once,
 * and stamped with the global seq); an attempt's result, always after its
 * last event on the same port, ends the attempt; requests (publish,
 * approval, delegation) are answered on the port they came from.
 */
export class HostLink {
  readonly #deps: HostLinkDeps;

  constructor(deps: HostLinkDeps) {
    this.#deps = deps;
  }

  /** Acts on one batch from a host, in order. */
  items(hostId: number, items: readonly WorkerWireItem[]): void {
    const { table, lifecycle } = this.#deps;
    for (const item of items) {
      if (isWireEvent(item)) {
        this.#ingest(item);
        continue;
      }
      switch (item.type) {
        case 'actor.result': {
          const record = table.get(item.actorId);
          // A result from a host the actor no longer runs on is stale.
          if (record !== undefined && record.hostId === hostId)
            lifecycle.outcome(record, item.outcome);
          break;
        }
        case 'actor.turn':
          table.get(item.actorId)?.turn(item.final);
          break;
        case 'mailbox.consumed': {
          const record = table.get(item.actorId);
          if (record === undefined) break;
          record.consumed += item.count;
          record.mailbox.release(item.count);
          break;
        }
        case 'channel.publish':
          void this.#publish(hostId, item);
          break;
        case 'approval.requested':
          void this.#approve(hostId, item);
          break;
        case 'spawn.requested':
          void this.#delegate(hostId, item);
          break;
        case 'child.requested':
          void this.#deps.child(item.actorId, item.request).then((answer) =>
            this.#deps.scheduler.reply(hostId, {
              type: 'child.answered',
              requestId: item.requestId,
              answer,
            }),
          );
          break;
        case 'host.error':
        case 'host.ready':
          break;
      }
    }
  }

  // Validated in the worker that produced it; here only the envelope is
  // checked. Anything else is reported as a callback.error, never dropped silently.
  #ingest(event: unknown): void {
    const { bus, table, runId } = this.#deps;
    let problem = 'its envelope is malformed';
    if (looksLikeEvent(event, runId)) {
      try {
        bus.adopt(event);
        return;
      } catch (error) {
        problem = errorMessage(error);
      }
    }
    const agentId = (event as { agentId?: unknown } | null)?.agentId;
    this.#deps.emit(typeof agentId === 'string' ? agentId : (table.firstRoot() ?? 'runtime'), {
      type: 'callback.error',
      callback: 'worker event',
      error: plainError(
        new TroupeError('runtime.protocol', `A worker sent an invalid event: ${problem}`),
      ),
    });
  }

  async #publish(hostId: number, item: Item<'channel.publish'>): Promise<void> {
    const answer = await this.#deps.router.publish(item.actorId, item.channel, item.payload);
    this.#deps.scheduler.reply(hostId, {
      type: 'publish.answered',
      requestId: item.requestId,
      ...answer,
    });
  }

  async #approve(hostId: number, item: Item<'approval.requested'>): Promise<void> {
    let approved = false;
    try {
      approved =
        (await this.#deps.approve?.({
          tool: item.tool,
          agentId: item.actorId,
          summary: item.summary,
        })) ?? false;
    } catch {
      // An approver that fails denies.
    }
    this.#deps.scheduler.reply(hostId, {
      type: 'approval.answered',
      requestId: item.requestId,
      approved,
    });
  }

  async #delegate(hostId: number, item: Item<'spawn.requested'>): Promise<void> {
    const record = this.#deps.table.get(item.actorId);
    let results: ActorResult[] = [];
    if (record?.role.canDelegate === true) {
      const input: DelegateInput = { tasks: item.tasks };
      if (item.policy !== undefined) input.policy = item.policy;
      if (item.quorum !== undefined) input.quorum = item.quorum;
      results = await this.#deps.delegate(item.actorId, input);
    }
    this.#deps.scheduler.reply(hostId, {
      type: 'spawn.answered',
      requestId: item.requestId,
      results,
    });
  }
}
