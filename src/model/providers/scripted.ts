import { TroupeError } from '../../errors.js';
import { sleep } from '../../util/abort.js';
import {
  type ParsedScript,
  type ParsedScriptStep,
  type Script,
  type ScriptMatch,
  ScriptSchema,
} from '../script.js';
import type { Model, ModelSpec } from '../spec.js';
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

  complete(request: ModelRequest, options: ModelCallOptions = {}): Promise<ModelResponse> {
    return this.#answer(request, options).then(responseOf);
  }

  // A promise chain rather than an async function: thousands of calls wait
  // here at once, and a suspended async frame is the larger thing to keep.
  #answer(request: ModelRequest, options: ModelCallOptions): Promise<Answer> {
    let callNumber: number;
    let step: ParsedScriptStep;
    try {
      callNumber = this.calls.length + 1;
      const index = this.#pick(request, callNumber);
      this.calls.push({ call: callNumber, request: snapshot(request), stepIndex: index });
      step = this.#script.steps[index] as ParsedScriptStep;
      if (!step.repeat) this.#used[index] = true;
      if (step.cpuMs !== undefined && step.cpuMs > 0) busyWait(step.cpuMs);
    } catch (error) {
      return Promise.reject(error);
    }
    return sleep(step.latencyMs ?? this.#script.defaultLatencyMs, options.signal).then(() =>
      reply(step, callNumber),
    );
  }

  /**
   * Streams the step's reply: its thinking, its text in word-sized deltas,
   * its tool calls, then `finish`. Like an async generator, nothing runs
   * (the call is not made) until the first `next()`.
   */
  stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncGenerator<ModelStreamPart> {
    return new ScriptedStream(() => this.#answer(request, options));
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
    const { steps } = this.#script;
    let index = -1;
    for (let i = 0; i < steps.length; i += 1) {
      if (!this.#used[i] && matches((steps[i] as ParsedScriptStep).match, request, callNumber)) {
        index = i;
        break;
      }
    }
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

// What a step always answers the same way, worked out once per step (parsed
// scripts are shared and never mutated): the raw argument strings, the text
// deltas, the estimated usage.
interface PreparedStep {
  raws: string[];
  pieces: string[];
  outputTokens: number;
}

interface Answer {
  response: ModelResponse;
  prepared: PreparedStep;
}

const preparedSteps = new WeakMap<ParsedScriptStep, PreparedStep>();

function prepare(step: ParsedScriptStep): PreparedStep {
  let prepared = preparedSteps.get(step);
  if (prepared === undefined) {
    const raws: string[] = [];
    for (const call of step.toolCalls) {
      raws.push(
        typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
      );
    }
    const pieces: string[] = [];
    // Word-sized deltas, so consumers of streams see more than one part.
    for (const piece of step.content.match(/\S+\s*|\s+/g) ?? []) pieces.push(piece);
    // A fixed, predictable usage so budgets can be tested without stating usage on every step.
    const out = step.content.length + JSON.stringify(step.toolCalls).length;
    prepared = { raws, pieces, outputTokens: Math.max(1, Math.ceil(out / 4)) };
    preparedSteps.set(step, prepared);
  }
  return prepared;
}

// Every response gets its own objects (tool calls, parsed arguments, usage):
// callers may keep or change them.
function buildResponse(
  step: ParsedScriptStep,
  prepared: PreparedStep,
  callNumber: number,
): ModelResponse {
  const toolCalls: ToolCall[] = [];
  for (let index = 0; index < step.toolCalls.length; index += 1) {
    const call = step.toolCalls[index] as ParsedScriptStep['toolCalls'][number];
    const raw = prepared.raws[index] as string;
    toolCalls.push({
      id: call.id ?? `call_${callNumber}_${index}`,
      name: call.name,
      arguments: parseOrRaw(raw),
      raw,
    });
  }
  const response: ModelResponse = {
    content: step.content,
    toolCalls,
    usage: step.usage ?? { inputTokens: 10, outputTokens: prepared.outputTokens },
    stopReason: toolCalls.length > 0 ? 'tool_calls' : 'end',
    model: 'scripted',
  };
  if (step.thinking !== undefined) response.thinking = step.thinking;
  return response;
}

// The answer to one call once its latency has passed: the step's error, or its reply.
function reply(step: ParsedScriptStep, callNumber: number): Answer {
  if (step.error !== undefined) {
    throw new TroupeError(step.error.code, step.error.message, {
      details: {
        provider: 'scripted',
        ...(step.error.status === undefined ? {} : { status: step.error.status }),
      },
    });
  }
  const prepared = prepare(step);
  return { response: buildResponse(step, prepared, callNumber), prepared };
}

function responseOf(answer: Answer): ModelResponse {
  return answer.response;
}

function parseOrRaw(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

// The parts of one streamed reply, in order, ending with finish.
function streamParts(answer: Answer): ModelStreamPart[] {
  const { response, prepared } = answer;
  const parts: ModelStreamPart[] = [];
  if (response.thinking !== undefined)
    parts.push({ type: 'thinking-delta', text: response.thinking });
  for (const piece of prepared.pieces) parts.push({ type: 'text-delta', text: piece });
  for (let index = 0; index < response.toolCalls.length; index += 1) {
    const toolCall = response.toolCalls[index] as ToolCall;
    parts.push({
      type: 'tool-call-delta',
      index,
      id: toolCall.id,
      name: toolCall.name,
      argumentsDelta: toolCall.raw,
    });
  }
  parts.push({ type: 'finish', response });
  return parts;
}

/**
 * The scripted model's stream: the parts of one reply, as an async generator
 * object written by hand. Cheaper than an `async *` function (no generator
 * frame held across the simulated latency, one promise per part), with the
 * same contract: the call starts on the first `next()`, a failed call
 * rejects it, `return()` and `throw()` end it.
 */
class ScriptedStream implements AsyncGenerator<ModelStreamPart> {
  #start: (() => Promise<Answer>) | undefined;
  #parts: ModelStreamPart[] = [];
  #next = 0;

  constructor(start: () => Promise<Answer>) {
    this.#start = start;
  }

  [Symbol.asyncIterator](): AsyncGenerator<ModelStreamPart> {
    return this;
  }

  next(): Promise<IteratorResult<ModelStreamPart>> {
    const start = this.#start;
    if (start === undefined) return Promise.resolve(this.#take());
    this.#start = undefined;
    return start().then((answer) => {
      this.#parts = streamParts(answer);
      return this.#take();
    });
  }

  return(value?: unknown): Promise<IteratorResult<ModelStreamPart>> {
    this.#end();
    return Promise.resolve(value).then((settled) => ({ done: true, value: settled }));
  }

  throw(error?: unknown): Promise<IteratorResult<ModelStreamPart>> {
    this.#end();
    return Promise.reject(error);
  }

  #end(): void {
    this.#start = undefined;
    this.#next = this.#parts.length;
  }

  #take(): IteratorResult<ModelStreamPart> {
    const part = this.#parts[this.#next];
    if (part === undefined) return { done: true, value: undefined };
    this.#next += 1;
    return { done: false, value: part };
  }
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
