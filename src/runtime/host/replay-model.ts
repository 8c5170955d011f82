import type { Model, ModelSpec } from '../../model/model.js';
import {
  emptyUsage,
  type ModelCallOptions,
  type ModelRequest,
  type ModelResponse,
  type ModelStreamPart,
} from '../../model/types.js';

/**
 * A model that answers an actor's first calls from its journal and the rest
 * live. A NATS worker node that takes over an actor from a dead node gives it
 * the responses the dead node recorded: call number n (from 1) returns the
 * n-th recorded response, with no usage (no new tokens were spent), until the
 * records run out. Every live response is handed to `record` with its call
 * number, and returned once `record` resolves (it is stored), so a node that
 * dies loses only the calls it had in flight: the next node continues from
 * every response this one returned.
 *
 * Replay is by position: an actor restarted from its task on the same tools
 * asks the same questions in the same order, so the n-th answer fits.
 */
export class ReplayModel implements Model {
  readonly #inner: Model;
  readonly #replay: readonly ModelResponse[];
  readonly #record: ((step: number, response: ModelResponse) => Promise<void>) | undefined;
  #calls = 0;

  constructor(
    inner: Model,
    replay: readonly ModelResponse[],
    record: ((step: number, response: ModelResponse) => Promise<void>) | undefined,
  ) {
    this.#inner = inner;
    this.#replay = replay;
    this.#record = record;
  }

  get spec(): ModelSpec {
    return this.#inner.spec;
  }

  /** Calls answered from the journal so far. */
  get replayed(): number {
    return Math.min(this.#calls, this.#replay.length);
  }

  async complete(request: ModelRequest, options?: ModelCallOptions): Promise<ModelResponse> {
    this.#calls += 1;
    const step = this.#calls;
    const recorded = this.#replay[step - 1];
    if (recorded !== undefined) return replayed(recorded);
    const response = await this.#inner.complete(request, options);
    await this.#record?.(step, response);
    return response;
  }

  async *stream(request: ModelRequest, options?: ModelCallOptions): AsyncIterable<ModelStreamPart> {
    this.#calls += 1;
    const step = this.#calls;
    const recorded = this.#replay[step - 1];
    if (recorded !== undefined) {
      yield { type: 'finish', response: replayed(recorded) };
      return;
    }
    for await (const part of this.#inner.stream(request, options)) {
      if (part.type === 'finish') await this.#record?.(step, part.response);
      yield part;
    }
  }
}

// A replayed response costs nothing now: the tokens were counted when it was made.
function replayed(response: ModelResponse): ModelResponse {
  return { ...response, usage: emptyUsage() };
}
