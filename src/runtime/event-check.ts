import { z } from 'zod';
import { TroupeError } from '../errors.js';
import { AgentEventSchema, EVENT_TYPES, type UnsequencedEvent } from '../events/schema.js';
import { plainError } from './runtime-support.js';

// The event union without `seq`: what producers emit before the bus stamps it.
const UnsequencedEventSchema = z.discriminatedUnion(
  'type',
  (AgentEventSchema.options as readonly z.ZodObject[]).map((option) =>
    option.omit({ seq: true }),
  ) as unknown as [z.ZodObject, ...z.ZodObject[]],
);

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/**
 * Validates an event where it is produced. The runtime validates each event
 * exactly once: worker events in their worker (in parallel, off the main
 * thread), main-thread events in the main thread; its bus then only stamps
 * the seq. An invalid event becomes a `callback.error` event naming what was
 * wrong, never dropped silently.
 */
export function checkEvent(event: UnsequencedEvent): UnsequencedEvent {
  const parsed = UnsequencedEventSchema.safeParse(event);
  if (parsed.success) return event;
  const error = new TroupeError(
    'runtime.protocol',
    `An invalid ${String((event as { type?: unknown }).type)} event was not published: ${z.prettifyError(parsed.error)}`,
  );
  return {
    v: 1,
    ts: Date.now(),
    runId: String(event.runId),
    agentId: typeof event.agentId === 'string' ? event.agentId : 'runtime',
    type: 'callback.error',
    callback: 'event validation',
    error: plainError(error),
  };
}

/**
 * The main thread's cheap check of an event a worker already validated: the
 * envelope fields the bus and the run rely on. True when it may be published.
 */
export function looksLikeEvent(event: unknown, runId: string): event is UnsequencedEvent {
  if (typeof event !== 'object' || event === null) return false;
  const candidate = event as Partial<Record<'v' | 'type' | 'agentId' | 'runId' | 'ts', unknown>>;
  return (
    candidate.v === 1 &&
    typeof candidate.type === 'string' &&
    KNOWN_TYPES.has(candidate.type) &&
    typeof candidate.agentId === 'string' &&
    typeof candidate.ts === 'number' &&
    candidate.runId === runId
  );
}
