import type { z } from 'zod';

/**
 * Repairs the obvious mistakes models make in tool arguments before they are
 * validated: "5" where a number is expected, 5 where a string is expected,
 * "true" for a boolean, and a JSON string holding the expected object or
 * array. Anything that does not fit one of those stays as it was, so the
 * schema reports it.
 */
export function coerceToSchema(value: unknown, schema: z.ZodType): unknown {
  const def = unwrap(schema);
  if (def === undefined) return value;
  switch (def.type) {
    case 'number':
    case 'int':
    case 'bigint': {
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) {
        return Number(value);
      }
      return value;
    }
    case 'string': {
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      return value;
    }
    case 'boolean': {
      if (value === 'true') return true;
      if (value === 'false') return false;
      return value;
    }
    case 'object': {
      const parsed = parseJsonText(value, 'object');
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return parsed;
      const shape = (def as SchemaDef & { shape: Record<string, z.ZodType> }).shape;
      const out: Record<string, unknown> = { ...(parsed as Record<string, unknown>) };
      for (const [key, fieldSchema] of Object.entries(shape)) {
        if (key in out) out[key] = coerceToSchema(out[key], fieldSchema);
      }
      return out;
    }
    case 'array': {
      const parsed = parseJsonText(value, 'array');
      if (!Array.isArray(parsed)) return parsed;
      const element = (def as SchemaDef & { element: z.ZodType }).element;
      return parsed.map((item) => coerceToSchema(item, element));
    }
    default:
      return value;
  }
}

interface SchemaDef {
  type: string;
}

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly']);

// Optional, nullable, default and the like wrap the schema that says what is expected.
function unwrap(schema: z.ZodType): SchemaDef | undefined {
  let current: z.ZodType | undefined = schema;
  for (let depth = 0; current !== undefined && depth < 10; depth += 1) {
    const def: SchemaDef & { innerType?: z.ZodType } = (
      current as unknown as { def: SchemaDef & { innerType?: z.ZodType } }
    ).def;
    if (!WRAPPERS.has(def.type)) return def;
    current = def.innerType;
  }
  return undefined;
}

function parseJsonText(value: unknown, expected: 'object' | 'array'): unknown {
  if (typeof value !== 'string') return value;
  const trimmed = value.trim();
  const opens = expected === 'object' ? '{' : '[';
  if (!trimmed.startsWith(opens)) return value;
  try {
    return JSON.parse(trimmed);
  } catch {
    return value;
  }
}
