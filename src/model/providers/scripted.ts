import { TroupeError } from '../../errors.js';
import type { Model, ModelSpec } from '../model.js';
import {
  type ParsedScript,
  type ParsedScriptStep,
  type Script,
  type ScriptMatch,
  ScriptSchema,
} from '../script.js';
import type {
  Message,
  ModelCallOptions,
  ModelRequest,
  ModelResponse,
  ModelStreamPart,
  ToolCall,
} from '../types.js';

/** One call the scripted model answered, for assertions. */
export interface ScriptedCall {
  /** 1-based call number. */
  call: number;
  request: ModelRequest;
  /** Index of the script step that answered. */
  stepIndex: number;
}

/**
 * The deterministic model for tests and benchmarks. Its script is plain data
 * (see ScriptSchema), so a worker thread rebuilds the same model from its
 * spec. It records every call and fails clearly when the script runs out.
 *
 * @example
 * const model = new ScriptedModel({ steps: [
 *   { toolCalls: [{ name: 'read_file', arguments: { path: 'a.md' } }] },
 *   { content: 'Done.' },
 * ] });
 */
export class ScriptedModel implements Model {
  readonly spec: ModelSpec;
  readonly calls: ScriptedCall[] = [];
  readonly #script: ParsedScript;
  readonly #used: boolean[];

  constructor(script: Script) {
    this.#script = parseScript(script);
    this.#used = this.#script.steps.map(() => false);
    this.spec = { provider: 'scripted', script };
  }

  async complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    const callNumber = this.calls.length + 1;
    const index = this.#pick(request, callNumber);
    this.calls.push({ call: callNumber, request: snapshot(request), stepIndex: index });
    const step = this.#script.steps[index] as ParsedScriptStep;
    if (!step.repeat) this.#used[index] = true;

    if (step.cpuMs !== undefined && step.cpuMs > 0) busyWait(step.cpuMs);
    await delay(step.latencyMs ?? this.#script.defaultLatencyMs, options.signal);
    if (step.error !== undefined) {
      throw new TroupeError(step.error.code, step.error.message, {
        details: {
          provider: 'scripted',
          ...(step.error.status === undefined ? {} : { status: step.error.status }),
        },
      });
    }
    return buildResponse(step, callNumber);
  }

  async *stream(
    request: ModelRequest,
    options: ModelCallOptions = {},
  ): AsyncGenerator<ModelStreamPart> {
    const response = await this.complete(request, options);
    if (response.thinking !== undefined) yield { type: 'thinking-delta', text: response.thinking };
    // Word-sized deltas, so consumers of streams see more than one part.
    for (const piece of response.content.match(/\S+\s*|\s+/g) ?? []) {
      yield { type: 'text-delta', text: piece };
    }
    for (const [index, toolCall] of response.toolCalls.entries()) {
      yield {
        type: 'tool-call-delta',
        index,
        id: toolCall.id,
        name: toolCall.name,
        argumentsDelta: toolCall.raw,
      };
    }
    yield { type: 'finish', response };
  }

  /** Number of script steps not yet used (repeating steps never count). */
  get remaining(): number {
    return this.#script.steps.filter((step, index) => !step.repeat && !this.#used[index]).length;
  }

  /** Throws when steps that were meant to be used were not. */
  assertComplete(): void {
    const left = this.remaining;
    if (left > 0) {
      throw new TroupeError(
        'model.script_exhausted',
        `The scripted model has ${left} unused step${left === 1 ? '' : 's'} after ${this.calls.length} call${this.calls.length === 1 ? '' : 's'}.`,
      );
    }
  }

  #pick(request: ModelRequest, callNumber: number): number {
    const index = this.#script.steps.findIndex(
      (step, i) => !this.#used[i] && matches(step.match, request, callNumber),
    );
    if (index === -1) {
      const last = request.messages.at(-1);
      throw new TroupeError(
        'model.script_exhausted',
        `The scripted model has no step for call ${callNumber} from ${request.caller?.name ?? 'an agent'}${request.caller?.role ? ` (role ${request.caller.role})` : ''}; the last message was ${last === undefined ? 'none' : `a ${last.role} message: ${JSON.stringify(last.content.slice(0, 120))}`}. Add a step to the script.`,
        { details: { call: callNumber } },
      );
    }
    return index;
  }
}

// A worker builds one ScriptedModel per actor from the same spec object; parsing
// each script once keeps a fan-out of thousands from re-validating it each time.
// Parsed scripts are never mutated, so sharing them is safe.
const parsedScripts = new WeakMap<Script, ParsedScript>();

function parseScript(script: Script): ParsedScript {
  let parsed = parsedScripts.get(script);
  if (parsed === undefined) {
    parsed = ScriptSchema.parse(script);
    parsedScripts.set(script, parsed);
  }
  return parsed;
}

function matches(match: ScriptMatch | undefined, request: ModelRequest, call: number): boolean {
  if (match === undefined) return true;
  if (match.agent !== undefined && request.caller?.name !== match.agent) return false;
  if (match.role !== undefined && request.caller?.role !== match.role) return false;
  if (match.call !== undefined && match.call !== call) return false;
  const last: Message | undefined = request.messages.at(-1);
  if (match.lastToolResultContains !== undefined || match.lastToolResultIsError !== undefined) {
    if (last?.role !== 'tool') return false;
    if (
      match.lastToolResultContains !== undefined &&
      !last.content.includes(match.lastToolResultContains)
    ) {
      return false;
    }
    if (
      match.lastToolResultIsError !== undefined &&
      (last.isError ?? false) !== match.lastToolResultIsError
    ) {
      return false;
    }
  }
  if (match.lastUserContains !== undefined) {
    if (last?.role !== 'user' || !last.content.includes(match.lastUserContains)) return false;
  }
  if (match.conversationContains !== undefined) {
    const needle = match.conversationContains;
    if (!request.messages.some((message) => message.content.includes(needle))) return false;
  }
  return true;
}

function buildResponse(step: ParsedScriptStep, callNumber: number): ModelResponse {
  const toolCalls: ToolCall[] = step.toolCalls.map((call, index) => {
    const raw =
      typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    return {
      id: call.id ?? `call_${callNumber}_${index}`,
      name: call.name,
      arguments: parseOrRaw(raw),
      raw,
    };
  });
  const response: ModelResponse = {
    content: step.content,
    toolCalls,
    usage: step.usage ?? estimateUsage(step),
    stopReason: toolCalls.length > 0 ? 'tool_calls' : 'end',
    model: 'scripted',
  };
  if (step.thinking !== undefined) response.thinking = step.thinking;
  return response;
}

function parseOrRaw(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

// A fixed, predictable usage so budgets can be tested without stating usage on every step.
function estimateUsage(step: ParsedScriptStep): { inputTokens: number; outputTokens: number } {
  const out = step.content.length + JSON.stringify(step.toolCalls).length;
  return { inputTokens: 10, outputTokens: Math.max(1, Math.ceil(out / 4)) };
}

function snapshot(request: ModelRequest): ModelRequest {
  return { ...request, messages: [...request.messages] };
}

function busyWait(milliseconds: number): void {
  const end = performance.now() + milliseconds;
  while (performance.now() < end) {
    // Spin: this simulates a model adapter doing CPU work on the thread.
  }
}

function delay(milliseconds: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  if (milliseconds <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, milliseconds);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortError(signal: AbortSignal | undefined): TroupeError {
  return new TroupeError('cancelled', 'The model call was cancelled.', { cause: signal?.reason });
}
