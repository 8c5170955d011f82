import { describe, expect, it } from 'vitest';
import { compareNames, groupDigits } from '../../src/util/text-order.js';

describe('groupDigits', () => {
  it('writes whole numbers as en-US does, commas between thousands', () => {
    // Seeded: the same numbers every run, from 0 to past 2^53.
    let seed = 17;
    const next = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed;
    };
    const samples = [0, 1, 12, 123, 999, 1000, 1001, 999_999, 1_000_000, -1, -1234, 2 ** 53 - 1];
    for (let index = 0; index < 500; index += 1)
      samples.push(
        Math.floor((next() / 2_147_483_648) * 10 ** (next() % 16)) * (next() % 5 === 0 ? -1 : 1),
      );
    // (-0 is written "0": a count is never negative zero.)
    for (const value of samples.map((sample) => sample + 0))
      expect(groupDigits(value)).toBe(value.toLocaleString('en-US'));
  });

  it('rounds other numbers to a whole one, and leaves what is not finite as it is', () => {
    expect(groupDigits(1234.6)).toBe('1,235');
    expect(groupDigits(-0.4)).toBe('0');
    expect(groupDigits(Number.NaN)).toBe('NaN');
    expect(groupDigits(Number.POSITIVE_INFINITY)).toBe('Infinity');
    expect(groupDigits(1e22)).toBe('1e+22');
  });
});

describe('compareNames', () => {
  it('orders without regard to case, then by exact characters, the same on every machine', () => {
    const names = [
      'cherry',
      'Banana',
      'apple',
      'readme',
      'README',
      'Readme',
      'a10',
      'a2',
      'Émile',
      'zeta',
      '_x',
      '.env',
    ];
    expect([...names].sort(compareNames)).toEqual([
      '.env',
      '_x',
      'a10',
      'a2',
      'apple',
      'Banana',
      'cherry',
      'README',
      'Readme',
      'readme',
      'zeta',
      'Émile',
    ]);
    expect(compareNames('same', 'same')).toBe(0);
  });
});
