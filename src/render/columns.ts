import { cutToWidth, displayWidth, padToWidth } from './terminal.js';

/** The cells of one agent row, before they are fitted to a width. */
export interface RowCells {
  /** Tree guide, status glyph and id: always shown. */
  left: string;
  role: string;
  activity: string;
  steps: string;
  tokens: string;
  subtree: string;
  cost: string;
  time: string;
  progress: string;
}

type Optional = 'role' | 'steps' | 'subtree' | 'cost';

/** Which columns a frame shows and how wide each is. */
export interface ColumnPlan {
  left: number;
  role: number | undefined;
  activity: number | undefined;
  steps: number | undefined;
  tokens: number;
  subtree: number | undefined;
  cost: number | undefined;
  time: number;
  progress: number | undefined;
}

/** The activity column never shrinks below this; under it, it is left out. */
export const MIN_ACTIVITY = 10;
/** The activity column never grows past this; the progress note gets the rest. */
export const MAX_ACTIVITY = 44;
const MIN_PROGRESS = 12;

/**
 * Plans the columns of an agent table for `width` columns. Status, id,
 * tokens and time are always shown; then, while they fit, the activity (at
 * least MIN_ACTIVITY wide), the subtree total, the role, the cost and the
 * step count, in that order of importance. The activity then grows to its
 * longest text (at most MAX_ACTIVITY) and the progress note takes what is left.
 */
export function planColumns(rows: readonly RowCells[], width: number): ColumnPlan {
  const natural = (key: keyof RowCells): number => {
    let widest = 0;
    for (const row of rows) widest = Math.max(widest, displayWidth(row[key]));
    return widest;
  };
  const left = Math.min(natural('left'), Math.max(12, Math.floor(width * 0.45)));
  const tokens = natural('tokens');
  const time = natural('time');
  let used = left + 1 + tokens + 1 + time;
  const plan: ColumnPlan = {
    left,
    role: undefined,
    activity: undefined,
    steps: undefined,
    tokens,
    subtree: undefined,
    cost: undefined,
    time,
    progress: undefined,
  };
  if (used + 1 + MIN_ACTIVITY <= width) {
    plan.activity = MIN_ACTIVITY;
    used += 1 + MIN_ACTIVITY;
  }
  for (const key of ['subtree', 'role', 'cost', 'steps'] as const satisfies readonly Optional[]) {
    const size = natural(key);
    if (size === 0 || used + 1 + size > width) continue;
    plan[key] = size;
    used += 1 + size;
  }
  if (plan.activity !== undefined) {
    const grow = Math.min(Math.max(natural('activity'), MIN_ACTIVITY), MAX_ACTIVITY) - MIN_ACTIVITY;
    const extra = Math.max(0, Math.min(grow, width - used));
    plan.activity += extra;
    used += extra;
  }
  if (natural('progress') > 0 && width - used - 1 >= MIN_PROGRESS) {
    plan.progress = width - used - 1;
  }
  return plan;
}

function cell(text: string, size: number | undefined): string[] {
  if (size === undefined) return [];
  return [padToWidth(cutToWidth(text, size), size)];
}

/** One row laid out by `plan`: never wider than the plan's width. */
export function fitRow(row: RowCells, plan: ColumnPlan): string {
  return [
    ...cell(row.left, plan.left),
    ...cell(row.role, plan.role),
    ...cell(row.activity, plan.activity),
    ...cell(row.steps, plan.steps),
    ...cell(row.tokens, plan.tokens),
    ...cell(row.subtree, plan.subtree),
    ...cell(row.cost, plan.cost),
    ...cell(row.time, plan.time),
    ...(plan.progress === undefined || row.progress === ''
      ? []
      : [cutToWidth(row.progress, plan.progress)]),
  ]
    .join(' ')
    .trimEnd();
}

/**
 * Joins header parts with `separator`, leaving out the least important ones
 * (highest `drop` first) until the line fits `width`; what is left in the
 * end is cut with an ellipsis.
 */
export function fitParts(
  parts: ReadonlyArray<{ text: string; drop: number }>,
  separator: string,
  width: number,
): string {
  let kept = [...parts];
  const join = (list: typeof kept): string => list.map((part) => part.text).join(separator);
  while (displayWidth(join(kept)) > width) {
    const worst = Math.max(...kept.map((part) => part.drop));
    if (worst <= 0) break;
    const index = kept.findIndex((part) => part.drop === worst);
    kept = kept.filter((_, position) => position !== index);
  }
  return cutToWidth(join(kept), width);
}
