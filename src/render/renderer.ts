import type { AgentEvent } from '../events/schema.js';

/** Something that shows a run from its events: the live view, plain lines, or NDJSON. */
export interface EventRenderer {
  /** Takes one event, in seq order. */
  handle(event: AgentEvent): void;
  /**
   * Takes one event into the run's state without showing it (a filtered
   * replay), so the summary still tells the whole run.
   */
  observe?(event: AgentEvent): void;
  /** The run is over (or the replay ended): draw the last frame and the summary. */
  finish(): void;
}
