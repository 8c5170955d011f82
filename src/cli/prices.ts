import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../errors.js';
import type { PriceFunction } from '../render/run-state.js';
import type { ModelPrice } from '../runtime/budget/usage-ledger.js';
import { usageError } from './context.js';

/**
 * A `--prices` file: US dollars per million tokens, by model name, as
 * `--model` takes it (`claude-sonnet-4-6`), or `offline` / `scripted` for
 * those providers.
 */
export const PriceTableSchema = z.record(
  z.string().min(1),
  z
    .object({
      inputPerMTok: z.number().finite().nonnegative(),
      outputPerMTok: z.number().finite().nonnegative(),
    })
    .strict(),
);
export type PriceTable = z.infer<typeof PriceTableSchema>;

/** Reads and validates a `--prices` file; a usage error (exit 2) says what is wrong with it. */
export function loadPriceTable(cwd: string, file: string): PriceTable {
  const absolute = resolve(cwd, file);
  if (!existsSync(absolute)) throw usageError(`--prices ${file}: no such file (${absolute}).`);
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(absolute, 'utf8'));
  } catch (error) {
    throw usageError(`--prices ${file}: not valid JSON: ${errorMessage(error)}`);
  }
  const parsed = PriceTableSchema.safeParse(data);
  if (!parsed.success) {
    throw usageError(
      `--prices ${file}: expected { "<model>": { "inputPerMTok": n, "outputPerMTok": n } } in US dollars per million tokens:\n${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}

/**
 * The model name a price table is keyed by, from the model label of an
 * `agent.spawned` event (`anthropic/claude-sonnet-4-6`, `offline (heuristic)`):
 * the same name the runtime's usage ledger prices by.
 */
export function priceKey(label: string): string {
  if (label === 'offline (heuristic)') return 'offline';
  const slash = label.indexOf('/');
  return slash === -1 ? label : label.slice(slash + 1);
}

/** Prices usage for the renderers, from a price table; undefined for models it does not list. */
export function createPriceFunction(table: Readonly<Record<string, ModelPrice>>): PriceFunction {
  return (label, usage) => {
    const price = label === undefined ? undefined : table[priceKey(label)];
    if (price === undefined) return undefined;
    return (
      (usage.inputTokens * price.inputPerMTok + usage.outputTokens * price.outputPerMTok) / 1e6
    );
  };
}
