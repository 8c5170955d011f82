import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import type { AgentEvent, EventOf } from '../events/schema.js';
import { createRedactor, redactValue } from '../util/redact.js';

/** The parts of `@opentelemetry/api` the mapper uses, passed in so the package loads lazily. */
export interface OtelApi {
  trace: typeof import('@opentelemetry/api').trace;
  context: typeof import('@opentelemetry/api').context;
  SpanKind: typeof import('@opentelemetry/api').SpanKind;
  SpanStatusCode: typeof import('@opentelemetry/api').SpanStatusCode;
}

/** Options of a GenAiSpanMapper. */
export interface SpanMapperOptions {
  /** Put prompts, completions and tool inputs/outputs on spans, redacted (default false). */
  captureContent?: boolean;
  /** Environment whose secret values are redacted from captured content (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Longest captured text per attribute, in characters (default 8,000). */
  maxContentChars?: number;
}

interface AgentSpan {
  span: Span;
  model: ModelName;
  role: string;
}

interface ModelName {
  provider: string;
  model: string;
}

/**
 * `describeModel` strings as agent.spawned carries them (`openai/gpt-4o`,
 * `offline (heuristic)`, `scripted`) split into the GenAI provider and model.
 */
export function splitModelName(description: string | undefined): ModelName {
  if (description === undefined || description === '') return { provider: 'unknown', model: '' };
  const slash = description.indexOf('/');
  if (slash > 0) {
    return { provider: description.slice(0, slash), model: description.slice(slash + 1) };
  }
  const space = description.indexOf(' ');
  return space > 0
    ? { provider: description.slice(0, space), model: description }
    : { provider: description, model: description };
}

const WAIT_TOOLS = new Set(['delegate', 'wait_agents']);

/**
 * Turns troupe events, in stream order, into OpenTelemetry spans that follow
 * the GenAI semantic conventions: `invoke_agent` per actor (parented by its
 * parent agent's span), `chat` per model call and `execute_tool` per tool
 * call under the agent. Start and end times are the events' own `ts`, so a
 * finished trace maps to the same spans as the live run did.
 */
export class GenAiSpanMapper {
  readonly #api: OtelApi;
  readonly #tracer: Tracer;
  readonly #agents = new Map<string, AgentSpan>();
  readonly #chats = new Map<string, Span>();
  readonly #tools = new Map<string, Span>();
  // The keys of each agent's open tool spans: an agent's end closes its own
  // without a scan of every open span (a scan per end is quadratic at scale).
  readonly #toolsByAgent = new Map<string, Set<string>>();
  // The sender's span per message id, so a receiver can link back to it.
  readonly #senders = new Map<string, Span>();
  readonly #captureContent: boolean;
  readonly #redact: (text: string) => string;
  readonly #maxContentChars: number;
  #lastTs = 0;

  constructor(api: OtelApi, tracer: Tracer, options: SpanMapperOptions = {}) {
    this.#api = api;
    this.#tracer = tracer;
    this.#captureContent = options.captureContent === true;
    this.#redact = createRedactor(options.env);
    this.#maxContentChars = options.maxContentChars ?? 8_000;
  }

  /** Spans started and not yet ended (agents, model calls, tool calls). */
  get openSpans(): number {
    return this.#agents.size + this.#chats.size + this.#tools.size;
  }

  /** Maps one event; events of unknown agents are ignored. */
  handle(event: AgentEvent): void {
    this.#lastTs = Math.max(this.#lastTs, event.ts);
    switch (event.type) {
      case 'agent.spawned':
        this.#spawned(event);
        return;
      case 'agent.finished':
        this.#finished(event);
        return;
      case 'model.request':
        this.#modelRequest(event);
        return;
      case 'model.response':
        this.#modelResponse(event);
        return;
      case 'tool.call':
        this.#toolCall(event);
        return;
      case 'tool.result':
        this.#toolResult(event);
        return;
      case 'message.sent':
      case 'message.received':
        this.#message(event);
        return;
      case 'run.finished':
        this.endAll(event.ts);
        return;
      case 'agent.progress':
      case 'agent.nudged':
      case 'budget.warning':
      case 'budget.exceeded':
      case 'history.compressed':
      case 'callback.error':
      case 'warning.raised':
      case 'role.adapted':
        this.#note(event);
        return;
      case 'run.started':
      case 'model.delta':
      case 'step':
        return;
    }
  }

  /** Ends every open span at `ts` (default the latest event time): a run that stopped mid-way. */
  endAll(ts: number = this.#lastTs): void {
    for (const span of [...this.#tools.values(), ...this.#chats.values()]) span.end(ts);
    for (const { span } of this.#agents.values()) {
      span.setAttribute('troupe.agent.status', 'unfinished');
      span.end(ts);
    }
    this.#tools.clear();
    this.#toolsByAgent.clear();
    this.#chats.clear();
    this.#agents.clear();
    this.#senders.clear();
  }

  #parentContext(span: Span | undefined) {
    const root = this.#api.context.active();
    return span === undefined ? root : this.#api.trace.setSpan(root, span);
  }

  #content(value: unknown): string {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    const redacted = this.#redact(text ?? '');
    return redacted.length > this.#maxContentChars
      ? `${redacted.slice(0, this.#maxContentChars)}…`
      : redacted;
  }

  #spawned(event: EventOf<'agent.spawned'>): void {
    const parent =
      event.parentId === undefined ? undefined : this.#agents.get(event.parentId)?.span;
    const role = event.role ?? event.agentId;
    const model = splitModelName(event.model);
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': role,
      'gen_ai.agent.id': event.agentId,
      'gen_ai.provider.name': model.provider,
      'gen_ai.request.model': model.model,
      'troupe.run_id': event.runId,
      'troupe.role': role,
      'troupe.agent.id': event.agentId,
    };
    if (event.parentId !== undefined) attributes['troupe.parent_id'] = event.parentId;
    if (event.depth !== undefined) attributes['troupe.agent.depth'] = event.depth;
    if (this.#captureContent) attributes['troupe.agent.task'] = this.#content(event.task);
    const span = this.#tracer.startSpan(
      `invoke_agent ${role}`,
      { kind: this.#api.SpanKind.INTERNAL, startTime: event.ts, attributes },
      this.#parentContext(parent),
    );
    this.#agents.set(event.agentId, { span, model, role });
  }

  #finished(event: EventOf<'agent.finished'>): void {
    const agent = this.#agents.get(event.agentId);
    if (agent === undefined) return;
    const chat = `${event.agentId}\u0000chat`;
    this.#chats.get(chat)?.end(event.ts);
    this.#chats.delete(chat);
    for (const key of this.#toolsByAgent.get(event.agentId) ?? []) {
      this.#tools.get(key)?.end(event.ts);
      this.#tools.delete(key);
    }
    this.#toolsByAgent.delete(event.agentId);
    const { span } = agent;
    span.setAttribute('troupe.agent.status', event.status);
    if (event.stopReason !== undefined)
      span.setAttribute('troupe.agent.stop_reason', event.stopReason);
    if (event.steps !== undefined) span.setAttribute('troupe.agent.steps', event.steps);
    if (event.usage !== undefined) {
      span.setAttribute('gen_ai.usage.input_tokens', event.usage.inputTokens);
      span.setAttribute('gen_ai.usage.output_tokens', event.usage.outputTokens);
    }
    if (this.#captureContent && event.final !== undefined) {
      span.setAttribute('troupe.agent.final', this.#content(event.final));
    }
    if (event.status === 'completed') {
      span.setStatus({ code: this.#api.SpanStatusCode.OK });
    } else {
      span.setAttribute('error.type', event.error?.code ?? event.status);
      span.setStatus({
        code: this.#api.SpanStatusCode.ERROR,
        message: this.#redact(event.error?.message ?? event.status),
      });
    }
    span.end(event.ts);
    this.#agents.delete(event.agentId);
  }

  #modelRequest(event: EventOf<'model.request'>): void {
    const agent = this.#agents.get(event.agentId);
    if (agent === undefined) return;
    const key = `${event.agentId}\u0000chat`;
    this.#chats.get(key)?.end(event.ts);
    const span = this.#tracer.startSpan(
      `chat ${agent.model.model}`.trim(),
      {
        kind: this.#api.SpanKind.CLIENT,
        startTime: event.ts,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': agent.model.provider,
          'gen_ai.request.model': agent.model.model,
          'gen_ai.agent.name': agent.role,
          'gen_ai.agent.id': event.agentId,
          'troupe.run_id': event.runId,
          'troupe.step': event.step,
          'troupe.request.messages': event.messages,
          'troupe.request.tools': event.tools,
        },
      },
      this.#parentContext(agent.span),
    );
    this.#chats.set(key, span);
  }

  #modelResponse(event: EventOf<'model.response'>): void {
    const key = `${event.agentId}\u0000chat`;
    const span = this.#chats.get(key);
    if (span === undefined) return;
    span.setAttributes({
      'gen_ai.usage.input_tokens': event.usage.inputTokens,
      'gen_ai.usage.output_tokens': event.usage.outputTokens,
      'gen_ai.response.finish_reasons': [event.stopReason ?? 'unknown'],
    });
    if (event.usage.cacheReadTokens !== undefined) {
      span.setAttribute('gen_ai.usage.cache_read.input_tokens', event.usage.cacheReadTokens);
    }
    if (event.usage.cacheWriteTokens !== undefined) {
      span.setAttribute('gen_ai.usage.cache_creation.input_tokens', event.usage.cacheWriteTokens);
    }
    if (this.#captureContent) {
      const parts: Array<Record<string, unknown>> = [];
      if (event.thinking !== undefined) parts.push({ type: 'reasoning', content: event.thinking });
      if (event.content !== '') parts.push({ type: 'text', content: event.content });
      for (const call of event.toolCalls) {
        parts.push({ type: 'tool_call', id: call.id, name: call.name, arguments: call.arguments });
      }
      const message = { role: 'assistant', parts, finish_reason: event.stopReason ?? 'unknown' };
      span.setAttribute(
        'gen_ai.output.messages',
        this.#content(redactValue([message], this.#redact)),
      );
    }
    span.end(event.ts);
    this.#chats.delete(key);
  }

  #toolCall(event: EventOf<'tool.call'>): void {
    const agent = this.#agents.get(event.agentId);
    if (agent === undefined) return;
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': event.name,
      'gen_ai.tool.call.id': event.callId,
      'gen_ai.tool.type': 'function',
      'gen_ai.agent.id': event.agentId,
      'troupe.run_id': event.runId,
    };
    if (WAIT_TOOLS.has(event.name)) attributes['troupe.tool.waits'] = true;
    if (this.#captureContent) {
      attributes['gen_ai.tool.call.arguments'] = this.#content(
        redactValue(event.input, this.#redact),
      );
    }
    const span = this.#tracer.startSpan(
      `execute_tool ${event.name}`,
      { kind: this.#api.SpanKind.INTERNAL, startTime: event.ts, attributes },
      this.#parentContext(agent.span),
    );
    const key = `${event.agentId}\u0000${event.callId}`;
    this.#tools.set(key, span);
    let open = this.#toolsByAgent.get(event.agentId);
    if (open === undefined) {
      open = new Set();
      this.#toolsByAgent.set(event.agentId, open);
    }
    open.add(key);
  }

  #toolResult(event: EventOf<'tool.result'>): void {
    const key = `${event.agentId}\u0000${event.callId}`;
    const span = this.#tools.get(key);
    if (span === undefined) return;
    span.setAttribute('troupe.tool.ok', event.ok);
    if (event.durationMs !== undefined)
      span.setAttribute('troupe.tool.duration_ms', event.durationMs);
    if (this.#captureContent)
      span.setAttribute('gen_ai.tool.call.result', this.#content(event.content));
    if (!event.ok) {
      span.setAttribute('error.type', event.error?.code ?? 'tool.failed');
      span.setStatus({
        code: this.#api.SpanStatusCode.ERROR,
        message: this.#redact(event.error?.message ?? 'tool failed'),
      });
    }
    span.end(event.ts);
    this.#tools.delete(key);
    this.#toolsByAgent.get(event.agentId)?.delete(key);
  }

  #message(event: EventOf<'message.sent'> | EventOf<'message.received'>): void {
    const agent = this.#agents.get(event.agentId);
    if (agent === undefined) return;
    if (event.type === 'message.sent') {
      agent.span.addEvent(
        'troupe.message.sent',
        {
          'troupe.channel': event.channel,
          'troupe.message.id': event.messageId,
          ...(event.to === undefined ? {} : { 'troupe.message.to': event.to }),
        },
        event.ts,
      );
      this.#senders.set(event.messageId, agent.span);
      return;
    }
    agent.span.addEvent(
      'troupe.message.received',
      {
        'troupe.channel': event.channel,
        'troupe.message.id': event.messageId,
        'troupe.message.from': event.from,
      },
      event.ts,
    );
    const sender = this.#senders.get(event.messageId);
    if (sender !== undefined) {
      agent.span.addLink({
        context: sender.spanContext(),
        attributes: { 'troupe.channel': event.channel, 'troupe.message.id': event.messageId },
      });
    }
  }

  #note(
    event: EventOf<
      | 'agent.progress'
      | 'agent.nudged'
      | 'budget.warning'
      | 'budget.exceeded'
      | 'history.compressed'
      | 'callback.error'
      | 'warning.raised'
      | 'role.adapted'
    >,
  ): void {
    const span = this.#agents.get(event.agentId)?.span;
    if (span === undefined) return;
    const attributes: Attributes = {};
    switch (event.type) {
      case 'agent.progress':
        if (this.#captureContent) attributes['troupe.note'] = this.#content(event.note);
        break;
      case 'agent.nudged':
        attributes['troupe.reason'] = event.reason;
        break;
      case 'budget.warning':
      case 'budget.exceeded':
        Object.assign(attributes, {
          'troupe.budget.scope': event.scope,
          'troupe.budget.metric': event.metric,
          'troupe.budget.used': event.used,
          'troupe.budget.limit': event.limit,
        });
        break;
      case 'history.compressed':
        Object.assign(attributes, {
          'troupe.history.before_tokens': event.beforeTokens,
          'troupe.history.after_tokens': event.afterTokens,
        });
        break;
      case 'callback.error':
        Object.assign(attributes, {
          'troupe.callback': event.callback,
          'error.type': event.error.code,
        });
        break;
      case 'warning.raised':
        Object.assign(attributes, {
          'troupe.warning.source': event.source,
          'troupe.warning.message': event.message,
        });
        break;
      case 'role.adapted':
        Object.assign(attributes, {
          'troupe.role.name': event.name,
          'troupe.role.dropped_tools': event.dropped,
          'troupe.role.ungranted_tiers': event.tiers,
        });
        break;
    }
    span.addEvent(`troupe.${event.type}`, attributes, event.ts);
  }
}
