/** Exit codes of the troupe CLI (a module of its own so `troupe --help` loads nothing else). */
export const EXIT = Object.freeze({ ok: 0, failed: 1, usage: 2, partial: 3, interrupted: 130 });
