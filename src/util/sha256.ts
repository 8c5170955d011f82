import { createHash, type Hash, hash } from 'node:crypto';

/**
 * The SHA-256 of `text` (UTF-8) in hex. One call instead of a Hash object
 * per digest where Node has `crypto.hash` (20.12 and later): the journal
 * hashes every model request and every spawn.
 */
export const sha256Hex: (text: string) => string =
  typeof hash === 'function'
    ? (text) => hash('sha256', text, 'hex')
    : (text) => createHash('sha256').update(text).digest('hex');

/**
 * A SHA-256 of text fed in pieces, for a text that grows (an agent's
 * history): `digestWith(tail)` is the hex digest of everything fed so far
 * followed by `tail`, and feeding goes on after it.
 */
export class RunningSha256 {
  readonly #hash: Hash = createHash('sha256');

  update(text: string): void {
    this.#hash.update(text);
  }

  digestWith(tail: string): string {
    return this.#hash.copy().update(tail).digest('hex');
  }
}
