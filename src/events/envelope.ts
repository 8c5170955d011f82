import type { EventPayload, UnsequencedEvent } from './schema.js';

/** Who an event is about: the envelope fields every producer fills in. */
export interface EventSource {
  readonly runId: string;
  readonly agentId: string;
  readonly parentId?: string | undefined;
  readonly role?: string | undefined;
}

/**
 * Builds an event from its source and payload: the one place the envelope
 * `{ v, ts, runId, agentId, parentId?, role? }` is made. Keys come in the
 * envelope's order, then the payload's own, without a temporary per
 * optional key. `ts` is the producer's clock; the bus restamps it (see
 * EventBus), so traces are monotonic in `seq`.
 *
 * @example
 * bus.publish(makeEvent({ runId, agentId: 'coordinator' }, { type: 'run.started', task }));
 */
export function makeEvent(source: EventSource, payload: EventPayload): UnsequencedEvent {
  const event: Record<string, unknown> = {
    v: 1,
    ts: Date.now(),
    runId: source.runId,
    agentId: source.agentId,
  };
  if (source.parentId !== undefined) event['parentId'] = source.parentId;
  if (source.role !== undefined) event['role'] = source.role;
  // The one cast of the pipeline: the payload is a member of the union
  // without its envelope, and the envelope was just filled in.
  return Object.assign(event, payload) as unknown as UnsequencedEvent;
}
