import { z } from 'zod';
import { plainError, TroupeError } from '../errors.js';
import { makeEvent } from './envelope.js';
import { AgentEventSchema, EVENT_TYPES, type UnsequencedEvent } from './schema.js';

// The event schemas by type, as AgentEventSchema has them (with `seq`).
const SEQUENCED: ReadonlyMap<string, z.ZodObject> = new Map(
  (AgentEventSchema.options as readonly z.ZodObject[]).map((option) => [
    String((option.shape['type'] as z.ZodLiteral<string>).value),
    option,
  ]),
);

// The event union without `seq`: what producers emit before the bus stamps it.
// Made on first use (only an event the compiled check refuses needs it):
// building ~30 object schemas costs a cold thread tens of milliseconds.
let unsequenced: z.ZodDiscriminatedUnion<z.ZodObject[]> | undefined;
function unsequencedEventSchema(): z.ZodDiscriminatedUnion<z.ZodObject[]> {
  unsequenced ??= z.discriminatedUnion(
    'type',
    [...SEQUENCED.values()].map((option) => option.omit({ seq: true })) as unknown as [
      z.ZodObject,
      ...z.ZodObject[],
    ],
  );
  return unsequenced;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** True when a value passes a schema; compiled once from the schema's definition. */
type Check = (value: unknown) => boolean;

type Schema = z.core.$ZodType;
type Refinement = z.core.$ZodCheck<never>;

// How a field's value is checked: inline for the kinds events are made of,
// through a compiled check for the rest.
const STRING = 0;
const NUMBER = 1;
const BOOLEAN = 2;
const ANY = 3;
const VALUES = 4;
const NESTED = 5;

interface Field {
  key: string;
  kind: number;
  /** Absent or undefined passes (optional). */
  optional: boolean;
  /** Present with the value undefined passes (a required unknown). */
  acceptsUndefined: boolean;
  values: ReadonlySet<unknown> | undefined;
  nested: Check | undefined;
  refinements: readonly Refinement[] | undefined;
}

/**
 * Compiles a zod schema into a check that allocates nothing on success.
 * zod's parse builds an output object and a result object per field, which
 * made validation the largest source of garbage in a worker (a fan-out
 * validates ~16 events per agent). The compiled check covers the kinds the
 * event schema uses (objects, arrays, strings, numbers, booleans, literals,
 * enums, optional, unknown) with zod's own rules and zod's own refinement
 * checks; any other kind (a record, a lazy, a catch…) is checked by zod
 * itself. Invariant: a check never accepts what zod rejects; `checkEvent`
 * asks zod whenever the check says no, so zod stays the judge of what is
 * invalid and writes the message.
 */
export function compileCheck(schema: Schema): Check {
  const field = compileField('', schema);
  if (field === undefined) return (value) => z.safeParse(schema, value).success;
  return (value) => (value === undefined ? field.acceptsUndefined : passes(field, value));
}

// One field's plan, or undefined when its kind is left to zod.
function compileField(key: string, schema: Schema): Field | undefined {
  let inner = schema;
  const optional = isPlainOptional(schema);
  if (optional) inner = (schema._zod.def as z.core.$ZodOptionalDef).innerType;
  const def = inner._zod.def as z.core.$ZodTypeDef & { coerce?: boolean; format?: string };
  if (def.coerce === true || def.format !== undefined) return undefined;
  const refinements = def.checks !== undefined && def.checks.length > 0 ? def.checks : undefined;
  if (refinements?.some((check) => check._zod.def.when !== undefined)) return undefined;
  let kind: number;
  let values: ReadonlySet<unknown> | undefined;
  let nested: Check | undefined;
  switch (def.type) {
    case 'string':
      kind = STRING;
      break;
    case 'number':
      kind = NUMBER;
      break;
    case 'boolean':
      kind = BOOLEAN;
      break;
    case 'unknown':
    case 'any':
      kind = ANY;
      break;
    case 'literal':
    case 'enum':
      kind = VALUES;
      values = inner._zod.values as ReadonlySet<unknown> | undefined;
      if (values === undefined) return undefined;
      break;
    case 'array':
      if (refinements !== undefined) return undefined;
      kind = NESTED;
      nested = arrayCheck(def as z.core.$ZodArrayDef);
      break;
    case 'object':
      if (refinements !== undefined) return undefined;
      kind = NESTED;
      nested = objectCheck(inner);
      break;
    default:
      // A kind this compiler does not know: zod checks it (and accepts what it accepts).
      kind = NESTED;
      nested = (value) => z.safeParse(inner, value).success;
  }
  return {
    key,
    kind,
    optional,
    acceptsUndefined: optional || z.safeParse(inner, undefined).success,
    values,
    nested,
    refinements: kind === NESTED ? undefined : refinements,
  };
}

// `.optional()` accepts undefined and yields nothing in its place; exactOptional
// (same def type) does not accept undefined, and an optional default substitutes one.
function isPlainOptional(schema: Schema): boolean {
  const { traits, def } = schema._zod;
  if (def.type !== 'optional') return false;
  if (!traits.has('$ZodOptional') || traits.has('$ZodExactOptional')) return false;
  return (def as z.core.$ZodOptionalDef).innerType._zod.optin !== 'defaulted';
}

// zod runs refinements after the type check, on a payload; one scratch
// payload serves every call (a refinement allocates only when it fails).
const scratch: z.core.ParsePayload = { value: undefined, issues: [] };

function refine(refinements: readonly Refinement[], value: unknown): boolean {
  scratch.value = value;
  let ok = true;
  for (const refinement of refinements) {
    refinement._zod.check(scratch as z.core.ParsePayload<never>);
    if (scratch.issues.length > 0) {
      scratch.issues.length = 0;
      ok = false;
      break;
    }
  }
  scratch.value = undefined;
  return ok;
}

// A value that is not undefined against one field's plan.
function passes(field: Field, value: unknown): boolean {
  switch (field.kind) {
    case STRING:
      if (typeof value !== 'string') return false;
      break;
    case NUMBER:
      if (typeof value !== 'number' || !Number.isFinite(value)) return false;
      break;
    case BOOLEAN:
      if (typeof value !== 'boolean') return false;
      break;
    case ANY:
      return true;
    case VALUES:
      if (!(field.values as ReadonlySet<unknown>).has(value)) return false;
      break;
    default:
      return (field.nested as Check)(value);
  }
  return field.refinements === undefined || refine(field.refinements, value);
}

function arrayCheck(def: z.core.$ZodArrayDef): Check {
  const element = compileCheck(def.element);
  return (value) => {
    if (!Array.isArray(value)) return false;
    for (const item of value) if (!element(item)) return false;
    return true;
  };
}

function objectCheck(schema: Schema): Check {
  const def = schema._zod.def as z.core.$ZodObjectDef;
  // Unknown keys are stripped by a plain z.object (no catchall): they pass.
  // Any other object (strict, loose, with a catchall) is zod's.
  const fields: Field[] = [];
  let known = def.catchall === undefined;
  for (const [key, schema] of Object.entries(def.shape)) {
    const { optin } = schema._zod;
    // A required key must be present (`in`, as zod asks) and valid; an
    // optional one may be absent. A defaulted key is zod's.
    if (optin !== undefined && !isPlainOptional(schema)) known = false;
    const field = compileField(key, schema);
    if (field === undefined) known = false;
    else fields.push(field);
  }
  if (!known) return (value) => z.safeParse(schema, value).success;
  return (value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
    const record = value as Record<string, unknown>;
    for (const field of fields) {
      const item = record[field.key];
      if (item === undefined) {
        if (field.optional) continue;
        if (!field.acceptsUndefined || !(field.key in record)) return false;
      } else if (!passes(field, item)) {
        return false;
      }
    }
    return true;
  };
}

// One compiled check per event type, compiled on its first event: the
// discriminated union's own lookup, without zod's per-field allocations.
const CHECKS = new Map<string, Check>();
function checkOf(type: string): Check | undefined {
  let check = CHECKS.get(type);
  if (check === undefined) {
    const option = SEQUENCED.get(type);
    if (option === undefined) return undefined;
    check = compileCheck(option.omit({ seq: true }));
    CHECKS.set(type, check);
  }
  return check;
}

/**
 * Validates an event where it is produced. Each event is validated exactly
 * once: worker events in their worker (in parallel, off the main thread),
 * then adopted by the bus without a second check; main-thread events by the
 * runtime's sink, or by `EventBus.publish` for events published directly. An invalid event becomes a `callback.error` event naming what was
 * wrong, never dropped silently.
 */
export function checkEvent(event: UnsequencedEvent): UnsequencedEvent {
  const check = checkOf(event.type);
  if (check?.(event) === true) return event;
  // The compiled check said no (or does not know the type): zod decides and explains.
  const parsed = unsequencedEventSchema().safeParse(event);
  if (parsed.success) return event;
  const error = new TroupeError(
    'runtime.protocol',
    `An invalid ${String((event as { type?: unknown }).type)} event was not published: ${z.prettifyError(parsed.error)}`,
  );
  return makeEvent(
    {
      runId: String(event.runId),
      agentId: typeof event.agentId === 'string' ? event.agentId : 'runtime',
    },
    { type: 'callback.error', callback: 'event validation', error: plainError(error) },
  );
}

/**
 * Validates an event published straight onto a bus: the compiled check, and
 * zod when it says no, which throws a ZodError saying what is wrong.
 */
export function assertEvent(event: UnsequencedEvent): void {
  if (checkOf(event.type)?.(event) === true) return;
  unsequencedEventSchema().parse(event);
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
