/**
 * The browser side of the HTML timeline, inlined into the file: hand-written
 * DOM and SVG with no library, so the page opens from disk with no network
 * and the file stays small. Rows are virtualised (only the rows in view, plus
 * a margin, exist in the DOM), which keeps 1,000 agents smooth.
 *
 * Written as plain ES2017 in a string (the project compiles without DOM
 * types); it must not contain a backtick or a dollar-brace.
 */
export const TIMELINE_STYLE = `
:root { --bg:#fbfbfa; --fg:#1d1d1f; --muted:#6b6b70; --line:#e3e3e0; --model:#3b6fd8; --tool:#d9822b;
  --wait:#9b9ba3; --fail:#d23b3b; --ok:#3a9a5b; --cancel:#8d8d94; --timeout:#c47f00; --open:#5d8fc7; --sel:#fff4c2; }
* { box-sizing: border-box; }
body { margin:0; font:13px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif; color:var(--fg); background:var(--bg); }
header, section { padding:12px 20px; }
header h1 { font-size:18px; margin:0 0 4px; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; color:#fff; font-size:12px; vertical-align:middle; }
.st-completed { background:var(--ok); } .st-failed { background:var(--fail); } .st-cancelled { background:var(--cancel); }
.st-timed_out, .st-budget, .st-partial { background:var(--timeout); } .st-unfinished { background:var(--open); }
.stats span { margin-right:18px; color:var(--muted); } .stats b { color:var(--fg); }
.task { color:var(--muted); max-width:100ch; }
pre { white-space:pre-wrap; word-break:break-word; margin:4px 0; font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace; }
details > pre { background:#fff; border:1px solid var(--line); padding:8px; max-height:40vh; overflow:auto; }
.tables { display:flex; gap:28px; flex-wrap:wrap; }
table { border-collapse:collapse; } th, td { padding:2px 10px 2px 0; text-align:right; } th:first-child, td:first-child { text-align:left; }
th { color:var(--muted); font-weight:500; border-bottom:1px solid var(--line); }
tr.pick { cursor:pointer; } tr.pick:hover { background:var(--sel); }
.main { display:flex; gap:0; border-top:1px solid var(--line); }
.tl { flex:1 1 auto; min-width:0; }
.toolbar { padding:6px 20px; display:flex; gap:8px; align-items:center; flex-wrap:wrap; }
.toolbar button { font:inherit; padding:1px 9px; }
.legend i { display:inline-block; width:12px; height:9px; margin:0 4px 0 10px; border-radius:2px; vertical-align:middle; }
#axis { overflow:hidden; height:22px; border-bottom:1px solid var(--line); position:relative; }
#axis-inner { position:relative; height:22px; }
.tick { position:absolute; top:3px; font-size:11px; color:var(--muted); border-left:1px solid var(--line); padding-left:3px; height:19px; }
#scroller { height:62vh; overflow:auto; position:relative; }
#canvas { position:relative; }
#arrows { position:absolute; left:0; top:0; pointer-events:none; }
.row { position:absolute; left:0; right:0; height:24px; border-bottom:1px solid #f0f0ee; cursor:pointer; }
.row:hover { background:#f4f4f2; } .row.selected { background:var(--sel); }
.label { position:sticky; left:0; z-index:2; width:280px; height:23px; background:inherit; background-color:var(--bg);
  white-space:nowrap; overflow:hidden; text-overflow:ellipsis; padding-top:3px; border-right:1px solid var(--line); }
.row.selected .label { background-color:var(--sel); }
.label .role { color:var(--muted); margin-left:6px; }
.toggle { display:inline-block; width:14px; color:var(--muted); }
.bar { position:absolute; top:5px; height:14px; border-radius:3px; opacity:.28; }
.seg { position:absolute; top:7px; height:10px; border-radius:2px; }
.seg-model { background:var(--model); } .seg-tool { background:var(--tool); }
.seg-wait { background:repeating-linear-gradient(45deg,var(--wait),var(--wait) 3px,#d7d7dc 3px,#d7d7dc 6px); top:9px; height:6px; }
.seg.failed { background:var(--fail); }
.tok { position:absolute; top:4px; font-size:11px; color:var(--muted); white-space:nowrap; }
.arrow { stroke:#7a52c7; stroke-width:1.2; fill:none; opacity:.75; }
#panel { flex:0 0 420px; max-width:45vw; border-left:1px solid var(--line); height:calc(62vh + 58px); overflow:auto; padding:10px 14px; background:#fff; }
#panel h2 { font-size:15px; margin:0 0 6px; }
#panel .meta div { color:var(--muted); } #panel .meta b { color:var(--fg); font-weight:500; }
#panel .err { color:var(--fail); }
.entry { border-top:1px solid #f0f0ee; padding:4px 0; }
.entry .k { font-size:11px; color:var(--muted); text-transform:uppercase; letter-spacing:.03em; }
.k-thinking pre { color:#6b5aa6; font-style:italic; } .k-call pre { color:#9a5b12; } .k-error pre { color:var(--fail); }
.k-sent pre, .k-received pre { color:#5a3fa6; } .k-final pre { font-weight:600; }
a.link { color:#2d5fc2; cursor:pointer; text-decoration:underline; }
.empty { color:var(--muted); padding:20px; }
`;

/** The page script: reads the JSON data island and draws the timeline. */
export const TIMELINE_SCRIPT = String.raw`
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('troupe-data').textContent);
  var agents = data.agents;
  var ROW = 24, LABEL = 280, PAD = 16;
  var scroller = document.getElementById('scroller');
  var canvas = document.getElementById('canvas');
  var rowsLayer = document.getElementById('rows');
  var svg = document.getElementById('arrows');
  var axisInner = document.getElementById('axis-inner');
  var axis = document.getElementById('axis');
  var panel = document.getElementById('panel');
  var SVGNS = 'http://www.w3.org/2000/svg';
  var scale = 1, fitted = true, selected = -1, collapsed = {}, visible = [], rowOf = [];
  var depth = [], childCount = [];
  for (var i = 0; i < agents.length; i++) {
    var p = agents[i].parent;
    depth.push(p < 0 ? 0 : depth[p] + 1);
    childCount.push(0);
    if (p >= 0) childCount[p]++;
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function fmtMs(ms) {
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
    return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
  }
  function fmtTok(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
    if (n >= 1e3) return (n / 1e3).toFixed(1) + 'k';
    return String(n);
  }
  function fmtUsd(c) { return c === null || c === undefined ? '–' : '$' + c.toFixed(c < 1 ? 4 : 2); }
  function x(t) { return LABEL + PAD + t * scale; }
  function duration() { return Math.max(1, data.durationMs); }

  function computeVisible() {
    visible = []; rowOf = new Array(agents.length);
    var hideDeeper = -1;
    for (var i = 0; i < agents.length; i++) {
      rowOf[i] = -1;
      if (hideDeeper >= 0) { if (depth[i] > hideDeeper) continue; hideDeeper = -1; }
      rowOf[i] = visible.length; visible.push(i);
      if (collapsed[i]) hideDeeper = depth[i];
    }
  }
  function layout() {
    if (fitted) scale = Math.max(1e-6, (scroller.clientWidth - LABEL - PAD * 2 - 60) / duration());
    var width = Math.ceil(x(duration()) + PAD + 60);
    var height = Math.max(visible.length * ROW, 1);
    canvas.style.width = width + 'px'; canvas.style.height = height + 'px';
    svg.setAttribute('width', width); svg.setAttribute('height', height);
    axisInner.style.width = width + 'px';
    drawAxis();
    render();
  }
  function drawAxis() {
    axisInner.textContent = '';
    var steps = [1, 2, 5], step = 1, k = 0;
    while (step * scale < 90 && k < 40) { step = steps[k % 3] * Math.pow(10, Math.floor(k / 3)); k++; }
    for (var t = 0; t <= duration(); t += step) {
      var tick = el('div', 'tick', fmtMs(t));
      tick.style.left = x(t) + 'px';
      axisInner.appendChild(tick);
    }
  }

  function makeRow(i, r) {
    var a = agents[i];
    var row = el('div', 'row' + (i === selected ? ' selected' : ''));
    row.style.top = r * ROW + 'px';
    row.setAttribute('data-agent', a.id);
    row.setAttribute('data-status', a.status);
    var label = el('div', 'label');
    label.style.paddingLeft = 6 + depth[i] * 14 + 'px';
    var toggle = el('span', 'toggle', childCount[i] > 0 ? (collapsed[i] ? '\u25b8' : '\u25be') : '');
    if (childCount[i] > 0) {
      toggle.title = childCount[i] + ' sub-agents';
      toggle.addEventListener('click', function (event) {
        event.stopPropagation(); collapsed[i] = !collapsed[i]; computeVisible(); layout();
      });
    }
    label.appendChild(toggle);
    label.appendChild(document.createTextNode(a.id));
    if (a.role !== a.id) label.appendChild(el('span', 'role', a.role));
    label.title = a.id + ' (' + a.role + ', ' + a.status + ')';
    row.appendChild(label);
    var bar = el('div', 'bar st-' + a.status);
    bar.style.left = x(a.startMs) + 'px';
    bar.style.width = Math.max(2, (a.endMs - a.startMs) * scale) + 'px';
    bar.title = a.id + ': ' + a.status + ', ' + fmtMs(a.endMs - a.startMs);
    row.appendChild(bar);
    for (var s = 0; s < a.segments.length; s++) {
      var seg = a.segments[s];
      var node = el('div', 'seg seg-' + seg[0] + (seg[4] ? ' failed' : ''));
      node.style.left = x(seg[1]) + 'px';
      node.style.width = Math.max(1, (seg[2] - seg[1]) * scale) + 'px';
      node.title = (seg[0] === 'model' ? 'model call: ' : '') + seg[3] + ' (' + fmtMs(seg[2] - seg[1]) + ')';
      row.appendChild(node);
    }
    var tok = el('div', 'tok', fmtTok(a.inputTokens + a.outputTokens) + ' tok' + (a.costUsd === null ? '' : ' ' + fmtUsd(a.costUsd)) + (a.error ? ' \u2716 ' + a.error.slice(0, 80) : ''));
    tok.style.left = x(a.endMs) + 6 + 'px';
    row.appendChild(tok);
    row.addEventListener('click', function () { select(i, false); });
    return row;
  }

  function render() {
    var top = scroller.scrollTop, height = scroller.clientHeight || 400;
    var first = Math.max(0, Math.floor(top / ROW) - 10);
    var last = Math.min(visible.length, Math.ceil((top + height) / ROW) + 10);
    var fragment = document.createDocumentFragment();
    for (var r = first; r < last; r++) fragment.appendChild(makeRow(visible[r], r));
    rowsLayer.textContent = '';
    rowsLayer.appendChild(fragment);
    drawArrows(first, last);
  }
  function drawArrows(first, last) {
    while (svg.lastChild && svg.lastChild.nodeName !== 'defs') svg.removeChild(svg.lastChild);
    var drawn = 0;
    for (var m = 0; m < data.messages.length && drawn < 3000; m++) {
      var msg = data.messages[m];
      var from = rowOf[msg[0]], to = rowOf[msg[1]];
      if (from < 0 || to < 0) continue;
      if ((from < first || from >= last) && (to < first || to >= last)) continue;
      var line = document.createElementNS(SVGNS, 'path');
      var x1 = x(msg[2]), y1 = from * ROW + ROW / 2, x2 = x(msg[3]), y2 = to * ROW + ROW / 2;
      var bend = Math.max(12, Math.abs(y2 - y1) / 3);
      line.setAttribute('d', 'M' + x1 + ' ' + y1 + ' C' + (x1 + bend) + ' ' + y1 + ' ' + (x2 - bend) + ' ' + y2 + ' ' + x2 + ' ' + y2);
      line.setAttribute('class', 'arrow');
      line.setAttribute('marker-end', 'url(#head)');
      var title = document.createElementNS(SVGNS, 'title');
      title.textContent = msg[4] + ': ' + agents[msg[0]].id + ' \u2192 ' + agents[msg[1]].id;
      line.appendChild(title);
      svg.appendChild(line);
      drawn++;
    }
  }

  function metaLine(parent, name, value) {
    var line = el('div'); line.appendChild(document.createTextNode(name + ' '));
    line.appendChild(el('b', '', value)); parent.appendChild(line); return line;
  }
  function agentLink(index) {
    var link = el('a', 'link', agents[index].id);
    link.addEventListener('click', function () { select(index, true); });
    return link;
  }
  function select(i, reveal) {
    selected = i;
    var a = agents[i];
    if (reveal) {
      for (var p = a.parent; p >= 0; p = agents[p].parent) collapsed[p] = false;
      computeVisible(); layout();
      scroller.scrollTop = Math.max(0, rowOf[i] * ROW - scroller.clientHeight / 3);
    }
    render();
    panel.textContent = '';
    panel.setAttribute('data-agent', a.id);
    var title = el('h2', '', a.id + ' ');
    title.appendChild(el('span', 'badge st-' + a.status, a.status));
    panel.appendChild(title);
    var meta = el('div', 'meta');
    metaLine(meta, 'role', a.role);
    if (a.model) metaLine(meta, 'model', a.model);
    metaLine(meta, 'time', fmtMs(a.startMs) + ' \u2192 ' + fmtMs(a.endMs) + ' (' + fmtMs(a.endMs - a.startMs) + ')');
    metaLine(meta, 'tokens', fmtTok(a.inputTokens) + ' in / ' + fmtTok(a.outputTokens) + ' out' + (a.costUsd === null ? '' : ', ' + fmtUsd(a.costUsd)));
    if (a.subtree.agents > 1) metaLine(meta, 'subtree', a.subtree.agents + ' agents, ' + fmtTok(a.subtree.inputTokens + a.subtree.outputTokens) + ' tokens' + (a.subtree.costUsd === null ? '' : ', ' + fmtUsd(a.subtree.costUsd)));
    if (a.parent >= 0) { var parentLine = el('div', '', 'parent '); parentLine.appendChild(agentLink(a.parent)); meta.appendChild(parentLine); }
    panel.appendChild(meta);
    if (a.error) panel.appendChild(el('pre', 'err', a.error));
    for (var e = 0; e < a.transcript.length; e++) {
      var entry = a.transcript[e];
      var box = el('div', 'entry k-' + entry[0]);
      box.appendChild(el('div', 'k', entry[0] + ' \u00b7 ' + fmtMs(entry[1])));
      box.appendChild(el('pre', '', entry[2]));
      panel.appendChild(box);
    }
  }

  function fillHeader() {
    document.getElementById('run-title').textContent = 'troupe run ' + data.runId + ' ';
    document.getElementById('run-title').appendChild(el('span', 'badge st-' + data.status, data.status));
    var stats = document.getElementById('stats');
    var parts = [['duration', fmtMs(data.durationMs)], ['agents', String(agents.length)], ['events', String(data.eventCount)],
      ['tokens', fmtTok(data.inputTokens) + ' in / ' + fmtTok(data.outputTokens) + ' out'], ['cost', fmtUsd(data.costUsd)]];
    for (var i = 0; i < parts.length; i++) {
      var span = el('span', '', parts[i][0] + ' '); span.appendChild(el('b', '', parts[i][1])); stats.appendChild(span);
    }
    document.getElementById('task').textContent = data.task;
    document.getElementById('answer').textContent = data.final || '(no answer)';
    if (data.error) document.getElementById('run-error').textContent = data.error;
    if (data.shortened) document.getElementById('shortened').textContent = 'Long texts are shortened here; trace.jsonl has them in full.';
  }
  function table(parent, heads, rows) {
    var t = el('table'), head = el('tr');
    for (var h = 0; h < heads.length; h++) head.appendChild(el('th', '', heads[h]));
    t.appendChild(head);
    for (var r = 0; r < rows.length; r++) {
      var tr = el('tr', rows[r].pick === undefined ? '' : 'pick');
      for (var c = 0; c < rows[r].cells.length; c++) {
        var cell = rows[r].cells[c], td = el('td', '', cell);
        if (c > 0 && typeof cell === 'string' && !/^[0-9.,$kM– ]*$/.test(cell)) td.style.textAlign = 'left';
        tr.appendChild(td);
      }
      if (rows[r].pick !== undefined) (function (index) { tr.addEventListener('click', function () { select(index, true); }); })(rows[r].pick);
      t.appendChild(tr);
    }
    parent.appendChild(t);
  }
  function fillBreakdown() {
    var box = document.getElementById('breakdown');
    var byRole = el('div'); byRole.appendChild(el('h3', '', 'Tokens by role'));
    table(byRole, ['role', 'agents', 'not completed', 'input', 'output', 'cost'], data.roles.map(function (r) {
      return { cells: [r.role, r.agents, r.failed, fmtTok(r.inputTokens), fmtTok(r.outputTokens), fmtUsd(r.costUsd)] };
    }));
    box.appendChild(byRole);
    var parents = [];
    for (var i = 0; i < agents.length; i++) if (childCount[i] > 0) parents.push(i);
    parents.sort(function (a, b) { return (agents[b].subtree.inputTokens + agents[b].subtree.outputTokens) - (agents[a].subtree.inputTokens + agents[a].subtree.outputTokens); });
    var bySubtree = el('div'); bySubtree.appendChild(el('h3', '', 'Tokens by subtree'));
    table(bySubtree, ['agent', 'agents', 'input', 'output', 'cost'], parents.slice(0, 20).map(function (i) {
      var s = agents[i].subtree;
      return { pick: i, cells: [agents[i].id, s.agents, fmtTok(s.inputTokens), fmtTok(s.outputTokens), fmtUsd(s.costUsd)] };
    }));
    box.appendChild(bySubtree);
    var failures = [];
    for (var f = 0; f < agents.length; f++) if (agents[f].status !== 'completed') failures.push(f);
    if (failures.length > 0) {
      var failed = el('div'); failed.appendChild(el('h3', '', 'Not completed (' + failures.length + ')'));
      table(failed, ['agent', 'status', 'error'], failures.slice(0, 30).map(function (i) {
        return { pick: i, cells: [agents[i].id, agents[i].status, (agents[i].error || '').slice(0, 90)] };
      }));
      box.appendChild(failed);
    }
  }

  var pending = false;
  scroller.addEventListener('scroll', function () {
    axis.scrollLeft = scroller.scrollLeft;
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; render(); });
  });
  function zoom(factor) {
    var center = (scroller.scrollLeft + scroller.clientWidth / 2 - LABEL - PAD) / scale;
    fitted = false; scale *= factor; layout();
    scroller.scrollLeft = Math.max(0, center * scale + LABEL + PAD - scroller.clientWidth / 2);
  }
  document.getElementById('zoom-in').addEventListener('click', function () { zoom(2); });
  document.getElementById('zoom-out').addEventListener('click', function () { zoom(0.5); });
  document.getElementById('zoom-fit').addEventListener('click', function () { fitted = true; layout(); });
  window.addEventListener('resize', function () { if (fitted) layout(); });

  fillHeader();
  fillBreakdown();
  computeVisible();
  layout();
  if (agents.length > 0) select(0, false);
  else panel.appendChild(el('div', 'empty', 'This trace has no agents.'));
  document.body.setAttribute('data-ready', 'true');
})();
`;
