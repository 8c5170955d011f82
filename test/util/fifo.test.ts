import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/util/fifo.js';

describe('Fifo', () => {
  it('gives items back in the order they came, across its compactions, pushes and shifts interleaved', () => {
    const queue = new Fifo<number>();
    const model: number[] = [];
    let next = 0;
    let seed = 7;
    const roll = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let step = 0; step < 50_000; step += 1) {
      if (roll() < 0.55) {
        queue.push(next);
        model.push(next);
        next += 1;
      } else {
        expect(queue.shift()).toBe(model.shift());
      }
      expect(queue.length).toBe(model.length);
    }
    expect(queue.drain()).toEqual(model);
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
    queue.push(1);
    expect(queue.drain()).toEqual([1]);
  });
});
