/**
 * The dashboard page, embedded as a string so a compiled binary serves it without reading
 * files: no CDN, no fonts, no libraries, so it works offline and under the strict CSP that
 * `GET /` sends.
 *
 * It is a client of the public API like any other. Live numbers come from `GET /v1/events`,
 * read with `fetch()` and a stream reader (not `EventSource`, which cannot send the
 * `Authorization` header); actions call the ordinary endpoints. With auth on it asks for a
 * token and keeps it in `sessionStorage` (this tab only; never in a URL).
 *
 * Everything users control — queue names, payloads, errors, keys — reaches the page only
 * through `textContent`, `setAttribute` or SVG text nodes, never through `innerHTML`.
 *
 * The page is written without template literals or `${`, so it can live in this raw string.
 *
 * @module
 */

/** The dashboard's HTML (self-contained: no external scripts, styles or fonts). */
export const DASHBOARD_HTML: string = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>tegami</title>
<style>
  :root {
    --bg: #f4f5f7; --card: #fff; --fg: #14171f; --muted: #667085; --faint: #98a2b3;
    --line: #e6e8ec; --line-strong: #d0d5dd; --head: #fafbfc;
    --accent: #4f46e5; --accent-soft: #eef2ff;
    --enq: #4f46e5; --ack: #0e9f6e; --fail: #e02424;
    --warn: #b54708; --warn-soft: #fffaeb; --bad: #c81e1e; --bad-soft: #fef2f2;
    --mono: ui-monospace, "SF Mono", SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  }
  * { box-sizing: border-box; }
  html, body { margin: 0; }
  body { background: var(--bg); color: var(--fg);
    font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
  .hidden { display: none !important; }
  .muted { color: var(--muted); }
  .mono { font-family: var(--mono); font-size: 12.5px; }
  .spacer { flex: 1; }
  code { font-family: var(--mono); font-size: 12.5px; background: #f2f4f7; padding: 0 4px; border-radius: 4px; }

  header.top { position: sticky; top: 0; z-index: 10; display: flex; align-items: center; gap: 18px;
    padding: 10px 28px; background: #111827; color: #f9fafb; }
  .brand { display: flex; align-items: center; gap: 9px; font-weight: 650; font-size: 16px; letter-spacing: .01em; }
  .brand svg { display: block; }
  .live { display: flex; align-items: center; gap: 7px; font-size: 13px; color: #d0d5dd; }
  .dot { width: 8px; height: 8px; border-radius: 50%; background: #98a2b3; flex: none; }
  .dot.on { background: #31c48d; box-shadow: 0 0 0 3px rgba(49, 196, 141, .22); }
  .dot.wait { background: #faca15; }
  .dot.off { background: #f05252; }
  header .meta { font-size: 13px; color: #98a2b3; }
  header button { background: transparent; color: #e5e7eb; border-color: #4b5563; }
  header button:hover { background: #1f2937; border-color: #6b7280; }

  main { max-width: 1400px; margin: 0 auto; padding: 20px 28px 56px; display: grid; gap: 16px; }

  .tiles { display: grid; grid-template-columns: repeat(7, minmax(0, 1fr)); gap: 12px; }
  @media (max-width: 1100px) { .tiles { grid-template-columns: repeat(4, minmax(0, 1fr)); } }
  .tile { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 11px 14px 10px; }
  .tile .label { color: var(--muted); font-size: 11.5px; font-weight: 600; text-transform: uppercase; letter-spacing: .05em; }
  .tile .value { font-size: 24px; font-weight: 600; font-variant-numeric: tabular-nums; line-height: 1.3; }
  .tile .sub { color: var(--faint); font-size: 12px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .tile.bad .value { color: var(--bad); }
  .tile .value .unit { font-size: 13px; font-weight: 500; color: var(--muted); margin-left: 3px; }

  .card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; overflow: hidden; min-width: 0; }
  .card > .head { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; padding: 11px 16px;
    border-bottom: 1px solid var(--line); min-height: 52px; }
  .card > .head h2 { margin: 0; font-size: 15px; font-weight: 650; }
  .card > .head .caption { color: var(--muted); font-size: 13px; }
  .body { padding: 14px 16px; }
  .scroll { overflow-x: auto; }

  table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
  th { text-align: right; font-weight: 600; color: var(--muted); font-size: 11.5px; text-transform: uppercase;
    letter-spacing: .04em; padding: 8px 12px; border-bottom: 1px solid var(--line); background: var(--head); white-space: nowrap; }
  td { text-align: right; padding: 7px 12px; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th.l, td.l { text-align: left; }
  tbody tr:last-child td { border-bottom: 0; }
  tbody tr:hover td { background: #fafbff; }
  td.actions { text-align: right; }
  td.actions button + button { margin-left: 6px; }
  td.zero { color: var(--faint); }
  td.hot { color: var(--bad); font-weight: 650; }
  td.warn { color: var(--warn); font-weight: 600; }
  td.err { max-width: 200px; overflow: hidden; text-overflow: ellipsis; color: var(--bad); }
  td.payload { max-width: 150px; overflow: hidden; text-overflow: ellipsis; color: #344054; }
  #dead-view th, #dead-view td { padding-left: 9px; padding-right: 9px; }
  #dead-view .scroll { max-height: 560px; overflow: auto; }
  #dead-view thead th { position: sticky; top: 0; z-index: 1; }
  #dead-view th:first-child, #dead-view td:first-child { padding-left: 16px; }
  #dead-view th:last-child, #dead-view td:last-child { padding-right: 16px; }
  .qname { font-family: var(--mono); font-size: 13px; font-weight: 600; }
  td.c-spark { padding-top: 4px; padding-bottom: 2px; }

  .badge { display: inline-block; margin-left: 6px; padding: 1px 7px; border-radius: 999px; font-size: 11px; font-weight: 650;
    text-transform: uppercase; letter-spacing: .04em; vertical-align: 1px; background: #f2f4f7; color: #475467; }
  .badge.paused { background: var(--warn-soft); color: var(--warn); border: 1px solid #fedf89; }
  .badge.s-pending { background: #eff8ff; color: #175cd3; }
  .badge.s-delayed { background: #f4f3ff; color: #5925dc; }
  .badge.s-leased { background: #fffaeb; color: #b54708; }
  .badge.s-done { background: #ecfdf3; color: #027a48; }
  .badge.s-dead { background: var(--bad-soft); color: var(--bad); }
  .badge.s-cancelled { background: #f2f4f7; color: #475467; }

  button { font: inherit; font-size: 13px; line-height: 1.3; padding: 5px 11px; border-radius: 7px; border: 1px solid var(--line-strong);
    background: #fff; color: var(--fg); cursor: pointer; white-space: nowrap; }
  button:hover { background: #f9fafb; border-color: #98a2b3; }
  button:focus-visible, input:focus-visible, select:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
  button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
  button.primary:hover { background: #4338ca; }
  button.danger { color: var(--bad); border-color: #fda29b; }
  button.danger:hover { background: var(--bad-soft); }
  button.armed, button.armed:hover { background: var(--bad); border-color: var(--bad); color: #fff; }
  button:disabled { opacity: .55; cursor: default; }
  button.link { border: 0; background: none; padding: 0; color: var(--accent); font-family: var(--mono); font-size: 13px; font-weight: 600; }
  button.link:hover { text-decoration: underline; background: none; }
  select, input { font: inherit; font-size: 13px; padding: 5px 9px; border: 1px solid var(--line-strong); border-radius: 7px; background: #fff; color: var(--fg); }
  select { max-width: 260px; }

  .chart { position: relative; height: 230px; }
  .chart svg { display: block; }
  .chart text { font-size: 11px; fill: var(--faint); font-variant-numeric: tabular-nums; }
  .chart .grid { stroke: #eef0f3; }
  .chart .axis { stroke: var(--line-strong); }
  .chart .line { fill: none; stroke-width: 1.8; stroke-linejoin: round; stroke-linecap: round; }
  .chart .enq { stroke: var(--enq); }
  .chart .ack { stroke: var(--ack); }
  .chart .fail { stroke: var(--fail); }
  .chart .area { fill: var(--enq); opacity: .08; }
  .chart .cross { stroke: #98a2b3; stroke-dasharray: 3 3; }
  .chart .quiet { font-size: 13px; fill: var(--faint); }
  .legend { display: flex; gap: 16px; font-size: 13px; color: var(--muted); font-variant-numeric: tabular-nums; }
  .legend b { color: var(--fg); font-weight: 600; }
  .sw { display: inline-block; width: 12px; height: 3px; border-radius: 2px; vertical-align: middle; margin-right: 6px; }
  .sw.enq { background: var(--enq); } .sw.ack { background: var(--ack); } .sw.fail { background: var(--fail); }
  .spark .enq, .spark .ack { fill: none; stroke-width: 1.4; }
  .spark .enq { stroke: var(--enq); opacity: .75; } .spark .ack { stroke: var(--ack); }
  .spark .flat { stroke: var(--line-strong); stroke-width: 1; }

  .grid2 { display: grid; grid-template-columns: minmax(0, 1.3fr) minmax(0, 1fr); gap: 16px; align-items: start; }
  @media (max-width: 1150px) { .grid2 { grid-template-columns: minmax(0, 1fr); } }
  .empty { color: var(--muted); text-align: center; padding: 30px 18px; }
  .empty.error { color: var(--bad); }
  .foot { display: flex; align-items: center; gap: 12px; padding: 10px 16px; border-top: 1px solid var(--line); color: var(--muted); font-size: 13px; }

  #job-form { display: flex; gap: 8px; margin-left: auto; }
  #job-id { width: 130px; }
  .job-head { display: flex; align-items: center; gap: 10px; flex-wrap: wrap; margin-bottom: 12px; }
  .job-head .title { font-size: 17px; font-weight: 650; }
  .job-head .badge { margin-left: 0; }
  .job-head .actions { margin-left: auto; display: flex; gap: 8px; }
  .kv { display: grid; grid-template-columns: max-content minmax(0, 1fr) max-content minmax(0, 1fr); gap: 5px 14px; margin: 0 0 14px; font-size: 13px; }
  .kv dt { color: var(--muted); }
  .kv dd { margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
  h3 { margin: 14px 0 7px; font-size: 12px; font-weight: 650; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; }
  pre { margin: 0; padding: 9px 11px; max-height: 220px; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere;
    font-family: var(--mono); font-size: 12.5px; line-height: 1.5; background: #f8f9fb; border: 1px solid var(--line); border-radius: 7px; }
  pre.err { background: var(--bad-soft); border-color: #fecdca; color: #912018; }
  .timeline { list-style: none; margin: 0; padding: 2px 0 0 8px; }
  .timeline li { position: relative; padding: 0 0 12px 20px; border-left: 2px solid var(--line); }
  .timeline li:last-child { border-left-color: transparent; padding-bottom: 0; }
  .timeline li::before { content: ""; position: absolute; left: -7px; top: 3px; width: 8px; height: 8px; border-radius: 50%;
    background: #fff; border: 2px solid var(--faint); }
  .timeline li.start::before { border-color: var(--enq); background: var(--enq); }
  .timeline li.done::before { border-color: var(--ack); background: var(--ack); }
  .timeline li.dead::before { border-color: var(--bad); background: var(--bad); }
  .timeline li.now::before { border-color: var(--accent); background: var(--accent-soft); box-shadow: 0 0 0 3px var(--accent-soft); }
  .timeline li.future { color: var(--muted); }
  .timeline li.future::before { border-style: dashed; }
  .timeline .what { font-weight: 600; font-size: 13px; }
  .timeline .when { font-size: 12.5px; color: var(--muted); font-variant-numeric: tabular-nums; }

  .toasts { position: fixed; right: 20px; bottom: 20px; z-index: 40; display: grid; gap: 8px; justify-items: end; }
  .toast { max-width: 440px; padding: 9px 14px; border-radius: 8px; background: #111827; color: #fff; font-size: 13px;
    box-shadow: 0 8px 24px rgba(16, 24, 40, .18); overflow-wrap: anywhere; }
  .toast.error { background: var(--bad); }
  .overlay { position: fixed; inset: 0; z-index: 50; display: none; align-items: center; justify-content: center;
    background: rgba(17, 24, 39, .6); }
  .overlay.open { display: flex; }
  .dialog { width: min(440px, 92vw); padding: 24px; border-radius: 12px; background: #fff; box-shadow: 0 20px 50px rgba(0, 0, 0, .3); }
  .dialog h2 { margin: 0 0 6px; font-size: 18px; }
  .dialog p { margin: 0 0 14px; font-size: 13px; }
  .dialog input { width: 100%; padding: 8px 10px; margin-bottom: 6px; }
  .dialog .error { min-height: 18px; margin: 0 0 10px; color: var(--bad); }
  .dialog button { width: 100%; padding: 8px; }
</style>
</head>
<body>
<header class="top">
  <div class="brand">
    <svg width="22" height="16" viewBox="0 0 22 16" aria-hidden="true"><rect x="1" y="1" width="20" height="14" rx="2.5" fill="none" stroke="#a5b4fc" stroke-width="1.8"/><path d="M2 2.5l9 6.5 9-6.5" fill="none" stroke="#a5b4fc" stroke-width="1.8" stroke-linejoin="round"/></svg>
    tegami
  </div>
  <div class="live" role="status" aria-live="polite"><span id="status-dot" class="dot wait"></span><span id="status-text">connecting…</span></div>
  <div class="spacer"></div>
  <span class="meta" id="server-meta"></span>
  <button id="signout" type="button" class="hidden">Forget token</button>
</header>

<main>
  <section class="tiles" aria-label="Totals over all queues">
    <div class="tile"><div class="label">Pending</div><div class="value" id="t-pending">–</div><div class="sub" id="t-pending-sub">&nbsp;</div></div>
    <div class="tile"><div class="label">In flight</div><div class="value" id="t-leased">–</div><div class="sub">leased to consumers</div></div>
    <div class="tile"><div class="label">Delayed</div><div class="value" id="t-delayed">–</div><div class="sub">waiting for run_at</div></div>
    <div class="tile" id="t-dead-tile"><div class="label">Dead</div><div class="value" id="t-dead">–</div><div class="sub">need a look</div></div>
    <div class="tile"><div class="label">Consumers</div><div class="value" id="t-consumers">–</div><div class="sub" id="t-connections">&nbsp;</div></div>
    <div class="tile"><div class="label">Enqueued</div><div class="value"><span id="t-enq">–</span><span class="unit">/s</span></div><div class="sub">average, last 10 s</div></div>
    <div class="tile"><div class="label">Acked</div><div class="value"><span id="t-ack">–</span><span class="unit">/s</span></div><div class="sub" id="t-fail">&nbsp;</div></div>
  </section>

  <section class="card" aria-label="Throughput">
    <div class="head">
      <h2>Throughput</h2>
      <span class="caption" id="chart-caption">jobs per second, last 5 minutes</span>
      <div class="spacer"></div>
      <div class="legend">
        <span><span class="sw enq"></span>enqueued <b id="l-enq">0</b></span>
        <span><span class="sw ack"></span>acked <b id="l-ack">0</b></span>
        <span><span class="sw fail"></span>failed <b id="l-fail">0</b></span>
      </div>
      <select id="chart-queue" aria-label="Queue shown in the chart"><option value="">All queues</option></select>
    </div>
    <div class="body"><div id="chart" class="chart"></div></div>
  </section>

  <section class="card" aria-label="Queues">
    <div class="head"><h2>Queues</h2><span class="caption" id="queues-caption"></span></div>
    <div class="scroll">
      <table id="queues-table">
        <thead><tr>
          <th class="l">Queue</th><th>Pending</th><th>Delayed</th><th>Leased</th><th>Done</th><th>Dead</th><th>Cancelled</th>
          <th>Oldest pending</th><th>Consumers</th><th class="l">Last minute</th><th></th>
        </tr></thead>
        <tbody id="queues-body"></tbody>
      </table>
    </div>
    <div id="queues-empty" class="empty hidden">No queues yet. Enqueue a job with <code>POST /v1/queues/NAME/jobs</code> and it shows up here within a second.</div>
  </section>

  <div class="grid2">
    <section class="card" id="dead-card" aria-label="Dead letters">
      <div class="head">
        <h2>Dead letters</h2>
        <select id="dead-queue" aria-label="Queue whose dead letters are shown"><option value="">Choose a queue…</option></select>
        <div class="spacer"></div>
        <span id="dead-all-slot"></span>
        <button id="dead-refresh" type="button">Refresh</button>
      </div>
      <div id="dead-view"><div class="empty">Choose a queue to browse its dead letters.</div></div>
    </section>

    <section class="card" id="job-card" aria-label="Job lookup">
      <div class="head">
        <h2>Job lookup</h2>
        <form id="job-form" autocomplete="off">
          <input id="job-id" inputmode="numeric" placeholder="Job id" aria-label="Job id">
          <button class="primary" type="submit">Look up</button>
        </form>
      </div>
      <div id="job-view" class="body"><div class="empty">Enter a job id to see its payload, attempts, checkpoint, result, last error and timeline.</div></div>
    </section>
  </div>
</main>

<div id="toasts" class="toasts" aria-live="polite"></div>

<div id="token-overlay" class="overlay" role="dialog" aria-modal="true" aria-labelledby="token-title">
  <form id="token-form" class="dialog" autocomplete="off">
    <h2 id="token-title">This server needs a token</h2>
    <p class="muted">Paste an API token from the server's tokens file. The page keeps it in this tab only
      (<code>sessionStorage</code>) and sends it as <code>Authorization: Bearer</code>, never in a URL.</p>
    <input id="token-input" type="password" autocomplete="off" placeholder="API token" aria-label="API token">
    <p id="token-error" class="error"></p>
    <button class="primary" type="submit">Continue</button>
  </form>
</div>

<script>
"use strict";
(function () {
  var TOKEN_KEY = "tegami.token";
  var STATES = ["pending", "delayed", "leased", "done", "dead", "cancelled"];
  var SVG_NS = "http://www.w3.org/2000/svg";
  var DEAD_PAGE = 20;
  var CHART_POINTS = 300;

  var state = {
    token: sessionStorage.getItem(TOKEN_KEY) || "",
    queues: [],
    history: [],
    intervalMs: 1000,
    lastAt: 0,
    connections: 0,
    startedAt: 0,
    version: "",
    lastData: 0,
    stream: null,
    retryMs: 1000,
    retryTimer: 0,
    chartQueue: "",
    chart: null,
    queueNames: "",
    dead: { queue: "", jobs: [], next: null, loading: false, seenDead: null, error: "" },
    job: null,
    jobId: null,
    jobLoading: false
  };

  function $(id) { return document.getElementById(id); }

  // ---- DOM building: text goes in as text nodes, never as markup ----

  function h(tag, props) {
    var el = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === undefined || v === null || v === false) return;
        if (k === "class") el.className = v;
        else if (k === "text") el.textContent = String(v);
        else if (k === "onclick") el.addEventListener("click", v);
        else el.setAttribute(k, String(v));
      });
    }
    appendAll(el, Array.prototype.slice.call(arguments, 2));
    return el;
  }
  function appendAll(el, children) {
    children.forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      if (Array.isArray(c)) appendAll(el, c);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(String(c)));
    });
  }
  function s(tag, attrs, text) {
    var el = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) el.textContent = String(text);
    return el;
  }

  // ---- formatting ----

  var numbers = new Intl.NumberFormat("en-US");
  function int(n) { return numbers.format(n); }
  function rate(n) {
    if (n === 0) return "0";
    if (n >= 100) return numbers.format(Math.round(n));
    if (n >= 10) return n.toFixed(0);
    return n.toFixed(1);
  }
  function age(ms) {
    var sec = Math.max(0, Math.floor(ms / 1000));
    if (sec < 60) return sec + " s";
    var min = Math.floor(sec / 60);
    if (min < 60) return min + " m " + String(sec % 60).padStart(2, "0") + " s";
    var hr = Math.floor(min / 60);
    if (hr < 24) return hr + " h " + String(min % 60).padStart(2, "0") + " m";
    return Math.floor(hr / 24) + " d " + (hr % 24) + " h";
  }
  function span(ms) { return ms < 1000 ? Math.max(0, Math.round(ms)) + " ms" : age(ms); }
  function clock(ms) {
    var d = new Date(ms);
    var time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
    if (d.toDateString() === new Date().toDateString()) return time;
    return d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + time;
  }
  function relative(at, now) {
    var diff = at - now;
    if (Math.abs(diff) < 1000) return "just now";
    return diff > 0 ? "in " + age(diff) : age(-diff) + " ago";
  }
  function clip(text, max) { return text.length > max ? text.slice(0, max - 1) + "…" : text; }
  function compact(value) { var t = JSON.stringify(value); return t === undefined ? String(value) : t; }
  function queuePath(name) { return "/v1/queues/" + encodeURIComponent(name); }
  function byName(a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; }
  function findQueue(name) {
    for (var i = 0; i < state.queues.length; i++) if (state.queues[i].name === name) return state.queues[i];
    return null;
  }

  // ---- the API ----

  function authHeaders() { return state.token ? { authorization: "Bearer " + state.token } : {}; }

  function api(method, path, body) {
    var headers = authHeaders();
    var init = { method: method, headers: headers, cache: "no-store" };
    if (body !== undefined) { headers["content-type"] = "application/json"; init.body = JSON.stringify(body); }
    return fetch(path, init).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (data) {
        if (res.ok) return data;
        var error = new Error(data && data.error ? data.error.message : "HTTP " + res.status);
        error.status = res.status;
        if (res.status === 401) askToken(true);
        throw error;
      });
    });
  }

  function toast(message, kind) {
    var el = h("div", { class: "toast" + (kind ? " " + kind : ""), role: "status", text: message });
    $("toasts").appendChild(el);
    setTimeout(function () { el.remove(); }, kind === "error" ? 7000 : 3500);
  }
  function fail(error) { toast(error.message, "error"); }

  /** A button that runs an action once, disabled while it runs. */
  function actionButton(label, cls, action) {
    var b = h("button", { type: "button", class: cls, text: label });
    b.addEventListener("click", function () {
      b.disabled = true;
      Promise.resolve().then(action).catch(fail).then(function () { b.disabled = false; });
    });
    return b;
  }
  /** A button for something that cannot be undone: the first click arms it, the second acts. */
  function confirmButton(label, confirmLabel, cls, action) {
    var b = h("button", { type: "button", class: cls, text: label });
    var timer = 0;
    function disarm() { clearTimeout(timer); b.classList.remove("armed"); b.textContent = label; }
    b.addEventListener("click", function () {
      if (!b.classList.contains("armed")) {
        b.classList.add("armed");
        b.textContent = typeof confirmLabel === "function" ? confirmLabel() : confirmLabel;
        timer = setTimeout(disarm, 4000);
        return;
      }
      disarm();
      b.disabled = true;
      Promise.resolve().then(action).catch(fail).then(function () { b.disabled = false; });
    });
    return b;
  }

  // ---- token ----

  function askToken(rejected) {
    $("token-error").textContent = rejected && state.token ? "That token was not accepted. Check it and try again." : "";
    $("token-input").value = "";
    $("token-overlay").classList.add("open");
    setStatus("off", "token needed");
    setTimeout(function () { $("token-input").focus(); }, 0);
  }
  $("token-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var token = $("token-input").value.trim();
    if (!token) { $("token-error").textContent = "Paste a token first."; return; }
    state.token = token;
    sessionStorage.setItem(TOKEN_KEY, token);
    $("token-overlay").classList.remove("open");
    connect();
  });
  $("signout").addEventListener("click", function () {
    state.token = "";
    sessionStorage.removeItem(TOKEN_KEY);
    if (state.stream) state.stream.abort();
    connect();
  });

  // ---- the live stream: GET /v1/events read with fetch, so it can carry the token ----

  function setStatus(kind, text) {
    $("status-dot").className = "dot " + kind;
    $("status-text").textContent = text;
  }

  function connect() {
    clearTimeout(state.retryTimer);
    if (state.stream) state.stream.abort();
    var ctrl = new AbortController();
    state.stream = ctrl;
    $("signout").classList.toggle("hidden", !state.token);
    setStatus("wait", "connecting…");
    readStream(ctrl).then(function (outcome) {
      if (ctrl.signal.aborted || outcome === "token") return;
      var wait = state.retryMs;
      state.retryMs = Math.min(state.retryMs * 2, 15000);
      setStatus("off", (outcome === "ended" ? "server closed the stream" : "disconnected") +
        " — retrying in " + Math.round(wait / 1000) + " s");
      state.retryTimer = setTimeout(connect, wait);
    });
  }

  function readStream(ctrl) {
    return fetch("/v1/events", { headers: authHeaders(), signal: ctrl.signal, cache: "no-store" })
      .then(function (res) {
        if (res.status === 401) { askToken(true); return "token"; }
        if (!res.ok || !res.body) return "error";
        $("token-overlay").classList.remove("open");
        var reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        var buffer = "";
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) return "ended";
            buffer += chunk.value;
            var cut;
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              var block = buffer.slice(0, cut);
              buffer = buffer.slice(cut + 2);
              onBlock(block);
            }
            return pump();
          });
        }
        return pump();
      })
      .catch(function () { return "error"; });
  }

  function onBlock(block) {
    var event = "message";
    var data = [];
    block.split("\n").forEach(function (line) {
      if (line.indexOf("event:") === 0) event = line.slice(6).trim();
      else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
    });
    if (data.length === 0) return;
    var message;
    try { message = JSON.parse(data.join("\n")); } catch (_) { return; }
    state.lastData = Date.now();
    if (event === "hello") onHello(message);
    else if (event === "snapshot") onSnapshot(message);
  }

  function onHello(message) {
    state.retryMs = 1000;
    state.intervalMs = message.interval_ms || 1000;
    state.history = Array.isArray(message.history) ? message.history : [];
    state.lastAt = state.history.length ? state.history[state.history.length - 1].at : 0;
    state.startedAt = message.started_at;
    state.version = String(message.version);
  }

  function onSnapshot(message) {
    if (message.at > state.lastAt) {
      var moved = {};
      message.queues.forEach(function (q) {
        if (q.rates.enqueued || q.rates.acked || q.rates.failed) moved[q.name] = q.rates;
      });
      state.history.push({ at: message.at, queues: moved });
      state.lastAt = message.at;
      var oldest = message.at - CHART_POINTS * state.intervalMs;
      while (state.history.length && state.history[0].at <= oldest) state.history.shift();
    }
    state.queues = message.queues.slice().sort(byName);
    state.connections = message.connections;
    setStatus("on", "live");
    render();
  }

  // A stream that goes quiet (a dropped network path sends no error) is replaced.
  setInterval(function () {
    if (state.lastData && state.stream && !state.stream.signal.aborted && Date.now() - state.lastData > 10000) {
      state.lastData = 0;
      connect();
    }
    if (state.startedAt) {
      $("server-meta").textContent = "tegami " + state.version + " · up " + age(Date.now() - state.startedAt);
    }
  }, 1000);

  // ---- rendering ----

  function render() {
    renderTiles();
    renderQueues();
    syncSelects();
    renderChart();
    followDead();
    followJob();
  }

  function sumRates(queue, seconds) {
    var series = series_(queue, seconds);
    var out = { e: 0, a: 0, f: 0 };
    series.forEach(function (p) { out.e += p.e; out.a += p.a; out.f += p.f; });
    var n = Math.max(1, series.length);
    return { e: out.e / n, a: out.a / n, f: out.f / n };
  }

  function renderTiles() {
    var t = { pending: 0, delayed: 0, leased: 0, dead: 0, consumers: 0, oldest: 0 };
    state.queues.forEach(function (q) {
      t.pending += q.counts.pending; t.delayed += q.counts.delayed;
      t.leased += q.counts.leased; t.dead += q.counts.dead; t.consumers += q.consumers;
      t.oldest = Math.max(t.oldest, q.oldest_pending_age_ms);
    });
    $("t-pending").textContent = int(t.pending);
    $("t-pending-sub").textContent = t.pending ? "oldest waiting " + age(t.oldest) : "nothing waiting";
    $("t-leased").textContent = int(t.leased);
    $("t-delayed").textContent = int(t.delayed);
    $("t-dead").textContent = int(t.dead);
    $("t-dead-tile").classList.toggle("bad", t.dead > 0);
    $("t-consumers").textContent = int(t.consumers);
    $("t-connections").textContent = "on " + state.connections + " connection" + (state.connections === 1 ? "" : "s");
    var r = sumRates("", 10);
    $("t-enq").textContent = rate(r.e);
    $("t-ack").textContent = rate(r.a);
    $("t-fail").textContent = "failed " + rate(r.f) + "/s";
  }

  var rows = new Map();

  function makeRow(name) {
    var cells = {};
    var badge = h("span", { class: "badge paused hidden", text: "paused" });
    var tr = h("tr", { "data-queue": name }, h("td", { class: "l" }, h("span", { class: "qname", text: name }), badge));
    STATES.forEach(function (st) { cells[st] = h("td", { class: "c-" + st }); tr.appendChild(cells[st]); });
    cells.age = h("td", { class: "c-age" });
    cells.consumers = h("td", { class: "c-consumers" });
    var spark = h("td", { class: "l c-spark" });
    var pause = h("button", { type: "button", class: "pause" });
    pause.addEventListener("click", function () { togglePause(name, pause); });
    var dead = h("button", { type: "button", class: "dead-open", text: "Dead letters", onclick: function () { openDead(name); } });
    tr.appendChild(cells.age);
    tr.appendChild(cells.consumers);
    tr.appendChild(spark);
    tr.appendChild(h("td", { class: "actions" }, pause, dead));
    return { tr: tr, cells: cells, badge: badge, spark: spark, pause: pause };
  }

  function updateRow(row, q) {
    STATES.forEach(function (st) {
      var n = q.counts[st];
      var cell = row.cells[st];
      cell.textContent = int(n);
      cell.className = "c-" + st + (n === 0 ? " zero" : st === "dead" ? " hot" : "");
    });
    var pending = q.counts.pending > 0;
    row.cells.age.textContent = pending ? age(q.oldest_pending_age_ms) : "—";
    row.cells.age.className = "c-age" + (!pending ? " zero" : q.oldest_pending_age_ms > 60000 ? " warn" : "");
    row.cells.consumers.textContent = int(q.consumers);
    row.cells.consumers.className = "c-consumers" + (q.consumers === 0 ? " zero" : "");
    row.badge.classList.toggle("hidden", !q.paused);
    row.pause.textContent = q.paused ? "Resume" : "Pause";
    row.spark.replaceChildren(sparkline(q.name));
  }

  function renderQueues() {
    var body = $("queues-body");
    var seen = new Set();
    var before = null;
    state.queues.forEach(function (q) {
      seen.add(q.name);
      var row = rows.get(q.name);
      if (!row) { row = makeRow(q.name); rows.set(q.name, row); }
      updateRow(row, q);
      var want = before ? before.nextSibling : body.firstChild;
      if (want !== row.tr) body.insertBefore(row.tr, want);
      before = row.tr;
    });
    rows.forEach(function (row, name) { if (!seen.has(name)) { row.tr.remove(); rows.delete(name); } });
    $("queues-empty").classList.toggle("hidden", state.queues.length > 0);
    $("queues-table").classList.toggle("hidden", state.queues.length === 0);
    var paused = state.queues.filter(function (q) { return q.paused; }).length;
    $("queues-caption").textContent = state.queues.length + " queue" + (state.queues.length === 1 ? "" : "s") +
      (paused ? " · " + paused + " paused" : "");
  }

  function togglePause(name, button) {
    var q = findQueue(name);
    var paused = q ? q.paused : false;
    button.disabled = true;
    api("POST", queuePath(name) + (paused ? "/resume" : "/pause"), {}).then(function () {
      if (q) q.paused = !paused;
      renderQueues();
      toast((paused ? "Resumed " : "Paused ") + name);
    }).catch(fail).then(function () { button.disabled = false; });
  }

  function syncSelects() {
    var names = state.queues.map(function (q) { return q.name; });
    var key = names.join("\u0000");
    if (key === state.queueNames) return;
    state.queueNames = key;
    [["chart-queue", "All queues"], ["dead-queue", "Choose a queue…"]].forEach(function (pair) {
      var select = $(pair[0]);
      var current = select.value;
      var options = [h("option", { value: "", text: pair[1] })];
      names.forEach(function (n) { options.push(h("option", { value: n, text: n })); });
      if (current && names.indexOf(current) < 0) options.push(h("option", { value: current, text: current }));
      select.replaceChildren.apply(select, options);
      select.value = current;
    });
  }

  // ---- throughput ----

  /** The last count intervals ending at the newest sample, zero where nothing moved. */
  function series_(queue, count) {
    var interval = state.intervalMs;
    if (!state.slots || state.slotsAt !== state.lastAt || state.slotsLength !== state.history.length) {
      state.slots = new Map();
      state.history.forEach(function (sample) {
        var key = Math.round(sample.at / interval);
        var seen = state.slots.get(key);
        if (!seen) { state.slots.set(key, sample); return; }
        var merged = { at: sample.at, queues: Object.assign({}, seen.queues) };
        Object.keys(sample.queues).forEach(function (name) {
          var a = merged.queues[name] || { enqueued: 0, acked: 0, failed: 0 };
          var b = sample.queues[name];
          merged.queues[name] = { enqueued: a.enqueued + b.enqueued, acked: a.acked + b.acked, failed: a.failed + b.failed };
        });
        state.slots.set(key, merged);
      });
      state.slotsAt = state.lastAt;
      state.slotsLength = state.history.length;
    }
    var slots = state.slots;
    var end = Math.round((state.lastAt || Date.now()) / interval);
    var out = [];
    for (var i = count - 1; i >= 0; i--) {
      var sample = slots.get(end - i);
      var p = { at: (end - i) * interval, e: 0, a: 0, f: 0 };
      if (sample) {
        Object.keys(sample.queues).forEach(function (name) {
          if (queue && name !== queue) return;
          var r = sample.queues[name];
          p.e += r.enqueued; p.a += r.acked; p.f += r.failed;
        });
      }
      out.push(p);
    }
    return out;
  }

  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= raw) return steps[i] * p;
    return 10 * p;
  }
  function tick(v) { return v >= 1000 ? (v / 1000) + "k" : String(v); }
  function linePath(points, key, x, y) {
    var d = "";
    points.forEach(function (p, i) { d += (i ? "L" : "M") + x(i).toFixed(1) + " " + y(p[key]).toFixed(1); });
    return d;
  }

  function renderChart() {
    var box = $("chart");
    var width = Math.max(320, box.clientWidth);
    var height = box.clientHeight || 230;
    var m = { l: 46, r: 10, t: 10, b: 24 };
    var points = series_(state.chartQueue, CHART_POINTS);
    var peak = 0;
    points.forEach(function (p) { peak = Math.max(peak, p.e, p.a, p.f); });
    var step = Math.max(1, niceStep(Math.max(peak, 1) / 4));
    var top = Math.max(step * Math.ceil(peak / step), step * 4);
    var plotW = width - m.l - m.r;
    var plotH = height - m.t - m.b;
    function x(i) { return m.l + (i / (points.length - 1)) * plotW; }
    function y(v) { return m.t + (1 - v / top) * plotH; }
    var root = s("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
      "aria-label": "Jobs enqueued, acked and failed per second over the last five minutes" });
    for (var v = 0; v <= top + 1e-9; v += step) {
      var yy = Math.round(y(v)) + 0.5;
      root.appendChild(s("line", { x1: m.l, x2: width - m.r, y1: yy, y2: yy, class: v === 0 ? "axis" : "grid" }));
      root.appendChild(s("text", { x: m.l - 8, y: yy + 4, "text-anchor": "end" }, tick(v)));
    }
    var perMinute = 60000 / state.intervalMs;
    for (var min = 5; min >= 0; min--) {
      var i = points.length - 1 - min * perMinute;
      if (i < 0) continue;
      var anchor = min === 0 ? "end" : i === 0 ? "start" : "middle";
      root.appendChild(s("text", { x: x(i), y: height - 6, "text-anchor": anchor }, min === 0 ? "now" : "−" + min + " min"));
    }
    if (peak === 0) {
      root.appendChild(s("text", { x: m.l + plotW / 2, y: m.t + plotH / 2, "text-anchor": "middle", class: "quiet" },
        "No jobs moved in the last five minutes"));
    } else {
      root.appendChild(s("path", { class: "area", d: linePath(points, "e", x, y) + "L" + x(points.length - 1) + " " + y(0) + "L" + x(0) + " " + y(0) + "Z" }));
      root.appendChild(s("path", { class: "line fail", d: linePath(points, "f", x, y) }));
      root.appendChild(s("path", { class: "line ack", d: linePath(points, "a", x, y) }));
      root.appendChild(s("path", { class: "line enq", d: linePath(points, "e", x, y) }));
    }
    var hover = s("g", {});
    root.appendChild(hover);
    var pad = s("rect", { x: m.l, y: m.t, width: plotW, height: plotH, fill: "transparent" });
    root.appendChild(pad);
    state.chart = { points: points, x: x, y: y, hover: hover, m: m, plotW: plotW, plotH: plotH, at: state.chart && state.chart.at };
    pad.addEventListener("mousemove", function (event) {
      var rect = root.getBoundingClientRect();
      var i = Math.round((event.clientX - rect.left - m.l) / plotW * (points.length - 1));
      state.chart.at = points[Math.max(0, Math.min(points.length - 1, i))].at;
      drawHover();
    });
    pad.addEventListener("mouseleave", function () { state.chart.at = null; drawHover(); });
    box.replaceChildren(root);
    drawHover();
  }

  function drawHover() {
    var c = state.chart;
    if (!c) return;
    c.hover.replaceChildren();
    var index = -1;
    if (c.at) for (var i = 0; i < c.points.length; i++) if (c.points[i].at === c.at) index = i;
    if (index < 0) {
      var r = sumRates(state.chartQueue, 10);
      $("l-enq").textContent = rate(r.e) + "/s";
      $("l-ack").textContent = rate(r.a) + "/s";
      $("l-fail").textContent = rate(r.f) + "/s";
      $("chart-caption").textContent = "jobs per second, last 5 minutes" + (state.chartQueue ? "" : ", all queues");
      return;
    }
    var p = c.points[index];
    var px = c.x(index);
    c.hover.appendChild(s("line", { x1: px, x2: px, y1: c.m.t, y2: c.m.t + c.plotH, class: "cross" }));
    [["e", "var(--enq)"], ["a", "var(--ack)"], ["f", "var(--fail)"]].forEach(function (k) {
      c.hover.appendChild(s("circle", { cx: px, cy: c.y(p[k[0]]), r: 3, fill: "#fff", stroke: k[1], "stroke-width": 2 }));
    });
    $("l-enq").textContent = int(p.e) + "/s";
    $("l-ack").textContent = int(p.a) + "/s";
    $("l-fail").textContent = int(p.f) + "/s";
    $("chart-caption").textContent = "at " + clock(p.at);
  }

  function sparkline(queue) {
    var points = series_(queue, 60);
    var w = 120, hgt = 26;
    var peak = 0;
    points.forEach(function (p) { peak = Math.max(peak, p.e, p.a); });
    var root = s("svg", { width: w, height: hgt, viewBox: "0 0 " + w + " " + hgt, class: "spark", "aria-hidden": "true" });
    if (peak === 0) {
      root.appendChild(s("line", { x1: 0, x2: w, y1: hgt - 1.5, y2: hgt - 1.5, class: "flat" }));
      return root;
    }
    function x(i) { return (i / (points.length - 1)) * w; }
    function y(v) { return 2 + (1 - v / peak) * (hgt - 4); }
    root.appendChild(s("path", { class: "enq", d: linePath(points, "e", x, y) }));
    root.appendChild(s("path", { class: "ack", d: linePath(points, "a", x, y) }));
    return root;
  }

  $("chart-queue").addEventListener("change", function (event) {
    state.chartQueue = event.target.value;
    renderChart();
  });
  window.addEventListener("resize", function () { renderChart(); });

  // ---- dead letters ----

  function openDead(name) {
    $("dead-queue").value = name;
    loadDead(name, false);
    $("dead-card").scrollIntoView({ behavior: "smooth", block: "start" });
  }
  $("dead-queue").addEventListener("change", function (event) { loadDead(event.target.value, false); });
  $("dead-refresh").addEventListener("click", function () { loadDead(state.dead.queue, false); });

  function loadDead(name, more) {
    var d = state.dead;
    if (!more) { d.queue = name; d.jobs = []; d.next = null; d.error = ""; d.seenDead = null; }
    if (!name) { renderDead(); return Promise.resolve(); }
    d.loading = true;
    if (!more) renderDead();
    var after = more && d.next !== null ? "&after=" + d.next : "";
    return api("GET", queuePath(name) + "/dead?limit=" + DEAD_PAGE + after).then(function (data) {
      if (d.queue !== name) return;
      d.jobs = more ? d.jobs.concat(data.jobs) : data.jobs;
      d.next = data.next_after;
      var q = findQueue(name);
      d.seenDead = q ? q.counts.dead : null;
    }, function (error) {
      if (d.queue !== name) return;
      d.error = error.status === 403 ? "This token may not read dead letters: that takes the admin scope." : error.message;
    }).then(function () {
      if (d.queue !== name) return;
      d.loading = false;
      renderDead();
    });
  }

  /** Reloads the first page when the queue's dead count changed (unless the user paged on). */
  function followDead() {
    var d = state.dead;
    var q = d.queue ? findQueue(d.queue) : null;
    renderDeadActions();
    if (!q || d.loading || d.error || d.seenDead === null) return;
    if ($("dead-view").querySelector(".armed")) return;
    if (q.counts.dead !== d.seenDead && d.jobs.length <= DEAD_PAGE) loadDead(d.queue, false);
  }

  function renderDeadActions() {
    var d = state.dead;
    var q = d.queue ? findQueue(d.queue) : null;
    var slot = $("dead-all-slot");
    var count = q ? q.counts.dead : 0;
    if (count === 0 || d.error) { slot.replaceChildren(); return; }
    var existing = slot.firstChild;
    if (existing && existing.getAttribute("data-count") === String(count) && existing.getAttribute("data-queue") === d.queue) return;
    if (existing && existing.classList.contains("armed")) return;
    var name = d.queue;
    var button = confirmButton("Requeue all " + int(count), "Requeue all " + int(count) + "?", "requeue-all", function () {
      return api("POST", queuePath(name) + "/dead/requeue", {}).then(function (out) {
        toast("Requeued " + int(out.requeued) + " dead job" + (out.requeued === 1 ? "" : "s") + " of " + name);
        return loadDead(name, false);
      });
    });
    button.id = "dead-requeue-all";
    button.setAttribute("data-count", String(count));
    button.setAttribute("data-queue", name);
    slot.replaceChildren(button);
  }

  function renderDead() {
    var d = state.dead;
    var view = $("dead-view");
    renderDeadActions();
    if (!d.queue) { view.replaceChildren(h("div", { class: "empty", text: "Choose a queue to browse its dead letters." })); return; }
    if (d.error) { view.replaceChildren(h("div", { class: "empty error", text: d.error })); return; }
    if (d.jobs.length === 0) {
      view.replaceChildren(h("div", { class: "empty", text: d.loading ? "Loading…" : "No dead letters in " + d.queue + "." }));
      return;
    }
    var now = Date.now();
    var body = h("tbody", { id: "dead-body" });
    d.jobs.forEach(function (job) { body.appendChild(deadRow(job, now)); });
    var table = h("table", null,
      h("thead", null, h("tr", null,
        h("th", { class: "l", text: "Job" }), h("th", { text: "Tries" }), h("th", { class: "l", text: "Last error" }),
        h("th", { text: "Died" }), h("th", { class: "l", text: "Payload" }), h("th"))),
      body);
    var q = findQueue(d.queue);
    var total = q ? q.counts.dead : d.jobs.length;
    var foot = h("div", { class: "foot" }, h("span", { text: "Showing " + int(d.jobs.length) + " of " + int(Math.max(total, d.jobs.length)) }));
    if (d.next !== null) {
      foot.appendChild(h("span", { class: "spacer" }));
      foot.appendChild(actionButton("Load more", "dead-more", function () { return loadDead(d.queue, true); }));
    }
    view.replaceChildren(h("div", { class: "scroll" }, table), foot);
  }

  function deadRow(job, now) {
    return h("tr", { "data-id": job.id },
      h("td", { class: "l" }, h("button", { type: "button", class: "link", text: "#" + job.id, title: "Show this job", onclick: function () { showJob(job.id, true); } })),
      h("td", { text: job.attempts + " / " + job.max_attempts }),
      h("td", { class: "l err", text: job.last_error === null ? "—" : clip(job.last_error, 80), title: job.last_error === null ? null : job.last_error }),
      h("td", { text: job.finished_at ? relative(job.finished_at, now) : "—", title: job.finished_at ? new Date(job.finished_at).toLocaleString() : null }),
      h("td", { class: "l payload mono", text: clip(compact(job.payload), 60) }),
      h("td", { class: "actions" },
        actionButton("Requeue", "requeue", function () { return requeueJob(job); }),
        confirmButton("Delete", "Delete?", "delete danger", function () { return deleteJob(job); })));
  }

  function dropDead(id) {
    state.dead.jobs = state.dead.jobs.filter(function (j) { return j.id !== id; });
    if (state.dead.seenDead !== null) state.dead.seenDead--;
    renderDead();
  }

  function requeueJob(job) {
    return api("POST", queuePath(job.queue) + "/dead/requeue", { ids: [job.id] }).then(function (out) {
      if (out.requeued === 0) toast("Job #" + job.id + " was no longer dead", "error");
      else toast("Requeued job #" + job.id + " to " + job.queue);
      if (state.dead.queue === job.queue) dropDead(job.id);
      if (state.jobId === job.id) return showJob(job.id, false);
    });
  }

  function deleteJob(job) {
    return api("DELETE", "/v1/jobs/" + job.id).then(function (out) {
      toast((out.removed ? "Deleted job #" : "Cancelled job #") + job.id);
      if (state.dead.queue === job.queue) dropDead(job.id);
      if (state.jobId === job.id) return showJob(job.id, false);
    });
  }

  // ---- job lookup ----

  $("job-form").addEventListener("submit", function (event) {
    event.preventDefault();
    var text = $("job-id").value.trim().replace(/^#/, "");
    if (!/^[1-9][0-9]{0,15}$/.test(text)) {
      $("job-view").replaceChildren(h("div", { class: "empty error", text: "A job id is a whole number, like 42." }));
      return;
    }
    showJob(Number(text), false);
  });

  function showJob(id, reveal) {
    state.jobId = id;
    $("job-id").value = String(id);
    if (reveal) $("job-card").scrollIntoView({ behavior: "smooth", block: "start" });
    if (!state.job || state.job.id !== id) {
      $("job-view").replaceChildren(h("div", { class: "empty", text: "Loading job #" + id + "…" }));
    }
    state.jobLoading = true;
    return api("GET", "/v1/jobs/" + id).then(function (job) {
      if (state.jobId !== id) return;
      state.job = job;
      renderJob(job);
    }, function (error) {
      if (state.jobId !== id) return;
      state.job = null;
      var text = error.status === 404
        ? "No job #" + id + ": it never existed, or it was removed after it finished."
        : error.message;
      $("job-view").replaceChildren(h("div", { class: "empty" + (error.status === 404 ? "" : " error"), text: text }));
    }).then(function () { state.jobLoading = false; });
  }

  /** Keeps a job that is still moving up to date. */
  function followJob() {
    var job = state.job;
    if (!job || state.jobLoading || state.jobId !== job.id) return;
    if ($("job-view").querySelector(".armed")) return; // never redraw under an armed button
    if (job.state === "pending" || job.state === "delayed" || job.state === "leased") showJob(job.id, false);
  }

  function block(title, value, cls) {
    return [h("h3", { text: title }), h("pre", { class: cls || "", text: typeof value === "string" && cls ? value : JSON.stringify(value, null, 2) })];
  }

  function renderJob(job) {
    var now = Date.now();
    var actions = h("div", { class: "actions" });
    if (job.state === "pending" || job.state === "delayed" || job.state === "leased") {
      actions.appendChild(confirmButton("Cancel job", "Cancel it?", "danger job-cancel", function () { return deleteJob(job); }));
    }
    if (job.state === "dead") actions.appendChild(actionButton("Requeue", "primary job-requeue", function () { return requeueJob(job); }));
    if (job.state === "done" || job.state === "dead" || job.state === "cancelled") {
      actions.appendChild(confirmButton("Delete", "Delete it?", "danger job-delete", function () { return deleteJob(job); }));
    }
    var head = h("div", { class: "job-head" },
      h("span", { class: "title", text: "Job #" + job.id }),
      h("span", { class: "badge s-" + job.state, text: job.state }),
      h("span", { class: "muted" }, "in ", h("span", { class: "qname", text: job.queue })),
      actions);
    var backoff = job.backoff ? span(job.backoff.base_ms) + " doubling to " + span(job.backoff.max_ms) : "server default";
    var kv = h("dl", { class: "kv" },
      h("dt", { text: "Attempts" }), h("dd", { text: job.attempts + " of " + job.max_attempts }),
      h("dt", { text: "Priority" }), h("dd", { text: job.priority }),
      h("dt", { text: "Key" }), h("dd", { class: job.key === null ? "muted" : "mono", text: job.key === null ? "none" : job.key }),
      h("dt", { text: "Lease length" }), h("dd", { text: job.lease_ms === null ? "server default" : span(job.lease_ms) }),
      h("dt", { text: "Backoff" }), h("dd", { text: backoff }),
      h("dt", { text: "Enqueued" }), h("dd", { text: relative(job.created_at, now), title: new Date(job.created_at).toLocaleString() }));
    var parts = [head, kv, h("h3", { text: "Timeline" }), timeline(job, now)];
    parts = parts.concat(block("Payload", job.payload));
    if (job.checkpoint !== null) parts = parts.concat(block("Checkpoint", job.checkpoint));
    if (job.result !== null) parts = parts.concat(block("Result", job.result));
    if (job.last_error !== null) parts = parts.concat(block("Last error", job.last_error, "err"));
    $("job-view").replaceChildren.apply($("job-view"), parts);
  }

  function timeline(job, now) {
    var items = [{ at: job.created_at, what: "Enqueued", cls: "start" }];
    if (job.run_at !== job.created_at) {
      var ahead = job.run_at > now;
      items.push({
        at: job.run_at,
        what: ahead ? (job.attempts > 0 ? "Retry due" : "Due to run") : (job.attempts > 0 ? "Available again" : "Became available"),
        cls: ahead ? "future" : ""
      });
    }
    if (job.state === "leased" && job.lease_expires_at !== null) {
      items.push({ at: job.lease_expires_at, what: "Lease of attempt " + job.attempts + " ends unless acked or extended", cls: "future" });
    }
    if (job.finished_at !== null) {
      var ends = { done: ["Done (acked)", "done"], dead: ["Dead-lettered", "dead"], cancelled: ["Cancelled", ""] };
      var end = ends[job.state] || ["Finished", ""];
      items.push({ at: job.finished_at, what: end[0], cls: end[1] });
    } else {
      var now_ = { pending: "Waiting for a consumer", delayed: "Waiting for its time", leased: "With a consumer (attempt " + job.attempts + ")" };
      items.push({ at: now, what: "Now: " + (now_[job.state] || job.state), cls: "now" });
    }
    items.sort(function (a, b) { return a.at - b.at; });
    var list = h("ol", { class: "timeline" });
    items.forEach(function (item) {
      var offset = item.at - job.created_at;
      var note = item.cls === "start" ? relative(item.at, now) : (offset >= 0 ? "+" + span(offset) : "−" + span(-offset)) + " after enqueue";
      list.appendChild(h("li", { class: item.cls },
        h("div", { class: "what", text: item.what }),
        h("div", { class: "when", text: clock(item.at) + " · " + note })));
    });
    return list;
  }

  connect();
})();
</script>
</body>
</html>
`;
