/**
 * Locale-free text helpers. `localeCompare` and `toLocaleString` load ICU's
 * collation or number-formatting data on their first call in each thread
 * (~6–10 ms apiece here), on the path to an agent's first model call; and
 * an order that depends on the machine's locale would make a tool's output
 * differ between machines. These give the same answer everywhere.
 */

/**
 * Orders names alphabetically without regard to case ("apple" < "Banana" <
 * "cherry"), then by their exact characters ("README" before "readme"):
 * Unicode's default case folding, no locale.
 */
export function compareNames(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  if (x !== y) return x < y ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Orders names as `compareNames` does, except that runs of digits compare
 * as numbers: "researcher-2" before "researcher-10" (a natural sort).
 */
export function compareNatural(a: string, b: string): number {
  const left = a.match(RUNS) ?? [];
  const right = b.match(RUNS) ?? [];
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    const x = left[index] ?? '';
    const y = right[index] ?? '';
    if (x === y) continue;
    if (DIGITS.test(x) && DIGITS.test(y)) {
      // As numbers, without their size limit: fewer digits (leading zeros aside) is smaller.
      const p = x.replace(/^0+(?=\d)/, '');
      const q = y.replace(/^0+(?=\d)/, '');
      if (p.length !== q.length) return p.length - q.length;
      if (p !== q) return p < q ? -1 : 1;
      continue;
    }
    const p = x.toLowerCase();
    const q = y.toLowerCase();
    if (p !== q) return p < q ? -1 : 1;
  }
  if (left.length !== right.length) return left.length - right.length;
  // Equal but for case or leading zeros: the exact characters decide.
  return compareNames(a, b);
}

// A name in runs of digits and runs of anything else; a run of digits alone.
const RUNS = /\d+|\D+/g;
const DIGITS = /^\d+$/;

/** A whole number with commas between thousands, as `toLocaleString('en-US')` writes it ("1,234,567"); other numbers are rounded to one first. */
export function groupDigits(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const digits = String(Math.abs(Math.round(value)));
  // Past 2^53 String() may write an exponent: leave such numbers as they are.
  if (!/^\d+$/.test(digits)) return String(Math.round(value));
  const sign = Math.round(value) < 0 ? '-' : '';
  return `${sign}${digits.replace(/\B(?=(\d{3})+$)/g, ',')}`;
}
