import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { EventBus } from '../events/bus.js';
import type { AgentEvent } from '../events/schema.js';
import { resolveOtelEndpoint } from './otel-config.js';
import { GenAiSpanMapper } from './span-mapper.js';

/** Options of an OpenTelemetry export. Unset fields come from the `OTEL_*` variables of `env`. */
export interface OtelExportOptions {
  /** Where `OTEL_*` settings are read and which secrets are redacted (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** OTLP/HTTP traces URL (default from OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else localhost:4318). */
  url?: string;
  /** Request headers (default from OTEL_EXPORTER_OTLP_[TRACES_]HEADERS). */
  headers?: Record<string, string>;
  /** `service.name` (default OTEL_SERVICE_NAME, else `troupe`). */
  serviceName?: string;
  /** Put prompts, completions and tool inputs/outputs on spans, redacted (default false, or
   * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true). */
  captureContent?: boolean;
  /** Told once when spans cannot be delivered (default `process.emitWarning`). */
  onWarning?: (message: string) => void;
  /** Longest wait for the last spans on close, in milliseconds (default 2,000). */
  flushTimeoutMs?: number;
  /** Time limit of one export request including its retries, in milliseconds (default 2,000). */
  exportTimeoutMs?: number;
}

/** What an export delivered, reported on close. */
export interface OtelExportReport {
  /** Spans the collector accepted. */
  exportedSpans: number;
  /** Spans that could not be delivered (collector down, refused, or too slow). */
  failedSpans: number;
  /** The URL spans were sent to. */
  url: string;
}

/** A running export: close it after the run to end open spans and flush. */
export interface OtelExport {
  /** Resolves once the OpenTelemetry packages are loaded (events are buffered until then). */
  readonly ready: Promise<void>;
  /** Stops listening, ends open spans, flushes (bounded by flushTimeoutMs). Safe to call twice. */
  close(): Promise<OtelExportReport>;
}

interface Pipeline {
  mapper: GenAiSpanMapper;
  shutdown(): Promise<void>;
}

// The batch queue holds a whole large run, so an after-the-fact export of
// 100,000 events drops nothing while the collector catches up.
const MAX_QUEUE_SIZE = 1 << 17;

/**
 * Streams a run's events from `bus` to an OpenTelemetry collector as GenAI
 * spans (OTLP/HTTP, JSON). The `@opentelemetry/*` packages load only here,
 * lazily; events that arrive meanwhile are buffered. Export never blocks the
 * run: spans are batched and sent in the background, and a collector that is
 * down costs one warning.
 *
 * @example
 * const runtime = new Runtime({ model, workspace: '.' });
 * const otel = exportToOtel(runtime.bus, { serviceName: 'my-agents' });
 * await runJob({ task, runtime });
 * await otel.close();
 */
export function exportToOtel(bus: EventBus, options: OtelExportOptions = {}): OtelExport {
  const session = new ExportSession(options);
  const unsubscribe = bus.onAny((event) => session.handle(event));
  return {
    ready: session.ready,
    close: async () => {
      unsubscribe();
      return session.close();
    },
  };
}

/**
 * Exports a finished (or interrupted) run's events, e.g. from `readTrace`,
 * as the same spans the live export makes: start and end times come from
 * the events, not from now.
 */
export async function exportEventsToOtel(
  events: Iterable<AgentEvent>,
  options: OtelExportOptions = {},
): Promise<OtelExportReport> {
  const session = new ExportSession(options);
  for (const event of events) session.handle(event);
  return session.close();
}

class ExportSession {
  readonly ready: Promise<void>;
  readonly #url: string;
  readonly #warn: (message: string) => void;
  readonly #flushTimeoutMs: number;
  #pipeline: Pipeline | undefined;
  #buffer: AgentEvent[] | undefined = [];
  #exported = 0;
  #failed = 0;
  #warned = false;
  #collectorDown = false;
  #closing: Promise<OtelExportReport> | undefined;

  constructor(options: OtelExportOptions) {
    const endpoint = resolveOtelEndpoint(options.env);
    this.#url = options.url ?? endpoint.url;
    const onWarning =
      options.onWarning ?? ((message: string) => process.emitWarning(message, 'TroupeOtelWarning'));
    this.#warn = (message) => {
      if (this.#warned) return;
      this.#warned = true;
      onWarning(message);
    };
    this.#flushTimeoutMs = options.flushTimeoutMs ?? 2_000;
    this.ready = this.#load(options, endpoint).then(
      (pipeline) => {
        this.#pipeline = pipeline;
        const buffered = this.#buffer ?? [];
        this.#buffer = undefined;
        for (const event of buffered) pipeline.mapper.handle(event);
      },
      (error: unknown) => {
        this.#buffer = undefined;
        this.#warn(
          `OpenTelemetry export is off: its packages could not load (${error instanceof Error ? error.message : String(error)}). Reinstall troupe's dependencies (npm install).`,
        );
      },
    );
  }

  handle(event: AgentEvent): void {
    if (this.#pipeline !== undefined) this.#pipeline.mapper.handle(event);
    else this.#buffer?.push(event);
  }

  close(): Promise<OtelExportReport> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<OtelExportReport> {
    await this.ready;
    const pipeline = this.#pipeline;
    if (pipeline !== undefined) {
      pipeline.mapper.endAll();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        pipeline.shutdown().then(
          () => false,
          () => false,
        ),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), this.#flushTimeoutMs);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        this.#warn(
          `OpenTelemetry export to ${this.#url} did not finish within ${this.#flushTimeoutMs} ms; the last spans may be lost. Is the collector running?`,
        );
      }
    }
    return { exportedSpans: this.#exported, failedSpans: this.#failed, url: this.#url };
  }

  async #load(
    options: OtelExportOptions,
    endpoint: ReturnType<typeof resolveOtelEndpoint>,
  ): Promise<Pipeline> {
    const [api, sdk, resources, otlp] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/exporter-trace-otlp-http'),
    ]);
    const otlpExporter = new otlp.OTLPTraceExporter({
      url: this.#url,
      headers: options.headers ?? endpoint.headers,
      timeoutMillis: options.exportTimeoutMs ?? 2_000,
    });
    const provider = new sdk.BasicTracerProvider({
      resource: resources.resourceFromAttributes({
        'service.name': options.serviceName ?? endpoint.serviceName,
      }),
      spanProcessors: [
        new sdk.BatchSpanProcessor(this.#watch(otlpExporter), {
          maxQueueSize: MAX_QUEUE_SIZE,
          maxExportBatchSize: 512,
          scheduledDelayMillis: 500,
        }),
      ],
    });
    const tracer = provider.getTracer('troupe');
    const mapper = new GenAiSpanMapper(api, tracer, {
      captureContent: options.captureContent ?? endpoint.captureContent,
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    return { mapper, shutdown: () => provider.shutdown() };
  }

  // Counts delivered spans and warns on the first failure. Once the collector
  // has failed a whole export (retries included), later batches fail at once
  // instead of each waiting out its own retries.
  #watch(exporter: SpanExporter): SpanExporter {
    return {
      export: (spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]) => {
        if (this.#collectorDown) {
          this.#failed += spans.length;
          done({ code: 1 });
          return;
        }
        exporter.export(spans, (result) => {
          // ExportResultCode.SUCCESS is 0.
          if (result.code === 0) this.#exported += spans.length;
          else {
            this.#failed += spans.length;
            this.#collectorDown = true;
            this.#warn(
              `OpenTelemetry export to ${this.#url} failed (${result.error?.message ?? 'no reply'}); the run goes on without it. Check OTEL_EXPORTER_OTLP_ENDPOINT and that the collector is running.`,
            );
          }
          done(result);
        });
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
  }
}
