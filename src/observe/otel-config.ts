/**
 * Where OpenTelemetry spans go, read from the standard `OTEL_*` environment
 * variables (https://opentelemetry.io/docs/specs/otel/protocol/exporter/) so
 * troupe drops into any setup that already exports to a collector.
 */

/** The resolved export destination and what spans may carry. */
export interface OtelEndpoint {
  /** Full URL spans are POSTed to (OTLP/HTTP with a JSON body). */
  url: string;
  /** Extra request headers, e.g. an API key for a hosted backend. */
  headers: Record<string, string>;
  /** `service.name` of the exported resource. */
  serviceName: string;
  /** Whether prompts, completions and tool inputs/outputs go into spans (redacted). */
  captureContent: boolean;
}

/** The default OTLP/HTTP traces URL of a collector on this machine. */
export const DEFAULT_OTLP_TRACES_URL = 'http://localhost:4318/v1/traces';

/** The environment variable that turns content capture on, as GenAI instrumentations name it. */
export const CAPTURE_CONTENT_ENV = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}

/** Parses `key1=value1,key2=value2` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS is written. */
export function parseOtelHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const part of (text ?? '').split(',')) {
    const index = part.indexOf('=');
    if (index <= 0) continue;
    const key = part.slice(0, index).trim();
    const raw = part.slice(index + 1).trim();
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {
      // A stray % is kept as written rather than dropping the header.
    }
    if (key !== '') headers[key] = value;
  }
  return headers;
}

/**
 * The export destination from `env`: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used
 * as is), else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else
 * localhost:4318; headers from `OTEL_EXPORTER_OTLP_HEADERS` and the
 * traces-specific variable (which wins); `OTEL_SERVICE_NAME` (default `troupe`).
 */
export function resolveOtelEndpoint(env: NodeJS.ProcessEnv = process.env): OtelEndpoint {
  const tracesUrl = nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
  const baseUrl = nonEmpty(env['OTEL_EXPORTER_OTLP_ENDPOINT']);
  const url =
    tracesUrl ??
    (baseUrl === undefined ? DEFAULT_OTLP_TRACES_URL : `${baseUrl.replace(/\/+$/, '')}/v1/traces`);
  return {
    url,
    headers: {
      ...parseOtelHeaders(env['OTEL_EXPORTER_OTLP_HEADERS']),
      ...parseOtelHeaders(env['OTEL_EXPORTER_OTLP_TRACES_HEADERS']),
    },
    serviceName: nonEmpty(env['OTEL_SERVICE_NAME']) ?? 'troupe',
    captureContent: nonEmpty(env[CAPTURE_CONTENT_ENV])?.toLowerCase() === 'true',
  };
}
