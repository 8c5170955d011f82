import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AgentEvent } from '../events/schema.js';
import { TIMELINE_SCRIPT, TIMELINE_STYLE } from './timeline-client.js';
import { buildTimeline, type TimelineData, type TimelineOptions } from './timeline-model.js';

/** The file name of the timeline written beside a run's trace. */
export const TIMELINE_FILE = 'timeline.html';

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

// JSON inside <script> must not close the element early; \u2028 and \u2029
// are escaped too so the island stays valid in every parser.
function scriptSafeJson(data: unknown): string {
  return JSON.stringify(data)
    .replaceAll('<', '\\u003c')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

/** Renders timeline data as one self-contained HTML page. */
export function renderTimelineData(data: TimelineData): string {
  const title = `troupe run ${data.runId}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(title)}</title>
<style>${TIMELINE_STYLE}</style>
</head>
<body>
<header>
<h1 id="run-title">${escapeHtml(title)}</h1>
<div class="stats" id="stats"></div>
<div class="task" id="task"></div>
</header>
<div class="toolbar">
<button id="zoom-out" title="zoom out">&minus;</button><button id="zoom-in" title="zoom in">+</button><button id="zoom-fit">fit</button>
<span class="legend"><i class="seg-model"></i>model call<i class="seg-tool"></i>tool call<i class="seg-wait"></i>waiting<i style="background:var(--fail)"></i>failed<i style="background:#7a52c7;height:2px"></i>channel message</span>
<span class="legend"><i class="st-completed"></i>completed<i class="st-failed"></i>failed<i class="st-cancelled"></i>cancelled<i class="st-timed_out"></i>timed out<i class="st-unfinished"></i>unfinished</span>
</div>
<div class="main">
<div class="tl">
<div id="axis"><div id="axis-inner"></div></div>
<div id="scroller"><div id="canvas"><svg id="arrows" xmlns="http://www.w3.org/2000/svg"><defs><marker id="head" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto"><path d="M0 0 L6 3 L0 6 z" fill="#7a52c7"/></marker></defs></svg><div id="rows"></div></div></div>
</div>
<aside id="panel"></aside>
</div>
<section>
<details open><summary>Answer</summary><pre id="answer"></pre></details>
<pre class="err" id="run-error"></pre>
<div class="task" id="shortened"></div>
</section>
<section class="tables" id="breakdown"></section>
<script id="troupe-data" type="application/json">${scriptSafeJson(data)}</script>
<script>${TIMELINE_SCRIPT}</script>
</body>
</html>
`;
}

/**
 * Renders a run's events as one self-contained HTML file (no network, opens
 * from disk): a Gantt-style timeline with a row per agent nested under its
 * parent, model calls, tool calls and waits as segments, channel messages as
 * arrows, token and cost breakdowns, the answer, and each agent's transcript
 * on click.
 *
 * @example
 * const { events } = readTrace('troupe-runs/<runId>/trace.jsonl');
 * writeFileSync('timeline.html', renderTimelineHtml(events));
 */
export function renderTimelineHtml(
  events: readonly AgentEvent[],
  options: TimelineOptions = {},
): string {
  return renderTimelineData(buildTimeline(events, options));
}

/** Writes the timeline of `events` to `path` (folders created as needed); returns the path. */
export function writeTimelineHtml(
  path: string,
  events: readonly AgentEvent[],
  options: TimelineOptions = {},
): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, renderTimelineHtml(events, options));
  return path;
}
