import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { EventBus } from '../../events/bus.js';
import type { AgentEvent } from '../../events/schema.js';
import { readTrace } from '../../events/trace.js';
import type { OtelExport } from '../../observe/otel-exporter.js';
import type { TimelinePrice } from '../../observe/timeline-model.js';
import { describeDiskError, isStorageError } from '../../util/disk-write.js';
import type { CliIo } from '../context.js';

/** The `--otel` flag's help text, shared by run, demo and trace. */
export const OTEL_FLAG_HELP =
  'export OpenTelemetry GenAI spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME; content only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)';

/** What a run's observers need: whether to export, and how to price the timeline. */
export interface RunObserverSettings {
  otel?: boolean | undefined;
  price?: TimelinePrice | undefined;
}

/** Observers of one CLI run: started before it, finished after its trace is closed. */
export interface RunObservers {
  /** Writes timeline.html beside the trace and flushes the OTel export; returns footer lines. */
  finish(tracePath: string, show: (path: string) => string): Promise<string[]>;
}

function warn(io: CliIo): (message: string) => void {
  return (message) => io.stderr.write(`warning: ${message}\n`);
}

/**
 * Starts the OTel export of a live run when `--otel` is on. The exporter and
 * the timeline's code load only when used (the export when `--otel` is on,
 * the timeline after the run), not before the run's first model call.
 */
export async function startRunObservers(
  io: CliIo,
  settings: RunObserverSettings,
  bus: EventBus,
): Promise<RunObservers> {
  const otel: OtelExport | undefined =
    settings.otel === true
      ? (await import('../../observe/otel-exporter.js')).exportToOtel(bus, {
          env: io.env,
          onWarning: warn(io),
        })
      : undefined;
  return {
    async finish(tracePath, show) {
      const lines: string[] = [];
      const { TIMELINE_FILE, writeTimelineHtml } = await import('../../observe/html-timeline.js');
      const target = join(dirname(tracePath), TIMELINE_FILE);
      try {
        const { events } = readTrace(tracePath);
        const path = writeTimelineHtml(target, events, {
          price: settings.price,
          env: io.env,
        });
        lines.push(`timeline ${show(path)}`);
      } catch (error) {
        // A half-written page (a full disk) is worse than none.
        if (isStorageError(error)) rmSync(target, { force: true });
        warn(io)(`could not write ${TIMELINE_FILE}: ${describeDiskError(error)}`);
      }
      if (otel !== undefined) {
        const report = await otel.close();
        lines.push(`otel     ${report.exportedSpans} spans to ${report.url}`);
      }
      return lines;
    },
  };
}

/** `troupe trace <run> --html [file] --otel`: the timeline and/or the export of a saved trace. */
export async function observeTrace(
  io: CliIo,
  events: readonly AgentEvent[],
  tracePath: string,
  flags: { html?: string | boolean | undefined; otel?: boolean | undefined },
  options: { price?: TimelinePrice | undefined; resolvePath: (file: string) => string },
): Promise<void> {
  if (flags.html !== undefined && flags.html !== false) {
    const { TIMELINE_FILE, writeTimelineHtml } = await import('../../observe/html-timeline.js');
    const target =
      flags.html === true
        ? join(dirname(tracePath), TIMELINE_FILE)
        : options.resolvePath(flags.html);
    writeTimelineHtml(target, events, { price: options.price, env: io.env });
    io.stdout.write(`timeline ${target}\n`);
  }
  if (flags.otel === true) {
    const { exportEventsToOtel } = await import('../../observe/otel-exporter.js');
    const report = await exportEventsToOtel(events, { env: io.env, onWarning: warn(io) });
    io.stdout.write(
      `otel     ${report.exportedSpans} spans to ${report.url}${report.failedSpans > 0 ? ` (${report.failedSpans} not delivered)` : ''}\n`,
    );
  }
}
