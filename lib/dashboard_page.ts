/**
 * The dashboard page, embedded as a string so a compiled binary serves it without reading
 * files. It reads the same HTTP API as any client; with auth on it asks for a token and keeps it
 * in `sessionStorage` (this tab only).
 *
 * @module
 */

/** The dashboard's HTML (self-contained: no external scripts, styles or fonts). */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tegami</title>
<style>
  :root { --fg: #1d2330; --muted: #6b7280; --line: #e5e7eb; --accent: #2f5fd0; --bad: #b42318; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: #f7f8fa; }
  header { display: flex; align-items: baseline; gap: 1rem; padding: 1rem 2rem;
    background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { margin: 0; font-size: 1.25rem; }
  header .status { color: var(--muted); }
  main { padding: 1.5rem 2rem; max-width: 1200px; }
  table { width: 100%; border-collapse: collapse; background: #fff; border: 1px solid var(--line); }
  th, td { padding: .5rem .75rem; text-align: right; border-bottom: 1px solid var(--line); }
  th:first-child, td:first-child { text-align: left; }
  th { font-weight: 600; color: var(--muted); font-size: .8rem; text-transform: uppercase; }
  td.name { font-family: ui-monospace, monospace; }
  .paused { color: var(--bad); font-weight: 600; }
  button { font: inherit; padding: .25rem .6rem; border: 1px solid var(--line); background: #fff;
    border-radius: 4px; cursor: pointer; }
  button:hover { border-color: var(--accent); }
  form.token { display: none; gap: .5rem; margin-bottom: 1rem; }
  form.token input { flex: 1; padding: .4rem; font: inherit; }
  .empty { color: var(--muted); padding: 2rem; text-align: center; background: #fff;
    border: 1px solid var(--line); }
  .error { color: var(--bad); }
</style>
</head>
<body>
<header><h1>tegami</h1><span class="status" id="status">connecting…</span></header>
<main>
  <form class="token" id="token-form">
    <input id="token" type="password" placeholder="API token (kept in this tab only)" autocomplete="off">
    <button type="submit">Use token</button>
  </form>
  <div id="queues"></div>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("tegami.token") || "";
const headers = () => token ? { authorization: "Bearer " + token } : {};
async function api(method, path) {
  const res = await fetch(path, { method, headers: headers() });
  if (res.status === 401) { $("token-form").style.display = "flex"; throw new Error("token needed"); }
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ? body.error.message : res.statusText);
  return body;
}
function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = String(text);
  if (cls) td.className = cls;
  return td;
}
function render(queues) {
  const root = $("queues");
  root.replaceChildren();
  if (queues.length === 0) {
    const div = document.createElement("div");
    div.className = "empty";
    div.textContent = "No queues yet. Enqueue a job: POST /v1/queues/{queue}/jobs";
    root.append(div);
    return;
  }
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const h of ["queue", "pending", "delayed", "leased", "done", "dead", "cancelled",
    "oldest pending", "consumers", ""]) {
    const th = document.createElement("th");
    th.textContent = h;
    head.append(th);
  }
  const body = table.createTBody();
  for (const q of queues) {
    const row = body.insertRow();
    row.append(cell(q.name + (q.paused ? " (paused)" : ""), q.paused ? "name paused" : "name"));
    for (const s of ["pending", "delayed", "leased", "done", "dead", "cancelled"]) {
      row.append(cell(q.counts[s]));
    }
    row.append(cell((q.oldest_pending_age_ms / 1000).toFixed(1) + " s"));
    row.append(cell(q.consumers));
    const td = document.createElement("td");
    const button = document.createElement("button");
    button.textContent = q.paused ? "Resume" : "Pause";
    button.onclick = () => api("POST", "/v1/queues/" + encodeURIComponent(q.name) +
      (q.paused ? "/resume" : "/pause")).then(refresh, show);
    td.append(button);
    row.append(td);
  }
  root.append(table);
}
function show(error) {
  $("status").textContent = error.message;
  $("status").className = "status error";
}
async function refresh() {
  try {
    const { queues } = await api("GET", "/v1/queues");
    render(queues);
    $("status").textContent = "updated " + new Date().toLocaleTimeString();
    $("status").className = "status";
  } catch (error) { show(error); }
}
$("token-form").onsubmit = (event) => {
  event.preventDefault();
  token = $("token").value.trim();
  sessionStorage.setItem("tegami.token", token);
  $("token-form").style.display = "none";
  refresh();
};
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
`;
