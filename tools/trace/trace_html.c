/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_html.c - the page infinirt-trace --html writes: one self-contained
 * HTML file (no network, no external script) with the memory timeline of
 * each device (allocated and reserved bytes over time), one lane per
 * stream with its work, one lane per thread with its calls, drawn on a
 * canvas that zooms (wheel, buttons) and pans (drag), and the text summary.
 *
 * The data goes in as JSON in a <script type="application/json"> block,
 * times in ns from the trace's start.  After drawing, the script writes
 * what it drew in the #status element ("drawn: N lanes, ...", with data-*
 * attributes, among them the count of painted pixels it read back), and
 * window.onerror writes any error there: tests/trace/ loads the page in a
 * headless browser and reads that element.
 */
#define _POSIX_C_SOURCE 200809L
#include "trace.h"

#include <stdlib.h>
#include <string.h>

/* The page holds at most this many spans and counter points; past them it
 * says how many it left out (the summary still counts every one). */
#define PAGE_MAX_SPANS 2000000u
#define PAGE_MAX_POINTS 1000000u

static const char *const k_style[] = {
    "body{font:13px system-ui,sans-serif;margin:12px;color:#222;background:#fff}",
    "h1{font-size:18px;margin:0 0 4px}",
    ".meta{color:#555;margin:0 0 8px}",
    "#status{font:12px monospace;padding:3px 6px;background:#eef6ee;border:1px solid #9c9;display:inline-block}",
    "#status.error{background:#fdd;border-color:#c66}",
    "#controls{margin:8px 0}",
    "#controls button{margin-right:4px}",
    "#wrap{position:relative;border:1px solid #ccc}",
    "canvas{display:block;cursor:grab}",
    "#tip{position:absolute;pointer-events:none;background:#ffd;border:1px solid #aa8;padding:2px 5px;",
    "font:12px monospace;white-space:pre;display:none}",
    "pre{font:12px monospace;background:#f6f6f6;padding:8px;overflow:auto}",
    ".note{color:#a40}",
    NULL,
};

/* The error handler comes first, so that it catches the drawing's errors. */
static const char *const k_onerror[] = {
    "window.onerror = function (msg, src, line, col) {",
    "  var s = document.getElementById('status');",
    "  s.textContent = 'error: ' + msg + ' (line ' + line + ')';",
    "  s.className = 'error';",
    "  s.setAttribute('data-state', 'error');",
    "  return false;",
    "};",
    NULL,
};

static const char *const k_script[] = {
    "(function () {",
    "'use strict';",
    "var D = JSON.parse(document.getElementById('data').textContent);",
    "var cv = document.getElementById('view'), ctx = cv.getContext('2d');",
    "var tip = document.getElementById('tip'), status = document.getElementById('status');",
    "var LABEL = 240, AXIS = 26, MEMH = 110, LANEH = 20, TITLEH = 20, GAP = 6, RIGHT = 12;",
    "var rows = [], y = AXIS, W = 800, H = 0;",
    "function title(t) { rows.push({kind: 'title', y: y, h: TITLEH, text: t}); y += TITLEH; }",
    "function lanes(list, kind) {",
    "  list.forEach(function (l) {",
    "    var m = 0;",
    "    for (var i = 1; i < l.spans.length; i += 3) m = Math.max(m, l.spans[i]);",
    "    rows.push({kind: kind, y: y, h: LANEH, lane: l, maxDur: m});",
    "    y += LANEH;",
    "  });",
    "}",
    "if (D.devices.length) title('Memory per device (allocated: filled, reserved: line)');",
    "D.devices.forEach(function (d) {",
    "  var top = 0, topA = 0;",
    "  for (var i = 1; i < d.pts.length; i++) if (i % 3 !== 0) top = Math.max(top, d.pts[i]);",
    "  for (i = 1; i < d.pts.length; i += 3) topA = Math.max(topA, d.pts[i]);",
    "  rows.push({kind: 'mem', y: y, h: MEMH, dev: d, topAll: top || 1, topAlloc: topA || 1});",
    "  y += MEMH + GAP;",
    "});",
    "if (D.streams.length) title('Streams: work from start to completion');",
    "lanes(D.streams, 'stream');",
    "if (D.threads.length) title('Threads: public calls');",
    "lanes(D.threads, 'thread');",
    "H = y + 8;",
    "/* The memory charts' scale: both series, or allocated alone (reserved may dwarf it). */",
    "var allocScale = false;",
    "var span = Math.max(D.span, 1), view = {t0: 0, t1: span};",
    "/* A time for people; SHORT: without trailing zeros (the axis). */",
    "function fmtTime(ns, short) {",
    "  var a = Math.abs(ns), u = [[1e9, ' s'], [1e6, ' ms'], [1e3, ' \\u00b5s'], [1, ' ns']];",
    "  for (var i = 0; i < 3 && a < u[i][0]; i++);",
    "  var v = (ns / u[i][0]).toFixed(i === 3 ? 0 : 3);",
    "  return (short ? String(+v) : v) + u[i][1];",
    "}",
    "function fmtBytes(b) {",
    "  var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;",
    "  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }",
    "  return (i ? b.toFixed(1) : b.toFixed(0)) + ' ' + u[i];",
    "}",
    "function color(n) { return 'hsl(' + ((n * 137) % 360) + ',60%,55%)'; }",
    "function X(t) { return LABEL + (t - view.t0) / (view.t1 - view.t0) * (W - LABEL - RIGHT); }",
    "function T(x) { return view.t0 + (x - LABEL) / (W - LABEL - RIGHT) * (view.t1 - view.t0); }",
    "/* The first index (of a flat array of STRIDE) whose time is >= t. */",
    "function lower(a, stride, t) {",
    "  var lo = 0, hi = a.length / stride;",
    "  while (lo < hi) { var mid = (lo + hi) >> 1; if (a[mid * stride] < t) lo = mid + 1; else hi = mid; }",
    "  return lo;",
    "}",
    "function resize() {",
    "  var dpr = window.devicePixelRatio || 1;",
    "  W = Math.max(640, document.getElementById('wrap').clientWidth);",
    "  cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr);",
    "  cv.style.width = W + 'px'; cv.style.height = H + 'px';",
    "  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);",
    "}",
    "function drawAxis() {",
    "  var w = view.t1 - view.t0, step = Math.pow(10, Math.floor(Math.log10(w / 8)));",
    "  if (w / step > 40) step *= 5; else if (w / step > 16) step *= 2;",
    "  ctx.fillStyle = '#555'; ctx.strokeStyle = '#eee'; ctx.font = '11px sans-serif';",
    "  for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {",
    "    var x = X(t), label = fmtTime(t, true);",
    "    ctx.beginPath(); ctx.moveTo(x, AXIS - 4); ctx.lineTo(x, H); ctx.stroke();",
    "    if (x + 2 + ctx.measureText(label).width < W) ctx.fillText(label, x + 2, AXIS - 8);",
    "  }",
    "}",
    "function drawMem(r, n) {",
    "  var p = r.dev.pts, k = Math.max(0, lower(p, 3, view.t0) - 1), base = r.y + r.h - 4;",
    "  var top = allocScale ? r.topAlloc : r.topAll, sy = (r.h - 16) / top, end = Math.min(X(span), W - RIGHT);",
    "  ctx.save(); ctx.beginPath(); ctx.rect(LABEL, r.y, W - LABEL - RIGHT, r.h); ctx.clip();",
    "  var first = k;",
    "  for (var pass = 0; pass < 2; pass++) {",
    "    var off = pass === 0 ? 1 : 2, prev = null;",
    "    ctx.beginPath();",
    "    for (k = first; k < p.length / 3; k++) {",
    "      var x = X(p[k * 3]), v = base - p[k * 3 + off] * sy;",
    "      if (prev === null) { ctx.moveTo(x, pass === 0 ? base : v); if (pass === 0) ctx.lineTo(x, v); }",
    "      else { ctx.lineTo(x, prev); ctx.lineTo(x, v); }",
    "      prev = v;",
    "      if (pass === 0) n.points++;",
    "      if (p[k * 3] > view.t1) break;",
    "    }",
    "    if (prev !== null) ctx.lineTo(end, prev);",
    "    if (pass === 0) {",
    "      if (prev !== null) { ctx.lineTo(end, base); ctx.closePath(); }",
    "      ctx.fillStyle = 'rgba(60,110,200,0.45)'; ctx.fill();",
    "    } else { ctx.strokeStyle = '#d2691e'; ctx.lineWidth = 1.5; ctx.stroke(); }",
    "  }",
    "  ctx.restore();",
    "  ctx.strokeStyle = '#bbb'; ctx.lineWidth = 1;",
    "  ctx.beginPath(); ctx.moveTo(LABEL, base + 0.5); ctx.lineTo(W - RIGHT, base + 0.5); ctx.stroke();",
    "  ctx.fillStyle = '#222'; ctx.font = 'bold 12px sans-serif';",
    "  ctx.fillText(r.dev.name, 6, r.y + 16);",
    "  ctx.font = '11px sans-serif'; ctx.fillStyle = '#555';",
    "  ctx.fillText('peak allocated ' + fmtBytes(r.dev.peakAllocated), 6, r.y + 32);",
    "  ctx.fillText('peak reserved ' + fmtBytes(r.dev.peakReserved), 6, r.y + 46);",
    "  ctx.fillText('scale: ' + fmtBytes(top) + (allocScale ? ' (allocated)' : ''), 6, r.y + 60);",
    "  n.charts++;",
    "}",
    "function drawLane(r, n) {",
    "  var s = r.lane.spans, i = lower(s, 3, view.t0 - r.maxDur), lastX = -1, lastName = -1;",
    "  ctx.save(); ctx.beginPath(); ctx.rect(LABEL, r.y, W - LABEL - RIGHT, r.h); ctx.clip();",
    "  ctx.font = '11px sans-serif';",
    "  for (; i < s.length / 3; i++) {",
    "    var t = s[i * 3], d = s[i * 3 + 1], nm = s[i * 3 + 2];",
    "    if (t > view.t1) break;",
    "    if (t + d < view.t0) continue;",
    "    n.spans++;",
    "    var x0 = Math.max(X(t), LABEL - 1), x1 = Math.min(X(t + d), W), w = Math.max(x1 - x0, 1);",
    "    if (x0 + w <= lastX + 0.5 && nm === lastName) continue; /* below a pixel already drawn */",
    "    ctx.fillStyle = color(nm); ctx.fillRect(x0, r.y + 2, w, r.h - 4);",
    "    lastX = x0 + w; lastName = nm;",
    "    if (w > 40) {",
    "      ctx.fillStyle = '#000'; ctx.save(); ctx.beginPath(); ctx.rect(x0, r.y, w - 2, r.h); ctx.clip();",
    "      ctx.fillText(D.names[nm], x0 + 3, r.y + 14); ctx.restore();",
    "    }",
    "  }",
    "  ctx.restore();",
    "  ctx.fillStyle = '#222'; ctx.font = '12px sans-serif';",
    "  ctx.save(); ctx.beginPath(); ctx.rect(0, r.y, LABEL - 6, r.h); ctx.clip();",
    "  ctx.fillText(r.lane.name, 6, r.y + 14); ctx.restore();",
    "  n.lanes++;",
    "}",
    "function draw() {",
    "  /*draw-start*/",
    "  var n = {lanes: 0, charts: 0, points: 0, spans: 0};",
    "  ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, W, H);",
    "  drawAxis();",
    "  rows.forEach(function (r) {",
    "    if (r.kind === 'title') {",
    "      ctx.fillStyle = '#333'; ctx.font = 'bold 12px sans-serif'; ctx.fillText(r.text, 6, r.y + 14);",
    "    } else if (r.kind === 'mem') drawMem(r, n); else drawLane(r, n);",
    "  });",
    "  return n;",
    "}",
    "/* Pixels that are not the white background, read back from the canvas. */",
    "function painted() {",
    "  var px = ctx.getImageData(0, 0, cv.width, cv.height).data, c = 0;",
    "  for (var i = 0; i < px.length; i += 4) if (px[i] !== 255 || px[i + 1] !== 255 || px[i + 2] !== 255) c++;",
    "  return c;",
    "}",
    "function report(n, first) {",
    "  var msg = 'drawn: ' + n.lanes + ' lanes (' + D.streams.length + ' streams, ' + D.threads.length +",
    "    ' threads), ' + n.charts + ' memory charts, ' + n.points + ' points, ' + n.spans + ' spans';",
    "  status.setAttribute('data-state', 'drawn');",
    "  status.setAttribute('data-lanes', n.lanes); status.setAttribute('data-charts', n.charts);",
    "  status.setAttribute('data-points', n.points); status.setAttribute('data-spans', n.spans);",
    "  status.setAttribute('data-view', Math.round(view.t0) + ',' + Math.round(view.t1));",
    "  status.setAttribute('data-scale', allocScale ? 'allocated' : 'both');",
    "  if (first) { var p = painted(); status.setAttribute('data-painted', p); msg += ', ' + p + ' pixels painted'; }",
    "  status.textContent = msg;",
    "}",
    "function redraw() { report(draw(), false); }",
    "function zoom(f, t) {",
    "  var w = Math.min(Math.max((view.t1 - view.t0) * f, 10), span * 1.05);",
    "  var r = (t - view.t0) / (view.t1 - view.t0);",
    "  view.t0 = t - r * w; view.t1 = view.t0 + w; redraw();",
    "}",
    "cv.addEventListener('wheel', function (e) {",
    "  e.preventDefault();",
    "  var x = e.offsetX; if (x < LABEL) x = LABEL;",
    "  zoom(Math.pow(1.2, e.deltaY / 100), T(x));",
    "}, {passive: false});",
    "var drag = null;",
    "cv.addEventListener('mousedown', function (e) { drag = {x: e.offsetX, t0: view.t0, t1: view.t1}; });",
    "window.addEventListener('mouseup', function () { drag = null; });",
    "cv.addEventListener('dblclick', function () { view.t0 = 0; view.t1 = span; redraw(); });",
    "cv.addEventListener('mouseleave', function () { tip.style.display = 'none'; });",
    "cv.addEventListener('mousemove', function (e) {",
    "  if (drag) {",
    "    var dt = (e.offsetX - drag.x) / (W - LABEL - RIGHT) * (drag.t1 - drag.t0);",
    "    view.t0 = drag.t0 - dt; view.t1 = drag.t1 - dt; redraw(); return;",
    "  }",
    "  var t = T(e.offsetX), text = '';",
    "  rows.forEach(function (r) {",
    "    if (e.offsetY < r.y || e.offsetY >= r.y + r.h || e.offsetX < LABEL) return;",
    "    if (r.kind === 'mem') {",
    "      var p = r.dev.pts, k = lower(p, 3, t + 1) - 1;",
    "      if (k >= 0) text = r.dev.name + ' at ' + fmtTime(t) + '\\nallocated ' + fmtBytes(p[k * 3 + 1]) +",
    "        '\\nreserved  ' + fmtBytes(p[k * 3 + 2]);",
    "    } else if (r.lane) {",
    "      var s = r.lane.spans, slack = 3 / (W - LABEL - RIGHT) * (view.t1 - view.t0);",
    "      for (var i = lower(s, 3, t - r.maxDur - slack); i < s.length / 3 && s[i * 3] <= t + slack; i++)",
    "        if (s[i * 3] + s[i * 3 + 1] >= t - slack)",
    "          text = D.names[s[i * 3 + 2]] + '\\nstart ' + fmtTime(s[i * 3]) + '\\nduration ' + fmtTime(s[i * 3 + 1]);",
    "    }",
    "  });",
    "  if (!text) { tip.style.display = 'none'; return; }",
    "  tip.textContent = text; tip.style.display = 'block';",
    "  tip.style.left = (e.offsetX + 14) + 'px'; tip.style.top = (e.offsetY + 10) + 'px';",
    "});",
    "document.getElementById('in').onclick = function () { zoom(0.5, (view.t0 + view.t1) / 2); };",
    "document.getElementById('out').onclick = function () { zoom(2, (view.t0 + view.t1) / 2); };",
    "document.getElementById('reset').onclick = function () { view.t0 = 0; view.t1 = span; redraw(); };",
    "function setScale(alloc) {",
    "  allocScale = alloc;",
    "  document.getElementById('scale').textContent = alloc ? 'memory scale: both' : 'memory scale: allocated';",
    "}",
    "document.getElementById('scale').onclick = function () { setScale(!allocScale); redraw(); };",
    "window.addEventListener('resize', function () { resize(); redraw(); });",
    "/* A link may carry a view: #view=T0,T1 (ns from the trace's start) and scale=allocated. */",
    "var opts = new URLSearchParams(location.hash.slice(1));",
    "if (opts.get('view')) {",
    "  var v = opts.get('view').split(',').map(Number);",
    "  if (v.length === 2 && v[1] > v[0]) { view.t0 = v[0]; view.t1 = v[1]; }",
    "}",
    "if (opts.get('scale') === 'allocated') setScale(true);",
    "resize();",
    "report(draw(), true);",
    "})();",
    NULL,
};

static void put_lines(FILE *out, const char *const *lines)
{
    for (; *lines != NULL; lines++) {
        fputs(*lines, out);
        fputc('\n', out);
    }
}

/* S as a JSON string that is safe inside a <script> block: '<' escaped,
 * so no "</script>" can end it early. */
static void put_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* S as HTML text. */
static void put_html(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        switch (s[i]) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(s[i], out);
        }
    }
}

/* A lane's spans as [start, dur, name, ...], within the page's budget. */
static void put_spans(FILE *out, const trace_model *m, const trace_span *s, size_t n, size_t *budget,
                      uint64_t *omitted)
{
    size_t take = n < *budget ? n : *budget;
    fputc('[', out);
    for (size_t i = 0; i < take; i++)
        fprintf(out, "%s%lld,%lld,%u", i ? "," : "", (long long)(s[i].start - m->t_min), (long long)s[i].dur,
                s[i].name);
    fputc(']', out);
    *budget -= take;
    *omitted += n - take;
}

static void put_lanes(FILE *out, const trace_model *m, int streams, size_t *budget, uint64_t *omitted)
{
    int first = 1;
    fputc('[', out);
    for (size_t i = 0; i < m->lanes.n; i++) {
        const trace_lane *l = &m->lanes.items[i];
        const trace_span *s = streams ? l->work.items : l->calls.items;
        size_t n = streams ? l->work.n : l->calls.n;
        if (streams ? !trace_lane_is_stream(l) : n == 0)
            continue;
        char buf[64];
        fprintf(out, "%s{\"name\":", first ? "" : ",\n");
        put_json_string(out, trace_lane_label(l, buf, sizeof(buf)));
        fputs(",\"spans\":", out);
        put_spans(out, m, s, n, budget, omitted);
        fputc('}', out);
        first = 0;
    }
    fputc(']', out);
}

static void put_devices(FILE *out, const trace_model *m, uint64_t *omitted)
{
    size_t budget = PAGE_MAX_POINTS;
    fputc('[', out);
    for (size_t i = 0; i < m->devices.n; i++) {
        const trace_device *d = &m->devices.items[i];
        uint64_t peak_a = 0, peak_r = 0;
        for (size_t k = 0; k < d->points.n; k++) {
            peak_a = d->points.items[k].allocated > peak_a ? d->points.items[k].allocated : peak_a;
            peak_r = d->points.items[k].reserved > peak_r ? d->points.items[k].reserved : peak_r;
        }
        fprintf(out, "%s{\"name\":", i ? ",\n" : "");
        put_json_string(out, d->name);
        fprintf(out, ",\"peakAllocated\":%llu,\"peakReserved\":%llu,\"pts\":[", (unsigned long long)peak_a,
                (unsigned long long)peak_r);
        size_t take = d->points.n < budget ? d->points.n : budget;
        for (size_t k = 0; k < take; k++) {
            const trace_point *p = &d->points.items[k];
            fprintf(out, "%s%lld,%llu,%llu", k ? "," : "", (long long)(p->ts - m->t_min),
                    (unsigned long long)p->allocated, (unsigned long long)p->reserved);
        }
        fputs("]}", out);
        budget -= take;
        *omitted += d->points.n - take;
    }
    fputc(']', out);
}

/* The text summary, captured for the page; NULL where that failed. */
static char *summary_text(const trace_model *m, const char *source, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (f == NULL)
        return NULL;
    int rc = trace_print_summary(f, m, source);
    if (fclose(f) != 0 || rc != 0) {
        free(text);
        return NULL;
    }
    return text;
}

int trace_write_html(FILE *out, const trace_model *m, const char *source)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>infinirt trace: ", out);
    put_html(out, source, strlen(source));
    fputs("</title>\n<style>\n", out);
    put_lines(out, k_style);
    fputs("</style>\n</head>\n<body>\n<h1>infinirt trace</h1>\n<p class=\"meta\">", out);
    put_html(out, source, strlen(source));
    fprintf(out, ": infinirt %s, %llu events", m->version ? m->version : "(version unknown)",
            (unsigned long long)m->events);
    if (m->truncated)
        fputs(" <span class=\"note\">(cut short: the events before the cut are shown)</span>", out);
    uint64_t dropped = m->dropped_other > m->dropped_instants ? m->dropped_other : m->dropped_instants;
    if (dropped > 0)
        fprintf(out, " <span class=\"note\">(%llu events dropped by the writer)</span>", (unsigned long long)dropped);
    fputs("</p>\n<div id=\"status\" data-state=\"loading\">loading (a page that stays so: its script did not "
          "run)</div>\n<script>\n",
          out);
    put_lines(out, k_onerror);
    fputs("</script>\n<div id=\"controls\"><button id=\"in\">zoom in</button><button id=\"out\">zoom "
          "out</button><button id=\"reset\">reset</button><button id=\"scale\">memory scale: "
          "allocated</button> wheel: zoom, drag: pan, double-click: reset, hover: "
          "details</div>\n",
          out);

    uint64_t omitted = 0;
    size_t budget = PAGE_MAX_SPANS;
    fputs("<script id=\"data\" type=\"application/json\">\n{\"span\":", out);
    fprintf(out, "%lld,\"names\":[", (long long)(m->have_time ? m->t_max - m->t_min : 0));
    for (size_t i = 0; i < m->names.n; i++) {
        if (i)
            fputc(',', out);
        put_json_string(out, m->names.items[i]);
    }
    fputs("],\n\"devices\":", out);
    put_devices(out, m, &omitted);
    fputs(",\n\"streams\":", out);
    put_lanes(out, m, 1, &budget, &omitted);
    fputs(",\n\"threads\":", out);
    put_lanes(out, m, 0, &budget, &omitted);
    fprintf(out, ",\n\"omitted\":%llu}\n</script>\n", (unsigned long long)omitted);
    if (omitted > 0)
        fprintf(out,
                "<p class=\"note\">%llu spans and points are left out of this page (it holds at most %u "
                "spans and %u points); the summary below counts them all.</p>\n",
                (unsigned long long)omitted, PAGE_MAX_SPANS, PAGE_MAX_POINTS);
    fputs("<div id=\"wrap\"><canvas id=\"view\"></canvas><div id=\"tip\"></div></div>\n<script>\n", out);
    put_lines(out, k_script);
    fputs("</script>\n<h2>Summary</h2>\n<pre>", out);
    size_t len = 0;
    char *text = summary_text(m, source, &len);
    if (text != NULL)
        put_html(out, text, len);
    else
        fputs("(the summary could not be written)", out);
    free(text);
    fputs("</pre>\n</body>\n</html>\n", out);
    return ferror(out) ? -1 : 0;
}
