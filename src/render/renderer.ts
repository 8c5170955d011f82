import type { AgentEvent } from '../events/schema.js';

/** Something that shows a run from its events: the live view, plain lines, or NDJSON. */
export interface EventRenderer {
  /**
   * Takes one event, in seq order. `json`: the event's JSON text, when the
   * caller has it and the renderer says it writes JSON (`writesJson`).
   */
  handle(event: AgentEvent, json?: string): void;
  /** It writes events as JSON: give it their text (`EventBus.json`) instead of having it serialize them again. */
  readonly writesJson?: boolean;
  /**
   * Takes one event into the run's state without showing it (a filtered
   * replay), so the summary still tells the whole run.
   */
  observe?(event: AgentEvent): void;
  /** The run is over (or the replay ended): draw the last frame and the summary. */
  finish(): void;
}
