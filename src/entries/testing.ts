/**
 * `troupe/testing`: the deterministic scripted model for tests, and the
 * envelope parser to check events a test collected.
 */

export type { ScriptedCall } from '../model/providers/scripted.js';
export { ScriptedModel } from '../model/providers/scripted.js';
export type { Script, ScriptMatch, ScriptStep } from '../model/script.js';
export { ScriptSchema } from '../model/script.js';
