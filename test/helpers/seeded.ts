/**
 * A seeded sequence of integers, the same every run (a linear congruential
 * generator): `next()` is in [0, 2^31), `next(n)` in [0, n).
 */
export function seededIntegers(seed: number): (below?: number) => number {
  let state = seed;
  return (below) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return below === undefined ? state : state % below;
  };
}
