import { createHash, hash } from 'node:crypto';

/**
 * The SHA-256 of `text` (UTF-8) in hex. One call instead of a Hash object
 * per digest where Node has `crypto.hash` (20.12 and later): the journal
 * hashes every model request and every spawn.
 */
export const sha256Hex: (text: string) => string =
  typeof hash === 'function'
    ? (text) => hash('sha256', text, 'hex')
    : (text) => createHash('sha256').update(text).digest('hex');
