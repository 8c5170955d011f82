import { describe, expect, it } from 'vitest';
import { compareNames, compareNatural, groupDigits } from '../../src/util/text-order.js';
import { seededIntegers } from '../helpers/seeded.js';

describe('groupDigits', () => {
  it('writes whole numbers as en-US does, commas between thousands', () => {
    // Seeded: the same numbers every run, from 0 to past 2^53.
    const next = seededIntegers(17);
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

describe('compareNatural', () => {
  it('orders runs of digits as numbers', () => {
    const ids = [
      'researcher-10',
      'researcher-2',
      'analyst-1',
      'researcher-1',
      'Researcher-3',
      'worker-007',
      'worker-7',
      'a',
      'a2b',
      'a10b',
      'a2',
      '',
    ];
    expect([...ids].sort(compareNatural)).toEqual([
      '',
      'a',
      'a2',
      'a2b',
      'a10b',
      'analyst-1',
      'researcher-1',
      'researcher-2',
      'Researcher-3',
      'researcher-10',
      // The same number: the exact characters decide.
      'worker-007',
      'worker-7',
    ]);
  });

  it('orders agent ids as a numeric collator does', () => {
    // Seeded ids of the shapes runs have ("role-N", nested "role-N.M"), checked pair by pair.
    const next = seededIntegers(5);
    const roles = ['researcher', 'analyst', 'reporter', 'worker'];
    const ids = Array.from({ length: 200 }, () => {
      const role = roles[next(roles.length)] ?? 'worker';
      return next(3) === 0 ? `${role}-${next(30)}.${next(12)}` : `${role}-${next(2000)}`;
    });
    const collator = new Intl.Collator('en', { numeric: true });
    for (const a of ids)
      for (const b of ids.slice(0, 40))
        expect(Math.sign(compareNatural(a, b))).toBe(Math.sign(collator.compare(a, b)));
  });
});
