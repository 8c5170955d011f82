/** `troupe/observe`: OpenTelemetry GenAI spans and the one-file HTML timeline of a run. */

export { renderTimelineHtml, TIMELINE_FILE, writeTimelineHtml } from '../observe/html-timeline.js';
export type { OtelEndpoint } from '../observe/otel-config.js';
export { resolveOtelEndpoint } from '../observe/otel-config.js';
export type { OtelExport, OtelExportOptions, OtelExportReport } from '../observe/otel-exporter.js';
export { exportEventsToOtel, exportToOtel } from '../observe/otel-exporter.js';
export type { TimelineData, TimelineOptions, TimelinePrice } from '../observe/timeline-model.js';
export { buildTimeline } from '../observe/timeline-model.js';
