import { isTroupeError, type SerializedError, serializeError, TroupeError } from '../errors.js';
import { makeEvent } from '../events/envelope.js';
import type {
  AgentStopReason,
  EventPayload,
  EventSink,
  Step,
  UnsequencedEvent,
} from '../events/schema.js';
import { type Model, raisesWarnings } from '../model/model.js';
import { outputTokenLimits } from '../model/output-tokens.js';
import {
  type AssistantMessage,
  addUsage,
  emptyUsage,
  type Message,
  type ModelRequest,
  type ModelResponse,
  type ToolCall,
  type ToolMessage,
  type ToolSchema,
  type Usage,
} from '../model/types.js';
import { ToolRegistry, type ToolResult } from '../tools/registry.js';
import type { ToolContext } from '../tools/tool.js';
import { createRunId } from '../util/ids.js';
import { groupDigits } from '../util/text-order.js';
import { truncateEnd, truncateMiddle } from '../util/truncate.js';
import { type LibraryWarning, withWarningSink } from '../util/warnings.js';
import { type CallAllowance, type CallGrant, estimatePromptTokens } from './allowance.js';
import { TokenBudget, type TokenBudgetLimits } from './budget.js';
import { findFakeToolCall } from './fake-tool-call.js';
import {
  type CompressionOptions,
  type CompressionPlan,
  closePendingToolCalls,
  lastAssistantText,
  planCompression,
  SUMMARY_PREFIX,
  summaryInputChars,
  summaryTokensOf,
  transcript,
} from './history.js';
import {
  type AgentJournal,
  INTERRUPTED_RESULT,
  type JournalEntry,
  JournalReplay,
  RequestHasher,
  requestHash,
} from './journal.js';
import { callModel, type Delta, defaultNudge, describeToolCalls, echoedNote } from './step.js';

/** How an Agent is built. Everything is fixed at construction. */
export interface AgentConfig {
  /** The agent's name; also its agentId unless one is given. */
  name: string;
  model: Model;
  /** The tools this agent may call, already narrowed to its set. */
  tools?: ToolRegistry | undefined;
  /** The system prompt, injected once as the first message. */
  system?: string | undefined;
  /** Model calls per run before it stops with `max_steps` (default 10). */
  maxSteps?: number | undefined;
  budget?: TokenBudgetLimits | undefined;
  /**
   * The run's tree budget: each model call reserves its prompt and output
   * tokens here before it is sent, and its `max_tokens` is capped by what is
   * left; a call that does not fit is not sent and the run stops (`budget`).
   */
  allowance?: CallAllowance | undefined;
  compression?: CompressionOptions | undefined;
  /** Where events go: the EventBus, or a worker's forwarder. */
  events?: EventSink | undefined;
  runId?: string | undefined;
  agentId?: string | undefined;
  parentId?: string | undefined;
  role?: string | undefined;
  /** What tools get besides their arguments (workspace, grants, output folder, approval, …). */
  toolContext?: Partial<Omit<ToolContext, 'signal' | 'runId' | 'agentId' | 'role'>> | undefined;
  /**
   * The message sent once per run after a reply that is only a tool call
   * written as text (see `findFakeToolCall`); `false` disables the guard.
   * Default: troupe's note naming the tool.
   */
  nudge?: string | false | undefined;
  /**
   * Which answer stands when the reply to the nudge is text again:
   * `original` (default) the reply that was nudged, so a nudge never loses
   * an answer; `reply` the reply to the nudge (unless it is empty).
   */
  nudgeAnswer?: 'original' | 'reply' | undefined;
  /** Stream replies and emit `model.delta` events (default true). */
  stream?: boolean | undefined;
  /**
   * Drained before every model call (`step` is that call's index over the
   * agent's life): steering and channel messages arrive here. A promise
   * holds the call until it settles (a resumed subscriber waits for the
   * messages its journal says came before this call).
   */
  inbox?: ((step: number) => readonly Message[] | Promise<readonly Message[]>) | undefined;
  /**
   * Asked before a final answer is accepted: a message sends the model back
   * to work (as a user message, with an `agent.nudged` event); undefined accepts it.
   */
  beforeFinal?: ((answer: string) => string | undefined) | undefined;
  /**
   * The agent's side of the run's journal: every model response and tool
   * result is recorded, and what an earlier attempt recorded is replayed
   * (no model call, no tool run) for as long as the requests match.
   */
  journal?: AgentJournal | undefined;
}

/** What one run produced. */
export interface AgentResult {
  /** The final answer, or the last thing the model said when the run stopped early. */
  final: string;
  steps: Step[];
  /** The whole conversation after the run. */
  messages: Message[];
  /** Tokens used by this run. */
  usage: Usage;
  stopReason: AgentStopReason;
  /** Set when stopReason is `error`. */
  error?: SerializedError;
}

/** Options for one run. */
export interface RunOptions {
  signal?: AbortSignal | undefined;
}

const DEFAULT_MAX_STEPS = 10;
const DEFAULT_KEEP_TURNS = 4;
const EMPTY_REGISTRY = new ToolRegistry();

const PENDING_REASONS: Record<AgentStopReason, string> = {
  final: 'this tool call was not run.',
  max_steps: 'this tool call was not run: the step limit was reached.',
  budget: 'this tool call was not run: the token budget is exhausted.',
  cancelled: 'the run was cancelled before this tool finished.',
  error: 'this tool call was not run: the model call failed.',
};

// A summary of the middle of the history, with what its call cost when troupe's summarizer made it.
interface Summary {
  content: string;
  usage?: Usage;
  /** Gives the call's reserved room back to the tree budget. */
  settle?: () => void;
  /** Answered from the run's journal: no call was made. */
  replayed?: boolean;
}

interface RunState {
  messages: Message[];
  steps: Step[];
  usage: Usage;
  budget: TokenBudget;
  /** The guard nudges once per run. */
  nudged: boolean;
  /** The nudge sent and not answered yet: the reply that faked a call, and the note. */
  nudge: { fake: Message; note: Message } | undefined;
  /** troupe's own notes to the model this run (the nudge, beforeFinal's): a tool call that repeats one is refused. */
  notes: string[];
  signal: AbortSignal;
  /** The agent's model-call index of the current step (counted over its life). */
  call: number;
  /** The current step's response came from the journal. */
  replayed: boolean;
}

const NO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0 }) as Usage;

/**
 * The in-process ReAct loop: model → tool calls → model … until a final
 * answer, the step limit, the budget or cancellation. No threads here: the
 * runtime hosts Agents inside workers.
 *
 * History: a run works on a copy and writes it back when it ends, so a
 * failure mid-run leaves the history as it was; a second run continues the
 * conversation.
 *
 * @example
 * const agent = new Agent({ name: 'helper', model, tools, system: 'Be brief.' });
 * agent.onStep = (step) => console.log(step.kind, step.detail);
 * const { final } = await agent.run('What is in notes.md?');
 */
export class Agent {
  readonly name: string;
  readonly agentId: string;
  readonly runId: string;

  /** After each model reply. */
  onThink?:
    | ((content: string, toolCalls: ToolCall[], thinking: string | undefined) => void)
    | undefined;
  /** After each tool call, with its result. */
  onToolCall?: ((toolCall: ToolCall, result: ToolResult) => void) | undefined;
  /** After each tool call, with its name and arguments. */
  onToolResult?: ((name: string, args: unknown, result: ToolResult) => void) | undefined;
  /** After each step. */
  onStep?: ((step: Step) => void) | undefined;
  /** Every event this agent emits, before the bus stamps it. */
  onEvent?: ((event: UnsequencedEvent) => void) | undefined;

  readonly #config: AgentConfig;
  readonly #tools: ToolRegistry;
  readonly #maxSteps: number;
  #history: Message[] = [];
  #running = false;
  readonly #warnings = new Set<string>();
  // Model calls over the agent's life: the journal's step index.
  #calls = 0;
  #replay: JournalReplay | undefined;
  // The journal's request hashes, from what was added to the history since the last call.
  readonly #requests = new RequestHasher();

  constructor(config: AgentConfig) {
    checkAgentConfig(config);
    const maxSteps = config.maxSteps ?? DEFAULT_MAX_STEPS;
    if (!Number.isInteger(maxSteps) || maxSteps < 1) {
      throw new TroupeError(
        'usage.invalid_option',
        `maxSteps must be a whole number of at least 1, got ${maxSteps}.`,
      );
    }
    if (config.compression !== undefined && !(config.compression.maxTokens > 0)) {
      throw new TroupeError('usage.invalid_option', 'compression.maxTokens must be positive.');
    }
    // Validate the limits now, not on the first run.
    new TokenBudget(config.budget);
    this.#config = config;
    this.name = config.name;
    this.agentId = config.agentId ?? config.name;
    this.runId = config.runId ?? createRunId();
    this.#tools = config.tools ?? EMPTY_REGISTRY;
    this.#maxSteps = maxSteps;
    const recorded = config.journal?.recorded;
    if (recorded !== undefined && recorded.length > 0) this.#replay = new JournalReplay(recorded);
  }

  /** The conversation so far (a copy). */
  get history(): readonly Message[] {
    return [...this.#history];
  }

  /** Replaces the conversation (empty by default). */
  resetHistory(messages: readonly Message[] = []): void {
    this.#history = [...messages];
  }

  /** Runs on the agent's own history and writes it back when the run ends (not on `error`). */
  async run(input: string, options: RunOptions = {}): Promise<AgentResult> {
    this.#enter();
    try {
      const result = await this.#scoped(() => this.#loop(this.#history, input, options.signal));
      if (result.stopReason !== 'error') this.#history = result.messages;
      return result;
    } finally {
      this.#running = false;
    }
  }

  /**
   * Continues its own history without a new message: what a supervisor does
   * after a transient failure (the model call is made again on the
   * conversation as it stood). Writes the history back as `run` does.
   */
  async resume(options: RunOptions = {}): Promise<AgentResult> {
    this.#enter();
    try {
      const result = await this.#loop(this.#history, undefined, options.signal);
      if (result.stopReason !== 'error') this.#history = result.messages;
      return result;
    } finally {
      this.#running = false;
    }
  }

  /** Runs on a history the caller owns; the agent keeps nothing, so one instance serves many conversations. */
  async chat(
    input: string,
    messages: readonly Message[] = [],
    options: RunOptions = {},
  ): Promise<AgentResult> {
    return this.#scoped(() => this.#loop(messages, input, options.signal));
  }

  // Warnings raised inside `fn` (across its awaits) become this agent's events;
  // a model that cannot warn (raisesWarnings) needs no scope.
  #scoped(fn: () => Promise<AgentResult>): Promise<AgentResult> {
    return raisesWarnings(this.#config.model) ? withWarningSink(this.#warned, fn) : fn();
  }

  // A warning raised during this agent's work (an SDK's console.warn, a Node
  // warning) becomes its event, once per distinct message, instead of text on the terminal.
  readonly #warned = (warning: LibraryWarning): undefined => {
    if (this.#warnings.has(warning.message)) return;
    this.#warnings.add(warning.message);
    this.#emit({ type: 'warning.raised', source: warning.source, message: warning.message });
  };

  #enter(): void {
    if (this.#running) {
      throw new TroupeError(
        'usage.invalid_option',
        `Agent ${this.name} is already running; wait for its run to end, or use chat() for separate conversations.`,
      );
    }
    this.#running = true;
  }

  async #loop(
    history: readonly Message[],
    input: string | undefined,
    signal: AbortSignal = new AbortController().signal,
  ): Promise<AgentResult> {
    const messages = [...history];
    const { system } = this.#config;
    if (system !== undefined && messages[0]?.role !== 'system') {
      messages.unshift({ role: 'system', content: system });
    }
    if (input !== undefined) messages.push({ role: 'user', content: input });
    const state: RunState = {
      messages,
      steps: [],
      usage: emptyUsage(),
      budget: new TokenBudget(this.#config.budget),
      nudged: false,
      nudge: undefined,
      notes: [],
      signal,
      call: 0,
      replayed: false,
    };

    for (let index = 0; ; index += 1) {
      if (signal.aborted) return this.#stop(state, 'cancelled');
      if (index >= this.#maxSteps) {
        this.#step(state, 'error', `Reached the step limit of ${this.#maxSteps} model calls.`);
        return this.#stop(state, 'max_steps');
      }
      let inbox = this.#config.inbox?.(this.#calls);
      if (inbox instanceof Promise) inbox = await inbox;
      if (inbox !== undefined && inbox.length > 0) state.messages.push(...inbox);
      if (signal.aborted) return this.#stop(state, 'cancelled');

      let response: ModelResponse;
      try {
        // Without compression there is nothing to wait for (and no promise to make).
        if (this.#config.compression !== undefined) await this.#maybeCompress(state);
        response = await this.#callModel(state, index);
      } catch (error) {
        // Refused by the tree budget: the call was not sent.
        if (isTroupeError(error, 'budget.exceeded')) {
          const serialized = serializeError(error);
          this.#step(state, 'error', serialized.message);
          return this.#stop(state, 'budget', serialized);
        }
        if (signal.aborted || isTroupeError(error, 'cancelled')) {
          return this.#stop(state, 'cancelled');
        }
        const serialized = serializeError(error);
        this.#step(state, 'error', serialized.message);
        return this.#stop(state, 'error', serialized);
      }

      const assistant: AssistantMessage = { role: 'assistant', content: response.content };
      if (response.toolCalls.length > 0) assistant.toolCalls = response.toolCalls;
      if (response.thinking !== undefined) assistant.thinking = response.thinking;
      if (response.thinkingParts !== undefined) assistant.thinkingParts = response.thinkingParts;
      state.messages.push(assistant);

      const budgetStop = this.#recordUsage(state, response.usage);

      if (response.toolCalls.length === 0) {
        if (state.nudge !== undefined) this.#answeredNudge(state, assistant, true);
        else if (!budgetStop && index + 1 < this.#maxSteps && this.#nudge(state, assistant))
          continue;
        const answer = lastAssistantText(state.messages);
        const notice = this.#config.beforeFinal?.(answer);
        if (notice !== undefined) {
          this.#emit({ type: 'agent.nudged', reason: notice });
          state.notes.push(notice);
          state.messages.push({ role: 'user', content: notice });
          continue;
        }
        this.#step(state, 'final', truncateEnd(answer, 300));
        return this.#stop(state, 'final');
      }
      if (state.nudge !== undefined) this.#answeredNudge(state, assistant, false);
      if (budgetStop) return this.#stop(state, 'budget');

      await this.#runTools(state, response.toolCalls);
      this.#step(state, 'tool_call', describeToolCalls(response.toolCalls));
      if (signal.aborted) return this.#stop(state, 'cancelled');
    }
  }

  // A promise chain rather than an async method: one suspended frame less per
  // waiting agent (a fan-out keeps thousands waiting on their model at once).
  #callModel(state: RunState, index: number): Promise<ModelResponse> {
    const tools = this.#tools.schemas();
    const call = this.#calls;
    this.#calls += 1;
    state.call = call;
    state.replayed = false;
    const journal = this.#config.journal;
    const hash = journal === undefined ? undefined : this.#requests.hash(state.messages, tools);
    const recorded = hash === undefined ? undefined : this.#recorded(call, hash);
    if (recorded !== undefined) {
      this.#emit({
        type: 'model.request',
        step: index,
        messages: state.messages.length,
        tools: tools.length,
        replayed: true,
      });
      state.replayed = true;
      // No new tokens: what the recorded call cost is what the resume saved.
      const response: ModelResponse = { ...recorded, usage: NO_USAGE };
      this.#responded(response, recorded.usage);
      return Promise.resolve(response);
    }
    const allowance = this.#config.allowance;
    // Throws budget.exceeded (caught by the loop) when the agent's own limit leaves no room.
    const own = this.#ownRoom(state, tools);
    if (allowance === undefined) return this.#send(state, index, tools, call, hash, own);
    return this.#reserve(allowance, state.messages, tools, state.signal).then((grant) =>
      this.#send(state, index, tools, call, hash, Math.min(grant.maxTokens, own ?? Infinity)).then(
        (response) => {
          // After model.response: the budget has counted the usage before the room is given back.
          grant.settle(response.usage);
          return response;
        },
        (error: unknown) => {
          grant.settle(settledBy(error, state.signal));
          throw error;
        },
      ),
    );
  }

  /**
   * The agent's own hard token limit (a role's `budget.hardTokens`) caps a
   * call's max_tokens as the tree budget does: at most what is left after
   * the prompt (estimated on the high side) and the tokens used so far; when
   * that is below the fewest output tokens worth a call, the call is not
   * sent. Undefined without a hard limit.
   */
  #ownRoom(state: RunState, tools: readonly ToolSchema[]): number | undefined {
    const { hard, used } = state.budget;
    if (hard === undefined) return undefined;
    const { wanted, minimum } = outputTokenLimits(this.#config.model.spec);
    const prompt = estimatePromptTokens(state.messages, tools);
    const left = Math.floor(hard - used - prompt);
    if (left < minimum) {
      throw new TroupeError(
        'budget.exceeded',
        `The agent's own token budget is used up: the next call needs about ${groupDigits(prompt)} prompt tokens and at least ${minimum} output tokens, and ${groupDigits(used)} of ${groupDigits(hard)} tokens are used.`,
      );
    }
    return Math.min(wanted, left);
  }

  // Room in the tree budget for one call, or a budget.exceeded error that says why there is none.
  async #reserve(
    allowance: CallAllowance,
    messages: readonly Message[],
    tools: readonly ToolSchema[],
    signal: AbortSignal,
  ): Promise<Extract<CallGrant, { ok: true }>> {
    const { wanted, minimum } = outputTokenLimits(this.#config.model.spec);
    const grant = await allowance.reserve(
      {
        promptTokens: estimatePromptTokens(messages, tools),
        maxTokens: wanted,
        minTokens: minimum,
      },
      signal,
    );
    if (!grant.ok) {
      if (signal.aborted) throw new TroupeError('cancelled', grant.reason);
      throw new TroupeError('budget.exceeded', grant.reason);
    }
    return grant;
  }

  #send(
    state: RunState,
    index: number,
    tools: readonly ToolSchema[],
    call: number,
    hash: string | undefined,
    maxTokens: number | undefined,
  ): Promise<ModelResponse> {
    const journal = this.#config.journal;
    this.#emit({
      type: 'model.request',
      step: index,
      messages: state.messages.length,
      tools: tools.length,
      ...(maxTokens === undefined ? {} : { maxTokens }),
    });
    const caller = { name: this.name, role: this.#config.role };
    const request: ModelRequest = { messages: state.messages, caller };
    if (tools.length > 0) request.tools = tools;
    if (maxTokens !== undefined) request.maxTokens = maxTokens;
    const called = callModel(this.#config.model, request, {
      stream: this.#config.stream ?? true,
      signal: state.signal,
      onDelta: this.#onDelta,
    });
    if (journal === undefined || hash === undefined) return called.then(this.#respondedLive);
    return called.then((response) => {
      // Journaled before the event that announces it.
      journal.record({ kind: 'model', step: call, hash, response });
      return this.#respondedLive(response);
    });
  }

  // The recorded response of model call `call`, when the journal has one for this very request.
  #recorded(call: number, hash: string): ModelResponse | undefined {
    const replay = this.#replay;
    if (replay === undefined) return undefined;
    const entry = replay.model(call);
    if (entry === undefined) {
      // The journal ran out: live from here on.
      this.#replay = undefined;
      return undefined;
    }
    if (entry.hash !== hash) {
      this.#replay = undefined;
      this.#emit({
        type: 'journal.diverged',
        step: call,
        reason: `model call ${call} asks something other than what the journal recorded (the conversation, the system prompt or the tools changed), so it goes live from here.`,
      });
      return undefined;
    }
    return entry.response;
  }

  readonly #respondedLive = (response: ModelResponse): ModelResponse =>
    this.#responded(response, undefined);

  #responded(response: ModelResponse, replayedUsage: Usage | undefined): ModelResponse {
    const replay = replayedUsage === undefined ? {} : { replayed: true as const, replayedUsage };
    this.#emit(
      response.thinking === undefined
        ? {
            type: 'model.response',
            content: response.content,
            toolCalls: response.toolCalls,
            usage: response.usage,
            stopReason: response.stopReason,
            ...replay,
          }
        : {
            type: 'model.response',
            content: response.content,
            toolCalls: response.toolCalls,
            thinking: response.thinking,
            usage: response.usage,
            stopReason: response.stopReason,
            ...replay,
          },
    );
    return response;
  }

  readonly #onDelta = (delta: Delta): void => {
    this.#emit({ type: 'model.delta', kind: delta.kind, text: delta.text });
  };

  // Returns true when the hard limit is reached.
  #recordUsage(state: RunState, usage: Usage): boolean {
    state.usage = addUsage(state.usage, usage);
    const budgetState = state.budget.record(usage);
    const { soft, hard, used } = state.budget;
    if (budgetState === 'warning' && soft !== undefined) {
      this.#emit({ type: 'budget.warning', scope: 'agent', metric: 'tokens', used, limit: soft });
    }
    if (budgetState === 'exceeded' && hard !== undefined) {
      this.#emit({ type: 'budget.exceeded', scope: 'agent', metric: 'tokens', used, limit: hard });
      this.#step(state, 'error', `Token budget exhausted: ${used} of ${hard} tokens used.`);
      return true;
    }
    return false;
  }

  // The fake-tool-call guard: a reply that is only a tool call written as text gets one note per run.
  #nudge(state: RunState, reply: AssistantMessage): boolean {
    const configured = this.#config.nudge;
    if (configured === false || state.nudged || this.#tools.size === 0) return false;
    const fake = findFakeToolCall(reply.content, this.#tools.names);
    if (fake === undefined) return false;
    const note = configured ?? defaultNudge(fake.tool);
    state.nudged = true;
    this.#emit({
      type: 'agent.nudged',
      reason: `The reply wrote a call to ${fake.tool} as text (${fake.format}) without making it.`,
    });
    const message: Message = { role: 'user', content: note };
    state.notes.push(note);
    state.nudge = { fake: reply, note: message };
    state.messages.push(message);
    return true;
  }

  /**
   * The model answered the nudge. The history keeps one of the two replies
   * and drops the note (so it cannot be taken up later as a task): the reply
   * to the nudge when it called tools, else the answer `nudgeAnswer` picks.
   */
  #answeredNudge(state: RunState, reply: AssistantMessage, isText: boolean): void {
    const { fake, note } = state.nudge as NonNullable<RunState['nudge']>;
    state.nudge = undefined;
    const keepOriginal =
      isText && (this.#config.nudgeAnswer !== 'reply' || reply.content.trim() === '');
    const dropped = keepOriginal ? reply : fake;
    state.messages = state.messages.filter((message) => message !== note && message !== dropped);
  }

  async #runTools(state: RunState, toolCalls: readonly ToolCall[]): Promise<void> {
    const context: ToolContext = {
      workspace: process.cwd(),
      grants: [],
      ...this.#config.toolContext,
      signal: state.signal,
      runId: this.runId,
      agentId: this.agentId,
      role: this.#config.role,
    };
    const journal = this.#config.journal;
    const step = state.call;
    // What the journal says of each call of a replayed step: its result, or that it had started.
    const recorded = toolCalls.map((call) => this.#recordedTool(state, call));
    for (let position = 0; position < toolCalls.length; position += 1) {
      const call = toolCalls[position] as ToolCall;
      this.#emit({
        type: 'tool.call',
        callId: call.id,
        name: call.name,
        input: call.arguments,
        ...(typeof recorded[position] === 'object' ? { replayed: true } : {}),
      });
    }
    // Calls of one turn run concurrently; results go back in the order the model asked.
    const results = await Promise.all(
      toolCalls.map(async (call, position) => {
        const started = performance.now();
        const earlier = recorded[position];
        let result: ToolResult;
        const echoed = echoedNote(call, state.notes);
        if (typeof earlier === 'object') result = earlier;
        else if (earlier === 'interrupted') result = INTERRUPTED_RESULT;
        else if (echoed !== undefined) result = echoRefusal(call, echoed);
        else {
          const tool = this.#tools.get(call.name);
          // At-most-once: the intent is durable before a tool that is not idempotent runs.
          if (
            journal !== undefined &&
            tool !== undefined &&
            !tool.idempotent &&
            tool.replay !== 'rerun'
          )
            await journal.intend({ kind: 'tool.started', step, callId: call.id, name: call.name });
          result = await this.#tools.call(call, context);
        }
        if (
          journal !== undefined &&
          typeof earlier !== 'object' &&
          this.#tools.get(call.name)?.replay !== 'rerun'
        ) {
          const entry: JournalEntry = {
            kind: 'tool',
            step,
            callId: call.id,
            name: call.name,
            result,
          };
          journal.record(entry);
        }
        const durationMs =
          typeof earlier === 'object' ? 0 : Math.max(0, performance.now() - started);
        const replayed = typeof earlier === 'object' ? { replayed: true } : {};
        this.#emit(
          result.ok
            ? {
                type: 'tool.result',
                callId: call.id,
                name: call.name,
                ok: result.ok,
                content: result.content,
                durationMs,
                ...replayed,
              }
            : {
                type: 'tool.result',
                callId: call.id,
                name: call.name,
                ok: result.ok,
                content: result.content,
                error: result.error,
                durationMs,
                ...replayed,
              },
        );
        if (this.onToolResult !== undefined) {
          this.#hook('onToolResult', () => this.onToolResult?.(call.name, call.arguments, result));
        }
        if (this.onToolCall !== undefined) {
          this.#hook('onToolCall', () => this.onToolCall?.(call, result));
        }
        return result;
      }),
    );
    for (let position = 0; position < toolCalls.length; position += 1) {
      const call = toolCalls[position] as ToolCall;
      const result = results[position] as ToolResult;
      const message: ToolMessage = {
        role: 'tool',
        toolCallId: call.id,
        name: call.name,
        content: result.content,
      };
      if (!result.ok) message.isError = true;
      state.messages.push(message);
    }
  }

  /**
   * A replayed step's call: its recorded result (never run again), or
   * `interrupted` when it had started, no result was recorded and the tool is
   * not idempotent (at-most-once); undefined when it runs (live, an
   * idempotent tool, or one whose replay is `rerun`).
   */
  #recordedTool(state: RunState, call: ToolCall): ToolResult | 'interrupted' | undefined {
    if (!state.replayed || this.#replay === undefined) return undefined;
    const tool = this.#tools.get(call.name);
    if (tool?.replay === 'rerun') return undefined;
    const earlier = this.#replay.tool(state.call, call.id);
    if (earlier === undefined) return undefined;
    if (earlier !== 'started') return earlier;
    return tool === undefined || tool.idempotent === true ? undefined : 'interrupted';
  }

  // Folds the middle of the history into a summary when the prompt passes the
  // compression limit: the system prompt and the task stay verbatim, the tail
  // keeps the last turns (fewer when they alone would not fit), and tool calls
  // are never parted from their results (planCompression cuts only before a
  // user or assistant message).
  async #maybeCompress(state: RunState): Promise<void> {
    const options = this.#config.compression;
    if (options === undefined) return;
    const tools = this.#tools.schemas();
    const beforeTokens = estimatePromptTokens(state.messages, tools);
    if (beforeTokens <= options.maxTokens) return;
    const summaryTokens = summaryTokensOf(options);
    // The most turns kept whose size with the summary is under half the limit
    // (so the next turns do not compress again at once), else under the
    // limit (the last results stay verbatim), else none.
    const plans: Array<{ plan: CompressionPlan; tokens: number }> = [];
    for (let keep = options.keepTurns ?? DEFAULT_KEEP_TURNS; keep >= 0; keep -= 1) {
      const candidate = planCompression(state.messages, keep);
      if (candidate === undefined) continue;
      const kept = estimatePromptTokens([...candidate.head, ...candidate.tail], tools);
      plans.push({ plan: candidate, tokens: kept + summaryTokens });
    }
    const plan = (
      plans.find((option) => option.tokens <= options.maxTokens / 2) ??
      plans.find((option) => option.tokens <= options.maxTokens) ??
      plans.at(-1)
    )?.plan;
    if (plan === undefined) return;
    const middle = plan.middle;
    const summarized: Summary =
      options.summarize === undefined
        ? await this.#summarize(state, middle, summaryTokens, state.signal)
        : { content: await options.summarize(middle, state.signal) };
    const beforeMessages = state.messages.length;
    state.messages = [
      ...plan.head,
      { role: 'user', content: `${SUMMARY_PREFIX}\n${summarized.content}` },
      ...plan.tail,
    ];
    this.#emit({
      type: 'history.compressed',
      beforeMessages,
      afterMessages: state.messages.length,
      beforeTokens,
      afterTokens: estimatePromptTokens(state.messages, tools),
      foldedMessages: middle.length,
      limitTokens: options.maxTokens,
      summary: summarized.content,
      ...(summarized.usage === undefined ? {} : { usage: summarized.usage }),
      ...(summarized.replayed === true ? { replayed: true } : {}),
    });
    // After the event that brings the summary's usage to the run's ledger, as for model.response.
    summarized.settle?.();
  }

  /**
   * The default summarizer: one call to the agent's own model, without
   * tools, budgeted like any call. Its usage goes out on history.compressed
   * (the run's ledger counts it there). It is recorded in the journal under
   * the agent's next call index and replayed from it on resume, so a resumed
   * run neither pays for it again nor diverges on a new summary.
   */
  async #summarize(
    state: RunState,
    middle: readonly Message[],
    summaryTokens: number,
    signal: AbortSignal,
  ): Promise<Summary> {
    const words = Math.max(50, Math.floor(summaryTokens * 0.6));
    const messages: Message[] = [
      {
        role: 'system',
        content: `Summarize this part of an agent conversation for the agent itself: keep facts found, decisions, file names, numbers and open questions. Be concise: at most ${words} words.`,
      },
      // The summarizer's prompt must fit the window too: the transcript is cut in its middle.
      {
        role: 'user',
        content: truncateMiddle(
          transcript(middle),
          summaryInputChars(summaryTokens, this.#config.compression),
        ),
      },
    ];
    const call = this.#calls;
    this.#calls += 1;
    const journal = this.#config.journal;
    const hash = journal === undefined ? undefined : requestHash(messages, []);
    const recorded = hash === undefined ? undefined : this.#recorded(call, hash);
    if (recorded !== undefined) return { content: recorded.content, replayed: true };
    const allowance = this.#config.allowance;
    const grant =
      allowance === undefined ? undefined : await this.#reserve(allowance, messages, [], signal);
    const maxTokens = Math.min(summaryTokens, grant?.maxTokens ?? summaryTokens);
    let response: ModelResponse;
    try {
      response = await this.#config.model.complete(
        { messages, caller: { name: this.name, role: this.#config.role }, maxTokens },
        { signal },
      );
    } catch (error) {
      grant?.settle(settledBy(error, signal));
      throw error;
    }
    // Journaled before the event that announces it (history.compressed).
    if (journal !== undefined && hash !== undefined)
      journal.record({ kind: 'model', step: call, hash, response });
    this.#recordUsage(state, response.usage);
    const { usage } = response;
    return {
      content: response.content,
      usage,
      ...(grant === undefined ? {} : { settle: () => grant.settle(usage) }),
    };
  }

  #step(state: RunState, kind: Step['kind'], detail: string): void {
    const step: Step = { index: state.steps.length, kind, detail };
    state.steps.push(step);
    this.#emit({ type: 'step', step });
  }

  #stop(state: RunState, stopReason: AgentStopReason, error?: SerializedError): AgentResult {
    // Whatever ended the run, every tool call in the history gets an answer, so
    // the conversation stays valid for any provider when it continues.
    const messages = closePendingToolCalls(state.messages, PENDING_REASONS[stopReason]);
    const result: AgentResult = {
      final: lastAssistantText(messages),
      steps: state.steps,
      messages,
      usage: state.usage,
      stopReason,
    };
    if (error !== undefined) result.error = error;
    return result;
  }

  #emit(payload: EventPayload): void {
    const { parentId, role } = this.#config;
    const sequenced = makeEvent(
      { runId: this.runId, agentId: this.agentId, parentId, role },
      payload,
    );
    this.#config.events?.emit(sequenced);
    if (payload.type === 'callback.error') return;
    // A hook is wrapped (and its closure made) only when it is set.
    if (this.onEvent !== undefined) this.#hook('onEvent', () => this.onEvent?.(sequenced));
    if (payload.type === 'model.response') {
      if (this.onThink !== undefined) {
        this.#hook('onThink', () =>
          this.onThink?.(payload.content, payload.toolCalls, payload.thinking),
        );
      }
    } else if (payload.type === 'step') {
      if (this.onStep !== undefined) this.#hook('onStep', () => this.onStep?.(payload.step));
    }
  }

  // A hook that throws is reported as a callback.error event; the loop goes on.
  #hook(name: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      this.#emit({ type: 'callback.error', callback: name, error: serializeError(error) });
    }
  }
}

// A call whose arguments pass on troupe's note to the model (as a sub-agent's task, say) is not run.
function echoRefusal(call: ToolCall, note: string): ToolResult {
  const message = `Not run: the arguments of ${call.name} repeat troupe's note to you ("${truncateEnd(note, 120)}"), which is not part of the task. Give ${call.name} what the user's task needs, or give your final answer.`;
  return { ok: false, content: message, error: { code: 'tool.refused', message } };
}

// Errors after which the provider may have billed the prompt: the request got
// through and its answer was lost (cancelled, cut, timed out, unreadable).
const BILLED_ERRORS = new Set<string>([
  'cancelled',
  'timeout',
  'model.stream_interrupted',
  'model.connection',
  'model.bad_response',
]);

// How a call that got no response ended, for the budget: possibly billed, or refused with an error answer.
function settledBy(error: unknown, signal: AbortSignal): 'aborted' | 'failed' {
  if (signal.aborted) return 'aborted';
  return isTroupeError(error) && !BILLED_ERRORS.has(error.code) ? 'failed' : 'aborted';
}

/**
 * The mistakes a JavaScript caller (or a cast) can make that TypeScript
 * would have caught, each as a `usage.invalid_option` saying what to pass:
 * most of all a model spec where a model is expected.
 */
function checkAgentConfig(config: AgentConfig): void {
  const fail = (message: string): never => {
    throw new TroupeError('usage.invalid_option', message);
  };
  if (typeof config !== 'object' || config === null) {
    fail('new Agent(config) needs a config object: { name, model, tools?, system? }.');
  }
  if (typeof config.name !== 'string' || config.name.trim() === '') {
    fail(`name must be a non-empty string, got ${JSON.stringify(config.name)}.`);
  }
  const model = config.model as Partial<Model> | undefined;
  if (typeof model?.complete !== 'function' || typeof model.stream !== 'function') {
    const spec =
      model !== undefined && typeof (model as { provider?: unknown }).provider === 'string';
    fail(
      spec
        ? 'model must be a Model, got a model spec: pass createModel(spec) instead of the spec.'
        : 'model must be a Model (from createModel({ provider, model })).',
    );
  }
  if (
    config.tools !== undefined &&
    typeof (config.tools as Partial<ToolRegistry> | null)?.call !== 'function'
  ) {
    fail('tools must be a ToolRegistry: new ToolRegistry([tool, …]).');
  }
  if (config.system !== undefined && typeof config.system !== 'string') {
    fail('system must be a string (the system prompt).');
  }
}
