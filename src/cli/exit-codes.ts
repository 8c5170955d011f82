/** Exit codes of the troupe CLI (a module of its own so `troupe --help` loads nothing else). */
export const EXIT = Object.freeze({
  ok: 0,
  failed: 1,
  usage: 2,
  partial: 3,
  /** The run's files could not be written (disk full, I/O error): it stopped; resume it once there is room. */
  storage: 4,
  interrupted: 130,
});
