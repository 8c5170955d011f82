import type { AgentEvent } from '../events/schema.js';
import { createRedactor, redactValue } from '../util/redact.js';
import type { EventRenderer } from './renderer.js';
import type { TerminalOutput } from './terminal.js';

/**
 * `--json`: one event per line (NDJSON) with secrets redacted, and nothing
 * else on this output. Every line parses with AgentEventSchema.
 */
export class JsonRenderer implements EventRenderer {
  readonly #output: TerminalOutput;
  readonly #redact: (text: string) => string;

  constructor(options: { output: TerminalOutput; env?: NodeJS.ProcessEnv | undefined }) {
    this.#output = options.output;
    this.#redact = createRedactor(options.env);
  }

  handle(event: AgentEvent): void {
    this.#output.write(`${JSON.stringify(redactValue(event, this.#redact))}\n`);
  }

  finish(): void {
    // NDJSON has no footer: a consumer reads until run.finished or end of input.
  }
}
