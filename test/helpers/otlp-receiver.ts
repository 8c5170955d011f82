import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON request carries it, attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  links: Array<{ spanId: string; attributes: Record<string, unknown> }>;
  status: { code?: number; message?: string };
  serviceName: unknown;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

type OtlpAttributes = Array<{ key: string; value: OtlpValue }> | undefined;

function decodeValue(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(decodeValue);
  return undefined;
}

function decodeAttributes(list: OtlpAttributes): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, decodeValue(value)]));
}

const nanosToMs = (nanos: string | number): number => Number(BigInt(nanos) / 1_000_000n);

/** Decodes an ExportTraceServiceRequest in OTLP's JSON encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding). */
export function decodeOtlpJson(body: string): ReceivedSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans?: Array<{
      resource?: { attributes?: OtlpAttributes };
      scopeSpans?: Array<{ spans?: Array<Record<string, any>> }>;
    }>;
  };
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = decodeAttributes(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          traceId: span['traceId'],
          spanId: span['spanId'],
          parentSpanId: span['parentSpanId'] || undefined,
          name: span['name'],
          kind: span['kind'],
          startMs: nanosToMs(span['startTimeUnixNano']),
          endMs: nanosToMs(span['endTimeUnixNano']),
          attributes: decodeAttributes(span['attributes']),
          events: (span['events'] ?? []).map((event: any) => ({
            name: event.name,
            attributes: decodeAttributes(event.attributes),
          })),
          links: (span['links'] ?? []).map((link: any) => ({
            spanId: link.spanId,
            attributes: decodeAttributes(link.attributes),
          })),
          status: span['status'] ?? {},
          serviceName: resource['service.name'],
        });
      }
    }
  }
  return spans;
}

/** A local OTLP/HTTP trace receiver: collects every span POSTed to /v1/traces. */
export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  requests: Array<{ contentType: string | undefined; headers: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** Starts a receiver on a free port of 127.0.0.1. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      requests.push({ contentType: request.headers['content-type'], headers: request.headers });
      spans.push(...decodeOtlpJson(Buffer.concat(chunks).toString('utf8')));
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A URL on which nothing listens: a collector that is down. */
export async function deadCollectorUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1/traces`;
}
