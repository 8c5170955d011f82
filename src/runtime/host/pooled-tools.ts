import { type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { TroupeError } from '../../errors.js';
import type { ApprovalRequest, ToolContext } from '../../tools/tool.js';
import { onAbort } from '../../util/abort.js';
import { Batcher } from '../wire/batcher.js';
import type { MainToWorker, WorkerWireItem } from '../wire/protocol.js';
import {
  culpritMessage,
  type LaneToTool,
  lostMessage,
  MAX_LOST_THREADS,
  parseToolToMain,
  TOOL_STATE,
  type ToolToMain,
} from '../wire/tool-protocol.js';

type Item<TType extends MainToWorker['type']> = Extract<MainToWorker, { type: TType }>;

/** What the pooled calls of a host need from it. */
export interface PooledToolsDeps {
  /** A request id, unique on the host (relayed calls share the host's request ids). */
  nextRequestId(): number;
  /** Sends an item to the main thread (batched with the host's other items). */
  post(item: WorkerWireItem): void;
  /** Asks the run's approver, through the main thread. */
  approve(actorId: string, request: ApprovalRequest): Promise<boolean>;
}

interface Lane {
  thread: number;
  port: MessagePort;
  state: Int32Array;
  out: Batcher<LaneToTool>;
  calls: Map<number, PooledCall>;
}

interface PooledCall {
  id: number;
  tool: string;
  input: unknown;
  context: ToolContext;
  /** The lane it runs on; undefined while the main thread runs it. */
  lane: Lane | undefined;
  /** Times a neighbour's fault took its tool thread while it ran. */
  lost: number;
  resolve(content: string): void;
  reject(error: TroupeError): void;
}

/**
 * The calls of user tools that a host's actors make while tools run on the
 * tool pool. A call goes straight to a tool thread on a lane (a
 * MessageChannel the main thread opened between this thread and that one),
 * to the least-loaded thread that is not kept for a suspect; with no lane it
 * crosses to the main thread (`tool.requested`), which runs it. The main
 * thread still supervises the tool threads: when one dies it says so
 * (`tool.lane.down`) and who is to blame, and this host answers its
 * culprit and runs its other calls of that thread again, at once (or alone,
 * through the main thread, when nobody could be named).
 */
export class PooledTools {
  readonly #deps: PooledToolsDeps;
  readonly #lanes = new Map<number, Lane>();
  readonly #calls = new Map<number, PooledCall>();

  constructor(deps: PooledToolsDeps) {
    this.#deps = deps;
  }

  /** Runs one call of a user tool; resolves to its result, rejects with the error the model reads. */
  call(tool: string, input: unknown, context: ToolContext): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const signal = context.signal;
      if (signal.aborted) {
        reject(cancelled(tool));
        return;
      }
      let release = (): void => {};
      const call: PooledCall = {
        id: this.#deps.nextRequestId(),
        tool,
        input,
        context,
        lane: undefined,
        lost: 0,
        resolve: (content) => {
          release();
          resolve(content);
        },
        reject: (error) => {
          release();
          reject(error);
        },
      };
      this.#calls.set(call.id, call);
      release = onAbort(signal, () => this.#cancel(call));
      this.#place(call, false);
    });
  }

  /** A lane to a tool thread, from the main thread. */
  open(item: Item<'tool.lane'>): void {
    const port = item.port;
    const lane: Lane = {
      thread: item.thread,
      port,
      state: new Int32Array(item.state),
      out: new Batcher((items) => port.postMessage(items)),
      calls: new Map(),
    };
    this.#lanes.get(item.thread)?.port.close();
    this.#lanes.set(item.thread, lane);
    port.on('message', (data: unknown) => this.#receive(lane, data));
  }

  /** A tool thread is gone: answer our culprit, run our other calls of it again. */
  down(item: Item<'tool.lane.down'>): void {
    const lane = this.#lanes.get(item.thread);
    if (lane === undefined) return;
    // The answers it sent before it died are still on our end: they count.
    for (;;) {
      const message = receiveMessageOnPort(lane.port);
      if (message === undefined) break;
      this.#receive(lane, message.message);
    }
    this.#lanes.delete(item.thread);
    lane.out.close();
    lane.port.close();
    const calls = [...lane.calls.values()];
    lane.calls.clear();
    const sole = item.blame === 'sole' && calls.length === 1;
    for (const call of calls) {
      call.lane = undefined;
      if (call.id === item.culprit || sole) {
        this.#settle(call, new TroupeError('tool.failed', culpritMessage(call.tool, item.what)));
        continue;
      }
      call.lost += 1;
      if (call.lost > MAX_LOST_THREADS) {
        this.#settle(
          call,
          new TroupeError('tool.failed', lostMessage(call.tool, call.lost, item.what)),
        );
        continue;
      }
      // Nobody named: a suspect runs again alone, which only the main thread can arrange.
      this.#place(call, item.blame === 'nobody');
    }
  }

  /** Progress of a call the main thread runs. */
  progress(item: Item<'tool.progress'>): void {
    const call = this.#calls.get(item.requestId);
    if (call === undefined || call.lane !== undefined) return;
    for (const note of item.notes) call.context.progress?.(note);
  }

  /** The end of a call the main thread ran. */
  answered(item: Item<'tool.answered'>): void {
    const call = this.#calls.get(item.requestId);
    if (call === undefined || call.lane !== undefined) return;
    this.#settle(
      call,
      item.ok ? item.content : new TroupeError(item.code ?? 'tool.failed', item.content),
    );
  }

  /** The host stops: every call still out is answered `runtime.closed`, every lane closed. */
  close(): void {
    const closed = new TroupeError('runtime.closed', 'The runtime is shutting down.');
    for (const call of [...this.#calls.values()]) this.#settle(call, closed);
    for (const lane of this.#lanes.values()) {
      lane.out.close();
      lane.port.close();
    }
    this.#lanes.clear();
  }

  #place(call: PooledCall, solo: boolean): void {
    const lane = solo ? undefined : this.#pick();
    const { agentId, role } = call.context;
    if (lane !== undefined) {
      call.lane = lane;
      lane.calls.set(call.id, call);
      lane.out.push({
        type: 'call',
        callId: call.id,
        tool: call.tool,
        input: call.input,
        agentId,
        ...(role === undefined ? {} : { role }),
      });
      return;
    }
    call.lane = undefined;
    this.#deps.post({
      type: 'tool.requested',
      requestId: call.id,
      actorId: agentId,
      tool: call.tool,
      input: call.input,
      ...(solo ? { solo: true } : {}),
    });
  }

  // The least-loaded lane whose thread is not kept for a suspect. Its own
  // calls weigh twice (the thread may not have counted them yet), so one
  // turn's calls spread instead of all going where the count was lowest.
  #pick(): Lane | undefined {
    let best: Lane | undefined;
    let bestLoad = 0;
    for (const lane of this.#lanes.values()) {
      if (Atomics.load(lane.state, TOOL_STATE.closed) !== 0) continue;
      const load = Atomics.load(lane.state, TOOL_STATE.inflight) + lane.calls.size;
      if (best === undefined || load < bestLoad) {
        best = lane;
        bestLoad = load;
      }
    }
    return best;
  }

  #receive(lane: Lane, data: unknown): void {
    const items = parseToolToMain(data);
    if (items === undefined) return;
    for (const item of items) this.#handle(lane, item);
  }

  #handle(lane: Lane, item: ToolToMain): void {
    switch (item.type) {
      case 'done': {
        const call = lane.calls.get(item.callId);
        if (call === undefined) return;
        this.#settle(
          call,
          item.ok ? item.content : new TroupeError(item.code ?? 'tool.failed', item.content),
        );
        return;
      }
      case 'progress': {
        const progress = lane.calls.get(item.callId)?.context.progress;
        if (progress !== undefined) for (const note of item.notes) progress(note);
        return;
      }
      case 'approval.requested': {
        const call = lane.calls.get(item.callId);
        if (call === undefined) return;
        const { agentId, role } = call.context;
        void this.#deps
          .approve(agentId, {
            tool: item.tool,
            agentId,
            summary: item.summary,
            ...(role === undefined ? {} : { role }),
          })
          .catch(() => false)
          .then((approved) =>
            lane.out.push({
              type: 'approval.answered',
              callId: item.callId,
              requestId: item.requestId,
              approved,
            }),
          );
        return;
      }
      case 'moved': {
        // The thread is kept for a suspect: somewhere else.
        const call = lane.calls.get(item.callId);
        if (call === undefined) return;
        lane.calls.delete(item.callId);
        this.#place(call, false);
        return;
      }
      case 'ready':
      case 'idle':
      case 'fatal':
        return;
    }
  }

  #cancel(call: PooledCall): void {
    if (!this.#calls.has(call.id)) return;
    if (call.lane !== undefined) call.lane.out.push({ type: 'cancel', callId: call.id });
    else this.#deps.post({ type: 'tool.cancelled', requestId: call.id });
    this.#settle(call, cancelled(call.tool));
  }

  #settle(call: PooledCall, outcome: string | TroupeError): void {
    if (!this.#calls.delete(call.id)) return;
    call.lane?.calls.delete(call.id);
    call.lane = undefined;
    if (typeof outcome === 'string') call.resolve(outcome);
    else call.reject(outcome);
  }
}

function cancelled(tool: string): TroupeError {
  return new TroupeError('cancelled', `${tool} was stopped: the agent was cancelled.`);
}
