import type { CallOutcome } from '../../agent/allowance.js';
import type { JournalEntry } from '../../agent/journal.js';
import { errorMessage, plainError, TroupeError } from '../../errors.js';
import type { EventBus } from '../../events/bus.js';
import { looksLikeEvent } from '../../events/event-check.js';
import type { EventPayload } from '../../events/schema.js';
import type { DelegateInput } from '../../roles/delegation-tools.js';
import type { ApprovalRequest } from '../../tools/tool.js';
import type { ReservationAnswer, ReservationRequest } from '../budget/reservations.js';
import type { Router } from '../messaging/router.js';
import {
  type ChildAnswer,
  type ChildRequest,
  type HostWireItem,
  isWireEvent,
  type WorkerToMain,
} from '../wire/protocol.js';
import type { ToolCallHandle, ToolCallHooks, ToolCallRequest } from '../wire/tool-pool.js';
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
  /** Runs a user tool's call on the tool pool (when the run isolates tools). */
  toolCall?: ((request: ToolCallRequest, hooks: ToolCallHooks) => ToolCallHandle) | undefined;
  /** Appends an actor's journal record, as a host encoded it (`journalLine`) or as an entry (no-op without a journal). */
  journal(actorId: string, record: JournalEntry | string | undefined): void;
  /** Appends journal lines of several actors, one text as a host sent it (`journal.lines`). */
  journalLines(text: string): void;
  /** Makes appended journal records durable. */
  flushJournal(): void;
  /** Why the journal cannot be written now (a full disk), if it cannot. */
  journalFailure?(): string | undefined;
  /** When the journal is kept elsewhere too (a NATS mirror): settles once what was flushed is stored there. */
  journalDurable?(): Promise<void> | undefined;
  /** Room in the tree budget for a worker actor's model call (a budgeted run). */
  reserve?(request: ReservationRequest, signal: AbortSignal): Promise<ReservationAnswer>;
  /** A worker actor's budgeted call ended. */
  settle?(reservation: number, outcome: CallOutcome, actorId: string): void;
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
  // Pooled tool calls in flight, by host and request; progress waiting to go out with them.
  readonly #toolCalls = new Map<number, Map<number, { handle: ToolCallHandle; notes: string[] }>>();
  // Budget asks still waiting for room, by host and request: a withdrawal aborts the wait.
  readonly #asks = new Map<string, AbortController>();

  constructor(deps: HostLinkDeps) {
    this.#deps = deps;
  }

  /** Acts on one batch from a host, in order. */
  items(hostId: number, items: readonly HostWireItem[]): void {
    const { table, lifecycle } = this.#deps;
    // Tool-call intents of this batch: durable with one write at its end, then answered.
    const intents: number[] = [];
    for (const item of items) {
      if (typeof item === 'string') {
        this.#ingestText(item);
        continue;
      }
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
        case 'tool.requested':
          this.#tool(hostId, item);
          break;
        case 'tool.cancelled':
          this.#toolCalls.get(hostId)?.get(item.requestId)?.handle.cancel();
          break;
        case 'budget.reserve':
          this.#reserve(hostId, item);
          break;
        case 'budget.settle':
          if (item.reservation !== undefined)
            this.#deps.settle?.(item.reservation, item.outcome, item.actorId);
          else if (item.requestId !== undefined)
            this.#asks.get(`${hostId}:${item.requestId}`)?.abort();
          break;
        case 'journal.lines':
          this.#deps.journalLines(item.text);
          break;
        case 'journal.entry':
          this.#deps.journal(item.actorId, item.line ?? (item.entry as JournalEntry | undefined));
          break;
        case 'journal.intent':
          this.#deps.journal(item.actorId, item.line ?? (item.entry as JournalEntry | undefined));
          intents.push(item.requestId);
          break;
        case 'host.error':
        case 'host.ready':
        // Journal records are the transport's (a NATS node stores them); the runtime never asks for them.
        case 'journal.record':
          break;
      }
    }
    // Before anything of this batch can reach the trace by its timer: what it shows as done is journaled.
    this.#deps.flushJournal();
    // Only now may the tools whose intents came in this batch run, and only if they are durable.
    if (intents.length === 0) return;
    const answer = (refused: string | undefined): void => {
      for (const requestId of intents) {
        this.#deps.scheduler.reply(hostId, {
          type: 'journal.answered',
          requestId,
          ...(refused === undefined ? {} : { refused }),
        });
      }
    };
    const refused = this.#deps.journalFailure?.();
    const durable = refused === undefined ? this.#deps.journalDurable?.() : undefined;
    if (durable === undefined) answer(refused);
    // Kept elsewhere too: the tools run once their intents are stored there (or are refused).
    else
      durable.then(
        () => answer(undefined),
        (error: unknown) => answer(errorMessage(error)),
      );
  }

  /** A host is gone: the pooled tool calls its actors made are given up, and their budget asks. */
  hostDown(hostId: number): void {
    for (const [key, ask] of this.#asks) if (key.startsWith(`${hostId}:`)) ask.abort();
    const calls = this.#toolCalls.get(hostId);
    this.#toolCalls.delete(hostId);
    for (const call of calls?.values() ?? []) call.handle.cancel();
  }

  #tool(hostId: number, item: Item<'tool.requested'>): void {
    const reply = this.#deps.scheduler;
    const toolCall = this.#deps.toolCall;
    if (toolCall === undefined) {
      reply.reply(hostId, {
        type: 'tool.answered',
        requestId: item.requestId,
        ok: false,
        content: `${item.tool} was not run: this runtime has no tool pool.`,
        code: 'tool.failed',
      });
      return;
    }
    let calls = this.#toolCalls.get(hostId);
    if (calls === undefined) {
      calls = new Map();
      this.#toolCalls.set(hostId, calls);
    }
    const entry = { handle: undefined as unknown as ToolCallHandle, notes: [] as string[] };
    // Progress goes out once per turn, always before the answer (same port, in order).
    const flush = (): void => {
      if (entry.notes.length === 0) return;
      const notes = entry.notes;
      entry.notes = [];
      reply.reply(hostId, { type: 'tool.progress', requestId: item.requestId, notes });
    };
    const record = this.#deps.table.get(item.actorId);
    const approve = this.#deps.approve;
    entry.handle = toolCall(
      {
        tool: item.tool,
        input: item.input,
        agentId: item.actorId,
        role: record?.role.name,
        solo: item.solo,
      },
      {
        progress: (note) => {
          if (entry.notes.length === 0) setImmediate(flush);
          entry.notes.push(note);
        },
        approve:
          approve === undefined
            ? undefined
            : (tool, summary) => approve({ tool, agentId: item.actorId, summary }),
      },
    );
    calls.set(item.requestId, entry);
    void entry.handle.answer.then((answer) => {
      calls.delete(item.requestId);
      flush();
      reply.reply(hostId, {
        type: 'tool.answered',
        requestId: item.requestId,
        ok: answer.ok,
        content: answer.ok ? answer.content : answer.message,
        ...(answer.ok ? {} : { code: answer.code }),
      });
    });
  }

  #reserve(hostId: number, item: Item<'budget.reserve'>): void {
    const reply = (answer: ReservationAnswer): void =>
      this.#deps.scheduler.reply(hostId, {
        type: 'budget.answered',
        requestId: item.requestId,
        ...(answer.ok
          ? { ok: true, maxTokens: answer.maxTokens, reservation: answer.id }
          : { ok: false, reason: answer.reason }),
      });
    const reserve = this.#deps.reserve;
    if (reserve === undefined) {
      // No budget on this side: the call goes with the max_tokens it asked for, unreserved.
      this.#deps.scheduler.reply(hostId, {
        type: 'budget.answered',
        requestId: item.requestId,
        ok: false,
        reason: 'This runtime keeps no token or cost budget; the host should not ask for room.',
      });
      return;
    }
    const key = `${hostId}:${item.requestId}`;
    const ask = new AbortController();
    this.#asks.set(key, ask);
    const { actorId, promptTokens, maxTokens, minTokens } = item;
    void reserve({ agentId: actorId, promptTokens, maxTokens, minTokens }, ask.signal).then(
      (answer) => {
        this.#asks.delete(key);
        if (ask.signal.aborted) {
          // Withdrawn: room granted in the same turn goes straight back.
          if (answer.ok) this.#deps.settle?.(answer.id, 'failed', actorId);
          return;
        }
        reply(answer);
      },
    );
  }

  // Validated in the worker that produced it; here only the envelope is
  // checked. Anything else is reported as a callback.error, never dropped silently.
  // An event its host sent as JSON text: parsed once here, and the text
  // handed to the bus with it (the trace writes it without serializing again).
  #ingestText(text: string): void {
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch (error) {
      this.#refuse(undefined, `its text is not JSON (${errorMessage(error)})`);
      return;
    }
    this.#ingest(event, text);
  }

  #ingest(event: unknown, text?: string): void {
    const { bus, runId } = this.#deps;
    let problem = 'its envelope is malformed';
    if (looksLikeEvent(event, runId)) {
      try {
        bus.adopt(event, text);
        return;
      } catch (error) {
        problem = errorMessage(error);
      }
    }
    this.#refuse(event, problem);
  }

  #refuse(event: unknown, problem: string): void {
    const { table } = this.#deps;
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
          ...(item.detail === undefined ? {} : { detail: item.detail }),
          ...(item.role === undefined ? {} : { role: item.role }),
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
