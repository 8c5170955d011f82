import type { AgentEvent } from '../events/schema.js';
import { createJsonRedactor } from '../util/redact.js';
import type { EventRenderer } from './renderer.js';
import type { TerminalOutput } from './terminal.js';

/**
 * `--json`: one event per line (NDJSON) with secrets redacted, and nothing
 * else on this output. Every line parses with AgentEventSchema.
 */
export class JsonRenderer implements EventRenderer {
  readonly #output: TerminalOutput;
  readonly #serialize: (value: unknown, made?: string) => string;
  readonly writesJson = true;

  constructor(options: { output: TerminalOutput; env?: NodeJS.ProcessEnv | undefined }) {
    this.#output = options.output;
    this.#serialize = createJsonRedactor(options.env);
  }

  handle(event: AgentEvent, json?: string): void {
    this.#output.write(`${this.#serialize(event, json)}\n`);
  }

  finish(): void {
    // NDJSON has no footer: a consumer reads until run.finished or end of input.
  }
}
