/**
 * The dashboard's script, served as /dashboard.js (the CSP allows scripts from this server only).
 *
 * It is a client of the public API like any other. Live numbers come from `GET /v1/events`, read
 * with `fetch()` and a stream reader (not `EventSource`, which cannot send the `Authorization`
 * header); actions call the ordinary endpoints. With auth on it asks for a token and keeps it in
 * `sessionStorage` (this tab only; never in a URL).
 *
 * Everything users control (queue names, payloads, errors, keys) reaches the page only through
 * `textContent`, `setAttribute` or SVG text nodes, never through `innerHTML`.
 */
"use strict";
(function () {
  const TOKEN_KEY = "tegami.token";
  /** @type {("blocked" | "pending" | "delayed" | "leased" | "done" | "dead" | "cancelled")[]} */
  const STATES = ["blocked", "pending", "delayed", "leased", "done", "dead", "cancelled"];
  const SVG_NS = "http://www.w3.org/2000/svg";
  const DEAD_PAGE = 20;
  const BROWSE_PAGE = 25;
  const CHART_POINTS = 300;

  /**
   * @typedef {Error & { status?: number }} ApiError
   * @typedef {{ enqueued: number, acked: number, failed: number }} Rates
   * @typedef {{ blocked: number, pending: number, delayed: number, leased: number, done: number, dead: number, cancelled: number }} Counts
   * @typedef {{ group: string, held: "concurrency" | "rate", pending: number, leased: number, limit: number }} HeldGroup
   * @typedef {{ waiting: number, leased: number, full: number, rate_held?: number, top_held?: HeldGroup[] }} GroupCounts
   * @typedef {{ weight: number, concurrency: number | null, rate: string | null }} GroupSettings
   * @typedef {{
   *   group: string, settings: GroupSettings, configured: boolean, pending: number, leased: number,
   *   limit: number, held: "concurrency" | "rate" | null, held_until: number | null
   * }} GroupState  one ordering group as `GET /v1/queues/{queue}/groups` answers it
   * @typedef {{
   *   concurrency: number | null, rate: string | null, group_limit: number, max_attempts: number | null,
   *   lease_ms: number | null, backoff: { base_ms: number, max_ms: number } | null,
   *   retain_done_ms: number | null, retain_dead_ms: number | null,
   *   retain_pending_ms: number | null, dead_letter_queue: string | null,
   *   sqs_attributes?: Record<string, string> | null, tags?: Record<string, string> | null
   * }} QueueSettings
   * @typedef {{ name: string, paused: boolean, counts: Counts, oldest_pending_age_ms: number, consumers: number, rates: Rates, settings?: QueueSettings, groups?: GroupCounts, held?: string | null }} QueueView
   * @typedef {{ at: number, queues: Record<string, Rates> }} Sample
   * @typedef {{ at: number, e: number, a: number, f: number }} Point
   * @typedef {{
   *   id: number, queue: string, state: string, payload: unknown, priority: number, key: string | null,
   *   key_expires_at: number | null, attempts: number, max_attempts: number, run_at: number,
   *   lease_ms: number | null, backoff: { base_ms: number, max_ms: number } | null, created_at: number,
   *   checkpoint: unknown, progress: unknown, progress_at: number | null, result: unknown,
   *   last_error: string | null, lease_expires_at: number | null, finished_at: number | null,
   *   flow?: { id: number, ref: string }
   * }} Job
   * @typedef {{
   *   points: Point[], x: (i: number) => number, y: (v: number) => number, hover: SVGElement,
   *   m: { l: number, r: number, t: number, b: number }, plotW: number, plotH: number, at: number | null | undefined
   * }} Chart
   * @typedef {{
   *   tr: HTMLTableRowElement, cells: Record<string, HTMLElement>, badge: HTMLElement, spark: HTMLElement,
   *   pause: HTMLButtonElement, settings: HTMLElement, settingsKey: string,
   *   limits: { line: HTMLElement, held: HTMLElement, groups: HTMLButtonElement }
   * }} Row
   * @typedef {{
   *   queue: string, jobs: Job[], next: number | null, loading: boolean, error: string,
   *   seen: number | null
   * }} JobList  one queue's jobs as a list shows them, and the queue's count of them when loaded
   * @typedef {{
   *   token: string, queues: QueueView[], history: Sample[], intervalMs: number, lastAt: number,
   *   connections: number, startedAt: number, version: string, lastData: number,
   *   stream: AbortController | null, retryMs: number, retryTimer: ReturnType<typeof setTimeout> | undefined, chartQueue: string,
   *   chart: Chart | null, queueNames: string,
   *   dead: JobList,
   *   job: Job | null, jobId: number | null, jobLoading: boolean,
   *   browse: JobList & { state: string, order: string },
   *   slots?: Map<number, Sample>, slotsAt?: number, slotsLength?: number
   * }} State
   */

  /** @type {State} */
  const state = {
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
    retryTimer: undefined,
    chartQueue: "",
    chart: null,
    queueNames: "",
    dead: { queue: "", jobs: [], next: null, loading: false, error: "", seen: null },
    job: null,
    jobId: null,
    jobLoading: false,
    browse: {
      queue: "",
      state: "pending",
      order: "newest",
      jobs: [],
      next: null,
      loading: false,
      error: "",
      seen: null,
    },
  };

  /**
   * The element with this id (the page has every id the script asks for).
   * @param {string} id
   * @returns {HTMLElement}
   */
  function $(id) {
    const el = document.getElementById(id);
    if (el === null) throw new Error("The page has no #" + id);
    return el;
  }
  /**
   * The input or select with this id.
   * @param {string} id
   * @returns {HTMLInputElement}
   */
  function field(id) {
    return /** @type {HTMLInputElement} */ ($(id));
  }

  // ---- DOM building: text goes in as text nodes, never as markup ----

  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {Record<string, unknown> | null} [props]
   * @param {...unknown} children
   * @returns {HTMLElementTagNameMap[K]}
   */
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        const v = props[k];
        if (v === undefined || v === null || v === false) return;
        if (k === "class") el.className = String(v);
        else if (k === "text") el.textContent = String(v);
        else if (k === "onclick") el.addEventListener("click", /** @type {EventListener} */ (v));
        else el.setAttribute(k, String(v));
      });
    }
    appendAll(el, children);
    return el;
  }
  /**
   * A table's head row: each column a title, or [title, true] for one aligned left.
   * @param {(string | [string, boolean])[]} columns
   */
  function tableHead(columns) {
    return h(
      "thead",
      null,
      h(
        "tr",
        null,
        columns.map(function (/** @type {string | [string, boolean]} */ column) {
          const left = Array.isArray(column);
          const title = left ? column[0] : column;
          return h("th", { class: left ? "l" : null, text: title || null });
        }),
      ),
    );
  }

  /**
   * @param {Node} el
   * @param {unknown[]} children
   */
  function appendAll(el, children) {
    children.forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      if (Array.isArray(c)) appendAll(el, c);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(String(c)));
    });
  }
  /**
   * @param {string} tag
   * @param {Record<string, string | number>} [attrs]
   * @param {string} [text]
   * @returns {SVGElement}
   */
  function s(tag, attrs, text) {
    const el = document.createElementNS(SVG_NS, tag);
    const given = attrs || {};
    Object.keys(given).forEach(function (k) {
      el.setAttribute(k, String(given[k]));
    });
    if (text !== undefined) el.textContent = String(text);
    return el;
  }

  // ---- formatting ----

  const numbers = new Intl.NumberFormat("en-US");
  /**
   * @param {number} n
   */
  function int(n) {
    return numbers.format(n);
  }
  /**
   * @param {number} n
   */
  function rate(n) {
    if (n === 0) return "0";
    if (n >= 100) return numbers.format(Math.round(n));
    if (n >= 10) return n.toFixed(0);
    return n.toFixed(1);
  }
  /**
   * @param {number} ms
   */
  function age(ms) {
    const sec = Math.max(0, Math.floor(ms / 1000));
    if (sec < 60) return sec + " s";
    const min = Math.floor(sec / 60);
    if (min < 60) return min + " m " + String(sec % 60).padStart(2, "0") + " s";
    const hr = Math.floor(min / 60);
    if (hr < 24) return hr + " h " + String(min % 60).padStart(2, "0") + " m";
    return Math.floor(hr / 24) + " d " + (hr % 24) + " h";
  }
  /**
   * @param {number} ms
   */
  function span(ms) {
    return ms < 1000 ? Math.max(0, Math.round(ms)) + " ms" : age(ms);
  }
  /**
   * @param {number} ms
   */
  function clock(ms) {
    const d = new Date(ms);
    const time = d.toLocaleTimeString([], {
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hour12: false,
    });
    if (d.toDateString() === new Date().toDateString()) return time;
    return d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + time;
  }
  /**
   * @param {number} at
   * @param {number} now
   */
  function relative(at, now) {
    const diff = at - now;
    if (Math.abs(diff) < 1000) return "just now";
    return diff > 0 ? "in " + age(diff) : age(-diff) + " ago";
  }
  /**
   * @param {string} text
   * @param {number} max
   */
  function clip(text, max) {
    return text.length > max ? text.slice(0, max - 1) + "…" : text;
  }
  /**
   * @param {unknown} value
   */
  function compact(value) {
    const t = JSON.stringify(value);
    return t === undefined ? String(value) : t;
  }
  /**
   * @param {string} name
   */
  function queuePath(name) {
    return "/v1/queues/" + encodeURIComponent(name);
  }
  /**
   * @param {{ name: string }} a
   * @param {{ name: string }} b
   */
  function byName(a, b) {
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  }
  /**
   * @param {string} name
   * @returns {QueueView | null}
   */
  function findQueue(name) {
    for (let i = 0; i < state.queues.length; i++) {
      if (state.queues[i].name === name) return state.queues[i];
    }
    return null;
  }

  // ---- the API ----

  /**
   * @returns {Record<string, string>}
   */
  function authHeaders() {
    return state.token ? { authorization: "Bearer " + state.token } : {};
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @returns {Promise<any>}
   */
  function api(method, path, body) {
    const headers = authHeaders();
    /** @type {RequestInit} */
    const init = { method: method, headers: headers, cache: "no-store" };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.json().catch(function () {
        return null;
      }).then(function (data) {
        if (res.ok) return data;
        const error = /** @type {ApiError} */ (new Error(
          data && data.error ? data.error.message : "HTTP " + res.status,
        ));
        error.status = res.status;
        if (res.status === 401) askToken(true);
        throw error;
      });
    });
  }

  /**
   * @param {string} message
   * @param {string} [kind]
   */
  function toast(message, kind) {
    const el = h("div", {
      class: "toast" + (kind ? " " + kind : ""),
      role: "status",
      text: message,
    });
    $("toasts").appendChild(el);
    setTimeout(function () {
      el.remove();
    }, kind === "error" ? 7000 : 3500);
  }
  /**
   * @param {Error} error
   */
  function fail(error) {
    toast(error.message, "error");
  }

  /**
   * Runs a button's action, the button disabled until it settles; a failure becomes a toast.
   * @param {HTMLButtonElement} b
   * @param {() => unknown} action
   */
  function runFrom(b, action) {
    b.disabled = true;
    Promise.resolve().then(action).catch(fail).then(function () {
      b.disabled = false;
    });
  }
  /**
   * A button that runs an action once, disabled while it runs.
   * @param {string} label
   * @param {string} cls
   * @param {() => unknown} action
   */
  function actionButton(label, cls, action) {
    const b = h("button", { type: "button", class: cls, text: label });
    b.addEventListener("click", function () {
      runFrom(b, action);
    });
    return b;
  }
  /**
   * A button for something that cannot be undone: the first click arms it (its label becomes
   * `confirmLabel` for four seconds), the second acts.
   * @param {string} label
   * @param {string} confirmLabel
   * @param {string} cls
   * @param {() => unknown} action
   */
  function confirmButton(label, confirmLabel, cls, action) {
    const b = h("button", { type: "button", class: cls, text: label });
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    function disarm() {
      clearTimeout(timer);
      b.classList.remove("armed");
      b.textContent = label;
    }
    b.addEventListener("click", function () {
      if (!b.classList.contains("armed")) {
        b.classList.add("armed");
        b.textContent = confirmLabel;
        timer = setTimeout(disarm, 4000);
        return;
      }
      disarm();
      runFrom(b, action);
    });
    return b;
  }

  // ---- token ----

  /**
   * @param {boolean} rejected
   */
  function askToken(rejected) {
    $("token-error").textContent = rejected && state.token
      ? "That token was not accepted. Check it and try again."
      : "";
    field("token-input").value = "";
    $("token-overlay").classList.add("open");
    setStatus("off", "token needed");
    setTimeout(function () {
      $("token-input").focus();
    }, 0);
  }
  $("token-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const token = field("token-input").value.trim();
    if (!token) {
      $("token-error").textContent = "Paste a token first.";
      return;
    }
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

  /**
   * @param {string} kind
   * @param {string} text
   */
  function setStatus(kind, text) {
    $("status-dot").className = "dot " + kind;
    $("status-text").textContent = text;
  }

  function connect() {
    clearTimeout(state.retryTimer);
    if (state.stream) state.stream.abort();
    const ctrl = new AbortController();
    state.stream = ctrl;
    $("signout").classList.toggle("hidden", !state.token);
    setStatus("wait", "connecting…");
    readStream(ctrl).then(function (outcome) {
      if (ctrl.signal.aborted || outcome === "token") return;
      const wait = state.retryMs;
      state.retryMs = Math.min(state.retryMs * 2, 15000);
      setStatus(
        "off",
        (outcome === "ended" ? "server closed the stream" : "disconnected") +
          " — retrying in " + Math.round(wait / 1000) + " s",
      );
      state.retryTimer = setTimeout(connect, wait);
    });
  }

  /**
   * @param {AbortController} ctrl
   * @returns {Promise<string>}
   */
  function readStream(ctrl) {
    return fetch("/v1/events", { headers: authHeaders(), signal: ctrl.signal, cache: "no-store" })
      .then(function (res) {
        if (res.status === 401) {
          askToken(true);
          return "token";
        }
        if (!res.ok || !res.body) return "error";
        $("token-overlay").classList.remove("open");
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        /** @returns {Promise<string>} */
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) return "ended";
            buffer += chunk.value;
            let cut;
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, cut);
              buffer = buffer.slice(cut + 2);
              onBlock(block);
            }
            return pump();
          });
        }
        return pump();
      })
      .catch(function () {
        return "error";
      });
  }

  /**
   * @param {string} block
   */
  function onBlock(block) {
    let event = "message";
    /** @type {string[]} */
    const data = [];
    block.split("\n").forEach(function (line) {
      if (line.indexOf("event:") === 0) event = line.slice(6).trim();
      else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
    });
    if (data.length === 0) return;
    let message;
    try {
      message = JSON.parse(data.join("\n"));
    } catch (_) {
      return;
    }
    state.lastData = Date.now();
    if (event === "hello") onHello(message);
    else if (event === "snapshot") onSnapshot(message);
  }

  /**
   * @param {{ interval_ms?: number, history?: Sample[], started_at: number, version: unknown }} message
   */
  function onHello(message) {
    state.retryMs = 1000;
    state.intervalMs = message.interval_ms || 1000;
    state.history = Array.isArray(message.history) ? message.history : [];
    state.lastAt = state.history.length ? state.history[state.history.length - 1].at : 0;
    state.startedAt = message.started_at;
    state.version = String(message.version);
    startSchedules();
    startFlows();
    showSqsEndpoint();
  }

  /**
   * Names the SQS endpoint in the header: every answer of the SQS API (here an unsigned request,
   * which it refuses) says where this server's queue URLs start; with the SQS API off, `POST /`
   * is tegami's own and says nothing, and the header shows nothing.
   */
  function showSqsEndpoint() {
    fetch("/", {
      method: "POST",
      headers: {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "AmazonSQS.ListQueues",
      },
      body: "{}",
      cache: "no-store",
    }).then(function (res) {
      const prefix = res.headers.get("x-tegami-queue-url-prefix");
      $("sqs-prefix").textContent = prefix || "";
      $("sqs-endpoint").classList.toggle("hidden", !prefix);
    }, function () {});
  }

  /**
   * @param {{ at: number, queues: QueueView[], connections: number }} message
   */
  function onSnapshot(message) {
    if (message.at > state.lastAt) {
      /** @type {Record<string, Rates>} */
      const moved = {};
      message.queues.forEach(function (q) {
        if (q.rates.enqueued || q.rates.acked || q.rates.failed) moved[q.name] = q.rates;
      });
      state.history.push({ at: message.at, queues: moved });
      state.lastAt = message.at;
      const oldest = message.at - CHART_POINTS * state.intervalMs;
      while (state.history.length && state.history[0].at <= oldest) state.history.shift();
    }
    state.queues = message.queues.slice().sort(byName);
    state.connections = message.connections;
    setStatus("on", "live");
    render();
  }

  // A stream that goes quiet (a dropped network path sends no error) is replaced.
  setInterval(function () {
    if (
      state.lastData && state.stream && !state.stream.signal.aborted &&
      Date.now() - state.lastData > 10000
    ) {
      state.lastData = 0;
      connect();
    }
    if (state.startedAt) {
      $("server-meta").textContent = "tegami " + state.version + " · up " +
        age(Date.now() - state.startedAt);
    }
  }, 1000);

  // ---- rendering ----

  function render() {
    renderTiles();
    renderQueues();
    syncSelects();
    renderChart();
    renderDeadActions();
    followJobs(DEAD);
    followJobs(BROWSE);
    followJob();
    followFlow();
    renderHeldGroups();
  }

  /**
   * @param {string} queue
   * @param {number} seconds
   */
  function sumRates(queue, seconds) {
    const series = series_(queue, seconds);
    const out = { e: 0, a: 0, f: 0 };
    series.forEach(function (p) {
      out.e += p.e;
      out.a += p.a;
      out.f += p.f;
    });
    const n = Math.max(1, series.length);
    return { e: out.e / n, a: out.a / n, f: out.f / n };
  }

  function renderTiles() {
    const t = { blocked: 0, pending: 0, delayed: 0, leased: 0, dead: 0, consumers: 0, oldest: 0 };
    state.queues.forEach(function (q) {
      t.blocked += q.counts.blocked || 0;
      t.pending += q.counts.pending;
      t.delayed += q.counts.delayed;
      t.leased += q.counts.leased;
      t.dead += q.counts.dead;
      t.consumers += q.consumers;
      t.oldest = Math.max(t.oldest, q.oldest_pending_age_ms);
    });
    $("t-pending").textContent = int(t.pending);
    $("t-pending-sub").textContent = t.pending
      ? "oldest waiting " + age(t.oldest)
      : "nothing waiting";
    $("t-blocked").textContent = int(t.blocked);
    $("t-leased").textContent = int(t.leased);
    $("t-delayed").textContent = int(t.delayed);
    $("t-dead").textContent = int(t.dead);
    $("t-dead-tile").classList.toggle("bad", t.dead > 0);
    $("t-consumers").textContent = int(t.consumers);
    $("t-connections").textContent = "on " + state.connections + " connection" +
      (state.connections === 1 ? "" : "s");
    const r = sumRates("", 10);
    $("t-enq").textContent = rate(r.e);
    $("t-ack").textContent = rate(r.a);
    $("t-fail").textContent = "failed " + rate(r.f) + "/s";
  }

  const rows = new Map();

  /**
   * @param {string} name
   * @returns {Row}
   */
  function makeRow(name) {
    /** @type {Record<string, HTMLElement>} */
    const cells = {};
    const badge = h("span", { class: "badge paused hidden", text: "paused" });
    const settings = h("div", { class: "qsettings hidden" });
    const limits = makeLimits(name);
    const tr = h(
      "tr",
      { "data-queue": name },
      h(
        "td",
        { class: "l" },
        h("span", { class: "qname", text: name }),
        badge,
        limits.held,
        limits.groups,
        settings,
        limits.line,
      ),
    );
    STATES.forEach(function (st) {
      cells[st] = h("td", { class: "c-" + st });
      tr.appendChild(cells[st]);
    });
    cells.age = h("td", { class: "c-age" });
    cells.consumers = h("td", { class: "c-consumers" });
    const spark = h("td", { class: "l c-spark" });
    const pause = h("button", { type: "button", class: "pause" });
    pause.addEventListener("click", function () {
      togglePause(name, pause);
    });
    const dead = h("button", {
      type: "button",
      class: "dead-open",
      text: "Dead letters",
      onclick: function () {
        openJobs(DEAD, name);
      },
    });
    tr.appendChild(cells.age);
    tr.appendChild(cells.consumers);
    tr.appendChild(spark);
    const jobs = h("button", {
      type: "button",
      class: "browse-open",
      text: "Jobs",
      onclick: function () {
        openJobs(BROWSE, name);
      },
    });
    const groups = h("button", {
      type: "button",
      class: "groups-open",
      text: "Groups",
      title: "The queue's ordering groups: the held ones, their settings",
      onclick: function () {
        openGroups(name);
      },
    });
    tr.appendChild(h("td", { class: "actions" }, pause, jobs, groups, dead));
    return {
      tr: tr,
      cells: cells,
      badge: badge,
      spark: spark,
      pause: pause,
      settings: settings,
      settingsKey: "",
      limits: limits,
    };
  }

  /**
   * The parts of a queue row that show its limits at work (the settings chips show the limits
   * themselves): a badge naming the limit that holds its consumers back right now, and a line
   * with its leased jobs against its concurrency and its ordering groups, and a badge counting
   * the groups whose own limits hold their jobs back (it opens the queue's groups).
   * @param {string} name
   * @returns {{ line: HTMLElement, held: HTMLElement, groups: HTMLButtonElement }}
   */
  function makeLimits(name) {
    return {
      held: h("span", { class: "badge held hidden" }),
      groups: h("button", {
        type: "button",
        class: "badge held groups-held hidden",
        onclick: function () {
          openGroups(name);
        },
      }),
      line: h("span", { class: "limits hidden" }),
    };
  }

  /**
   * How the limits line counts the groups at their concurrency: "at limit N" when they share the
   * queue's `group_limit` as far as the held groups listed show, else "at their limit".
   * @param {GroupCounts} groups
   * @param {QueueSettings | undefined} settings
   */
  function fullText(groups, settings) {
    const groupLimit = settings ? settings.group_limit : 1;
    const top = groups.top_held || [];
    const own = top.some(function (g) {
      return g.held === "concurrency" && g.limit !== groupLimit;
    });
    return int(groups.full) + (own ? " at their limit" : " at limit " + int(groupLimit));
  }

  /**
   * Why a held group's jobs wait, in the words the page uses: "slots" (as many leased as its
   * concurrency) or "rate" (no token yet).
   * @param {string | null} held
   */
  function heldWord(held) {
    return held === "concurrency" ? "slots" : held === "rate" ? "rate" : "—";
  }

  /**
   * @param {{ line: HTMLElement, held: HTMLElement, groups: HTMLButtonElement }} parts
   * @param {QueueView} q
   */
  function updateLimits(parts, q) {
    const held = q.held ?? null;
    parts.held.classList.toggle("hidden", held === null);
    parts.held.textContent = held === null ? "" : "held by " + held;
    parts.held.title = held === "rate"
      ? "Consumers have credit but the queue's rate allows no delivery until its next token"
      : held === "concurrency"
      ? "Consumers have credit but the queue has as many jobs leased as its concurrency allows"
      : "";
    /** @type {string[]} */
    const bits = [];
    const settings = q.settings;
    if (settings && settings.concurrency !== null) {
      bits.push("leased " + int(q.counts.leased) + " of " + int(settings.concurrency));
    }
    const groups = q.groups;
    if (groups && (groups.waiting > 0 || groups.leased > 0)) {
      const rateHeld = groups.rate_held || 0;
      bits.push(
        "groups: " + int(groups.waiting) + " waiting · " + int(groups.leased) + " leased" +
          (groups.full > 0 ? " · " + fullText(groups, settings) : "") +
          (rateHeld > 0 ? " · " + int(rateHeld) + " held by their rate" : ""),
      );
    }
    parts.line.classList.toggle("hidden", bits.length === 0);
    parts.line.textContent = bits.join(" · ");
    const heldGroups = groups ? groups.full + (groups.rate_held || 0) : 0;
    parts.groups.classList.toggle("hidden", heldGroups === 0);
    parts.groups.textContent = heldGroups === 0
      ? ""
      : int(heldGroups) + (heldGroups === 1 ? " group held" : " groups held");
    parts.groups.title = groups && heldGroups > 0 ? heldTitle(groups.top_held || []) : "";
  }

  /**
   * The tooltip of a queue's held-groups badge: the groups held most, and why.
   * @param {HeldGroup[]} top
   */
  function heldTitle(top) {
    const lines = top.map(function (g) {
      return "held because of group " + g.group + " (" + heldWord(g.held) + "): " +
        int(g.pending) + " pending, " + int(g.leased) + " of " + int(g.limit) + " leased";
    });
    return ["Groups whose own limits hold their jobs back; click to see them"].concat(lines)
      .join("\n");
  }

  /**
   * @param {Row} row
   * @param {QueueView} q
   */
  function updateRow(row, q) {
    STATES.forEach(function (st) {
      const n = q.counts[st] || 0;
      const cell = row.cells[st];
      cell.textContent = int(n);
      cell.className = "c-" + st + (n === 0 ? " zero" : st === "dead" ? " hot" : "");
    });
    const pending = q.counts.pending > 0;
    row.cells.age.textContent = pending ? age(q.oldest_pending_age_ms) : "—";
    row.cells.age.className = "c-age" +
      (!pending ? " zero" : q.oldest_pending_age_ms > 60000 ? " warn" : "");
    row.cells.consumers.textContent = int(q.consumers);
    row.cells.consumers.className = "c-consumers" + (q.consumers === 0 ? " zero" : "");
    row.badge.classList.toggle("hidden", !q.paused);
    row.pause.textContent = q.paused ? "Resume" : "Pause";
    row.spark.replaceChildren(sparkline(q.name));
    renderQueueSettings(row, q.settings);
    updateLimits(row.limits, q);
  }

  // ---- queue settings ----

  /**
   * The settings of a queue that differ from the defaults, as [label, value, meaning] for its row.
   * @param {QueueSettings} settings
   * @returns {[string, string, string][]}
   */
  function settingsChips(settings) {
    /** @type {[string, string, string][]} */
    const out = [];
    if (settings.concurrency !== null) {
      out.push(["concurrency", int(settings.concurrency), "most jobs leased at once"]);
    }
    if (settings.rate !== null) out.push(["rate", settings.rate, "most deliveries per interval"]);
    if (settings.group_limit !== 1) {
      out.push(["group limit", int(settings.group_limit), "most jobs of one group leased at once"]);
    }
    if (settings.max_attempts !== null) {
      out.push(["attempts", int(settings.max_attempts), "default max_attempts of new jobs"]);
    }
    if (settings.lease_ms !== null) {
      out.push(["lease", span(settings.lease_ms), "default lease of new jobs"]);
    }
    if (settings.backoff !== null) {
      out.push([
        "backoff",
        span(settings.backoff.base_ms) + " – " + span(settings.backoff.max_ms),
        "default retry backoff of new jobs",
      ]);
    }
    if (settings.retain_done_ms !== null) {
      out.push(["keep done", span(settings.retain_done_ms), "how long done jobs are kept"]);
    }
    if (settings.retain_dead_ms !== null) {
      out.push(["keep dead", span(settings.retain_dead_ms), "how long dead jobs are kept"]);
    }
    if (settings.retain_pending_ms !== null) {
      out.push([
        "keep pending",
        span(settings.retain_pending_ms),
        "how long a job waits for a consumer before it is deleted",
      ]);
    }
    if (settings.dead_letter_queue !== null) {
      out.push([
        "dead letters to",
        settings.dead_letter_queue,
        "where a job that runs out of attempts goes",
      ]);
    }
    const sqs = settings.sqs_attributes || {};
    Object.keys(sqs).forEach(function (name) {
      out.push([
        "SQS " + name,
        clip(sqs[name], 40),
        "a queue attribute of the SQS API: " + sqs[name],
      ]);
    });
    const tags = settings.tags || {};
    const tagText = Object.keys(tags).map(function (key) {
      return tags[key] === "" ? key : key + "=" + tags[key];
    }).join(", ");
    if (tagText !== "") out.push(["tags", clip(tagText, 40), "the queue's tags: " + tagText]);
    return out;
  }

  /**
   * Shows a queue's settings under its name (nothing when all are the defaults); rebuilt only
   * when they change.
   * @param {Row} row
   * @param {QueueSettings | undefined} settings
   */
  function renderQueueSettings(row, settings) {
    const chips = settings === undefined ? [] : settingsChips(settings);
    const key = JSON.stringify(chips);
    if (key === row.settingsKey) return;
    row.settingsKey = key;
    row.settings.replaceChildren(...chips.map(function (chip) {
      return h(
        "span",
        { class: "setting", title: chip[2], "data-setting": chip[0] },
        h("span", { class: "k", text: chip[0] }),
        h("span", { class: "v", text: chip[1] }),
      );
    }));
    row.settings.classList.toggle("hidden", chips.length === 0);
  }

  function renderQueues() {
    const body = $("queues-body");
    const seen = new Set();
    /** @type {HTMLElement | null} */
    let before = null;
    state.queues.forEach(function (q) {
      seen.add(q.name);
      let row = rows.get(q.name);
      if (!row) {
        row = makeRow(q.name);
        rows.set(q.name, row);
      }
      updateRow(row, q);
      const want = before ? before.nextSibling : body.firstChild;
      if (want !== row.tr) body.insertBefore(row.tr, want);
      before = row.tr;
    });
    rows.forEach(function (row, name) {
      if (!seen.has(name)) {
        row.tr.remove();
        rows.delete(name);
      }
    });
    $("queues-empty").classList.toggle("hidden", state.queues.length > 0);
    $("queues-table").classList.toggle("hidden", state.queues.length === 0);
    const paused = state.queues.filter(function (q) {
      return q.paused;
    }).length;
    $("queues-caption").textContent = state.queues.length + " queue" +
      (state.queues.length === 1 ? "" : "s") +
      (paused ? " · " + paused + " paused" : "");
  }

  /**
   * @param {string} name
   * @param {HTMLButtonElement} button
   */
  function togglePause(name, button) {
    const q = findQueue(name);
    const paused = q ? q.paused : false;
    button.disabled = true;
    api("POST", queuePath(name) + (paused ? "/resume" : "/pause"), {}).then(function () {
      if (q) q.paused = !paused;
      renderQueues();
      toast((paused ? "Resumed " : "Paused ") + name);
    }).catch(fail).then(function () {
      button.disabled = false;
    });
  }

  function syncSelects() {
    const names = state.queues.map(function (q) {
      return q.name;
    });
    const key = names.join("\u0000");
    if (key === state.queueNames) return;
    state.queueNames = key;
    [
      ["chart-queue", "All queues"],
      ["dead-queue", "Choose a queue…"],
      ["browse-queue", "Choose a queue…"],
      ["groups-queue", "Choose a queue…"],
    ].forEach(function (pair) {
      const select = field(pair[0]);
      const current = select.value;
      const options = [h("option", { value: "", text: pair[1] })];
      names.forEach(function (n) {
        options.push(h("option", { value: n, text: n }));
      });
      if (current && names.indexOf(current) < 0) {
        options.push(h("option", { value: current, text: current }));
      }
      select.replaceChildren(...options);
      select.value = current;
    });
  }

  // ---- throughput ----

  /**
   * The last count intervals ending at the newest sample, zero where nothing moved.
   * @param {string} queue
   * @param {number} count
   * @returns {Point[]}
   */
  function series_(queue, count) {
    const interval = state.intervalMs;
    let slots = state.slots;
    if (!slots || state.slotsAt !== state.lastAt || state.slotsLength !== state.history.length) {
      /** @type {Map<number, Sample>} */
      const fresh = new Map();
      slots = state.slots = fresh;
      state.history.forEach(function (sample) {
        const key = Math.round(sample.at / interval);
        const seen = fresh.get(key);
        if (!seen) {
          fresh.set(key, sample);
          return;
        }
        const merged = { at: sample.at, queues: Object.assign({}, seen.queues) };
        Object.keys(sample.queues).forEach(function (name) {
          const a = merged.queues[name] || { enqueued: 0, acked: 0, failed: 0 };
          const b = sample.queues[name];
          merged.queues[name] = {
            enqueued: a.enqueued + b.enqueued,
            acked: a.acked + b.acked,
            failed: a.failed + b.failed,
          };
        });
        fresh.set(key, merged);
      });
      state.slotsAt = state.lastAt;
      state.slotsLength = state.history.length;
    }
    const end = Math.round((state.lastAt || Date.now()) / interval);
    const out = [];
    for (let i = count - 1; i >= 0; i--) {
      const sample = slots.get(end - i);
      const p = { at: (end - i) * interval, e: 0, a: 0, f: 0 };
      if (sample) {
        Object.keys(sample.queues).forEach(function (name) {
          if (queue && name !== queue) return;
          const r = sample.queues[name];
          p.e += r.enqueued;
          p.a += r.acked;
          p.f += r.failed;
        });
      }
      out.push(p);
    }
    return out;
  }

  /**
   * @param {number} raw
   */
  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const steps = [1, 2, 2.5, 5, 10];
    for (let i = 0; i < steps.length; i++) if (steps[i] * p >= raw) return steps[i] * p;
    return 10 * p;
  }
  /**
   * @param {number} v
   */
  function tick(v) {
    return v >= 1000 ? (v / 1000) + "k" : String(v);
  }
  /**
   * @param {Point[]} points
   * @param {"e" | "a" | "f"} key
   * @param {(i: number) => number} x
   * @param {(v: number) => number} y
   */
  function linePath(points, key, x, y) {
    let d = "";
    points.forEach(function (p, i) {
      d += (i ? "L" : "M") + x(i).toFixed(1) + " " + y(p[key]).toFixed(1);
    });
    return d;
  }

  function renderChart() {
    const box = $("chart");
    const width = Math.max(320, box.clientWidth);
    const height = box.clientHeight || 230;
    const m = { l: 46, r: 10, t: 10, b: 24 };
    const points = series_(state.chartQueue, CHART_POINTS);
    let peak = 0;
    points.forEach(function (p) {
      peak = Math.max(peak, p.e, p.a, p.f);
    });
    const step = Math.max(1, niceStep(Math.max(peak, 1) / 4));
    const top = Math.max(step * Math.ceil(peak / step), step * 4);
    const plotW = width - m.l - m.r;
    const plotH = height - m.t - m.b;
    /** @param {number} i */
    function x(i) {
      return m.l + (i / (points.length - 1)) * plotW;
    }
    /** @param {number} v */
    function y(v) {
      return m.t + (1 - v / top) * plotH;
    }
    const root = s("svg", {
      width: width,
      height: height,
      viewBox: "0 0 " + width + " " + height,
      role: "img",
      "aria-label": "Jobs enqueued, acked and failed per second over the last five minutes",
    });
    for (let v = 0; v <= top + 1e-9; v += step) {
      const yy = Math.round(y(v)) + 0.5;
      root.appendChild(
        s("line", { x1: m.l, x2: width - m.r, y1: yy, y2: yy, class: v === 0 ? "axis" : "grid" }),
      );
      root.appendChild(s("text", { x: m.l - 8, y: yy + 4, "text-anchor": "end" }, tick(v)));
    }
    const perMinute = 60000 / state.intervalMs;
    for (let min = 5; min >= 0; min--) {
      const i = points.length - 1 - min * perMinute;
      if (i < 0) continue;
      const anchor = min === 0 ? "end" : i === 0 ? "start" : "middle";
      root.appendChild(
        s(
          "text",
          { x: x(i), y: height - 6, "text-anchor": anchor },
          min === 0 ? "now" : "−" + min + " min",
        ),
      );
    }
    if (peak === 0) {
      root.appendChild(
        s("text", {
          x: m.l + plotW / 2,
          y: m.t + plotH / 2,
          "text-anchor": "middle",
          class: "quiet",
        }, "No jobs moved in the last five minutes"),
      );
    } else {
      root.appendChild(
        s("path", {
          class: "area",
          d: linePath(points, "e", x, y) + "L" + x(points.length - 1) + " " + y(0) + "L" + x(0) +
            " " + y(0) + "Z",
        }),
      );
      root.appendChild(s("path", { class: "line fail", d: linePath(points, "f", x, y) }));
      root.appendChild(s("path", { class: "line ack", d: linePath(points, "a", x, y) }));
      root.appendChild(s("path", { class: "line enq", d: linePath(points, "e", x, y) }));
    }
    const hover = s("g", {});
    root.appendChild(hover);
    const pad = s("rect", { x: m.l, y: m.t, width: plotW, height: plotH, fill: "transparent" });
    root.appendChild(pad);
    /** @type {Chart} */
    const chart = {
      points: points,
      x: x,
      y: y,
      hover: hover,
      m: m,
      plotW: plotW,
      plotH: plotH,
      at: state.chart && state.chart.at,
    };
    state.chart = chart;
    pad.addEventListener("mousemove", function (event) {
      const rect = root.getBoundingClientRect();
      const i = Math.round((event.clientX - rect.left - m.l) / plotW * (points.length - 1));
      chart.at = points[Math.max(0, Math.min(points.length - 1, i))].at;
      drawHover();
    });
    pad.addEventListener("mouseleave", function () {
      chart.at = null;
      drawHover();
    });
    box.replaceChildren(root);
    drawHover();
  }

  function drawHover() {
    const c = state.chart;
    if (!c) return;
    c.hover.replaceChildren();
    let index = -1;
    if (c.at) { for (let i = 0; i < c.points.length; i++) if (c.points[i].at === c.at) index = i; }
    if (index < 0) {
      const r = sumRates(state.chartQueue, 10);
      $("l-enq").textContent = rate(r.e) + "/s";
      $("l-ack").textContent = rate(r.a) + "/s";
      $("l-fail").textContent = rate(r.f) + "/s";
      $("chart-caption").textContent = "jobs per second, last 5 minutes" +
        (state.chartQueue ? "" : ", all queues");
      return;
    }
    const p = c.points[index];
    const px = c.x(index);
    c.hover.appendChild(
      s("line", { x1: px, x2: px, y1: c.m.t, y2: c.m.t + c.plotH, class: "cross" }),
    );
    /** @type {["e" | "a" | "f", string][]} */
    const lines = [["e", "var(--enq)"], ["a", "var(--ack)"], ["f", "var(--fail)"]];
    lines.forEach(function (k) {
      c.hover.appendChild(
        s("circle", {
          cx: px,
          cy: c.y(p[k[0]]),
          r: 3,
          fill: "#fff",
          stroke: k[1],
          "stroke-width": 2,
        }),
      );
    });
    $("l-enq").textContent = int(p.e) + "/s";
    $("l-ack").textContent = int(p.a) + "/s";
    $("l-fail").textContent = int(p.f) + "/s";
    $("chart-caption").textContent = "at " + clock(p.at);
  }

  /**
   * @param {string} queue
   */
  function sparkline(queue) {
    const points = series_(queue, 60);
    const w = 120, hgt = 26;
    let peak = 0;
    points.forEach(function (p) {
      peak = Math.max(peak, p.e, p.a);
    });
    const root = s("svg", {
      width: w,
      height: hgt,
      viewBox: "0 0 " + w + " " + hgt,
      class: "spark",
      "aria-hidden": "true",
    });
    if (peak === 0) {
      root.appendChild(s("line", { x1: 0, x2: w, y1: hgt - 1.5, y2: hgt - 1.5, class: "flat" }));
      return root;
    }
    /** @param {number} i */
    function x(i) {
      return (i / (points.length - 1)) * w;
    }
    /** @param {number} v */
    function y(v) {
      return 2 + (1 - v / peak) * (hgt - 4);
    }
    root.appendChild(s("path", { class: "enq", d: linePath(points, "e", x, y) }));
    root.appendChild(s("path", { class: "ack", d: linePath(points, "a", x, y) }));
    return root;
  }

  $("chart-queue").addEventListener("change", function () {
    state.chartQueue = field("chart-queue").value;
    renderChart();
  });
  globalThis.addEventListener("resize", function () {
    renderChart();
  });

  // ---- job lists: the dead letters and the job browser ----

  /**
   * A column a job list may show: its heading (for the state the list shows) and a job's cell.
   * @typedef {{ head: (st: string) => string, left?: boolean, cell: (job: Job, now: number) => HTMLElement }} Column
   */
  /** @type {Record<string, Column>} */
  const COLUMNS = {
    job: { head: () => "Job", left: true, cell: jobLink },
    priority: {
      head: () => "Priority",
      cell: (job) => h("td", { class: "priority", text: job.priority }),
    },
    tries: {
      head: () => "Tries",
      cell: (job) => h("td", { class: "tries", text: job.attempts + " / " + job.max_attempts }),
    },
    enqueued: { head: () => "Enqueued", cell: (job, now) => timeCell(job.created_at, now) },
    when: { head: whenTitle, cell: (job, now) => timeCell(whenOf(job), now, "when") },
    key: {
      head: () => "Key",
      left: true,
      cell: (job) =>
        h("td", {
          class: "l key mono" + (job.key === null ? " muted" : ""),
          text: job.key === null ? "—" : clip(job.key, 30),
        }),
    },
    payload: {
      head: () => "Payload",
      left: true,
      cell: (job) => h("td", { class: "l payload mono", text: clip(compact(job.payload), 60) }),
    },
    error: {
      head: () => "Last error",
      left: true,
      cell: (job) =>
        h("td", {
          class: job.last_error === null ? "l muted" : "l err",
          text: job.last_error === null ? "—" : clip(job.last_error, 80),
          title: job.last_error,
        }),
    },
    actions: {
      head: () => "",
      cell: (job) => h("td", { class: "actions" }, jobActions(job, false)),
    },
  };

  /**
   * One paged list of a queue's jobs, shown in `#<id>-view` (rows in `#<id>-body`, the count in
   * `#<id>-count`, the next page behind `button.<id>-more`): which jobs it asks for, how many the
   * queue holds of them, and what it shows.
   * @typedef {{
   *   id: string, list: JobList, page: number, state: () => string, path: () => string,
   *   asked: () => string, denied: string, hint: string, none: () => string, columns: string[],
   *   controls: () => void
   * }} JobListKind
   */

  /** @type {JobListKind} */
  const DEAD = {
    id: "dead",
    list: state.dead,
    page: DEAD_PAGE,
    state: () => "dead",
    path: () => queuePath(state.dead.queue) + "/dead?limit=" + DEAD_PAGE,
    asked: () => state.dead.queue,
    denied: "This token may not read dead letters: that takes the admin scope.",
    hint: "Choose a queue to browse its dead letters.",
    none: () => "No dead letters in " + state.dead.queue + ".",
    controls: renderDeadActions,
    columns: ["job", "tries", "error", "when", "payload", "actions"],
  };

  /** @type {JobListKind} */
  const BROWSE = {
    id: "browse",
    list: state.browse,
    page: BROWSE_PAGE,
    state: () => state.browse.state,
    path: () =>
      queuePath(state.browse.queue) + "/jobs?state=" + state.browse.state + "&order=" +
      state.browse.order + "&limit=" + BROWSE_PAGE,
    asked: () => [state.browse.queue, state.browse.state, state.browse.order].join("\n"),
    denied: "This token may not browse jobs: that takes the admin scope.",
    hint: "Choose a queue to browse its jobs, one state at a time.",
    none: () => "No " + state.browse.state + " jobs in " + state.browse.queue + ".",
    controls: renderBrowseControls,
    columns: ["job", "priority", "tries", "enqueued", "when", "key", "payload", "error", "actions"],
  };

  /**
   * How many jobs the queue holds of those the list shows.
   * @param {JobListKind} kind
   * @param {QueueView} q
   */
  function countOf(kind, q) {
    return q.counts[/** @type {keyof Counts} */ (kind.state())] || 0;
  }

  /**
   * Loads the first page (or, with `more`, the next one) of the list on queue `name`. An answer to
   * a question the user no longer asks (another queue, state or order) is dropped.
   * @param {JobListKind} kind
   * @param {string} name
   * @param {boolean} more
   * @returns {Promise<void>}
   */
  function loadJobs(kind, name, more) {
    const list = kind.list;
    if (!more) {
      list.queue = name;
      list.jobs = [];
      list.next = null;
      list.error = "";
      list.seen = null;
    }
    if (!name) {
      renderJobs(kind);
      return Promise.resolve();
    }
    list.loading = true;
    if (!more) renderJobs(kind);
    const asked = kind.asked();
    const after = more && list.next !== null ? "&after=" + list.next : "";
    return api("GET", kind.path() + after).then(function (data) {
      if (kind.asked() !== asked) return;
      list.jobs = more ? list.jobs.concat(data.jobs) : data.jobs;
      list.next = data.next_after;
      const q = findQueue(name);
      list.seen = q ? countOf(kind, q) : null;
    }, function (error) {
      if (kind.asked() !== asked) return;
      list.error = error.status === 403 ? kind.denied : error.message;
    }).then(function () {
      if (kind.asked() !== asked) return;
      list.loading = false;
      renderJobs(kind);
    });
  }

  /**
   * Reloads the first page when the queue's count of the list's jobs changed (unless the user
   * paged on, or a button in the list is armed).
   * @param {JobListKind} kind
   */
  function followJobs(kind) {
    const list = kind.list;
    const q = list.queue ? findQueue(list.queue) : null;
    if (!q || list.loading || list.error || list.seen === null) return;
    if ($(kind.id + "-view").querySelector(".armed")) return;
    if (countOf(kind, q) !== list.seen && list.jobs.length <= kind.page) {
      loadJobs(kind, list.queue, false);
    }
  }

  /**
   * @param {JobListKind} kind
   */
  function renderJobs(kind) {
    const list = kind.list;
    const view = $(kind.id + "-view");
    kind.controls();
    if (!list.queue) {
      view.replaceChildren(h("div", { class: "empty", text: kind.hint }));
      return;
    }
    if (list.error) {
      view.replaceChildren(h("div", { class: "empty error", text: list.error }));
      return;
    }
    if (list.jobs.length === 0) {
      const text = list.loading ? "Loading…" : kind.none();
      view.replaceChildren(h("div", { class: "empty", text: text }));
      return;
    }
    const now = Date.now();
    const columns = kind.columns.map(function (name) {
      return COLUMNS[name];
    });
    const body = h("tbody", { id: kind.id + "-body" });
    list.jobs.forEach(function (job) {
      body.appendChild(h(
        "tr",
        { "data-id": job.id },
        columns.map(function (column) {
          return column.cell(job, now);
        }),
      ));
    });
    const heads = columns.map(function (column) {
      return h("th", { class: column.left ? "l" : null, text: column.head(kind.state()) || null });
    });
    const table = h("table", null, h("thead", null, h("tr", null, heads)), body);
    const q = findQueue(list.queue);
    const total = q ? countOf(kind, q) : list.jobs.length;
    const foot = h(
      "div",
      { class: "foot" },
      h("span", {
        id: kind.id + "-count",
        text: "Showing " + int(list.jobs.length) + " of " + int(Math.max(total, list.jobs.length)),
      }),
    );
    if (list.next !== null) {
      foot.appendChild(h("span", { class: "spacer" }));
      foot.appendChild(actionButton("Load more", kind.id + "-more", function () {
        return loadJobs(kind, list.queue, true);
      }));
    }
    view.replaceChildren(h("div", { class: "scroll" }, table), foot);
  }

  /**
   * The cell that opens a job in the job view, and a flow's job's flow on the flow page.
   * @param {Job} job
   */
  function jobLink(job) {
    return h(
      "td",
      { class: "l" },
      h("button", {
        type: "button",
        class: "link open-job",
        text: "#" + job.id,
        title: "Show this job",
        onclick: function () {
          showJob(job.id, true);
        },
      }),
      job.flow ? flowLink(job.flow, job.id, "link row-flow", "flow " + job.flow.id) : null,
    );
  }

  /**
   * A button that opens the flow a job is a node of, the job's node marked.
   * @param {{ id: number, ref: string }} flow
   * @param {number} jobId
   * @param {string} cls
   * @param {string} label
   */
  function flowLink(flow, jobId, cls, label) {
    return h("button", {
      type: "button",
      class: cls,
      text: label,
      title: "Open flow #" + flow.id + ', where this job is node "' + flow.ref + '"',
      "data-flow": flow.id,
      onclick: function () {
        openFlow(flow.id, jobId);
      },
    });
  }

  /**
   * A cell (or a `dd`) saying how long ago or ahead `at` is, with the full time on hover.
   * @param {number | null} at
   * @param {number} now
   * @param {string} [cls]
   * @param {"td" | "dd"} [tag]
   */
  function timeCell(at, now, cls, tag) {
    return h(tag || "td", {
      class: cls,
      text: at === null ? "—" : relative(at, now),
      title: at === null ? null : new Date(at).toLocaleString(),
    });
  }

  /**
   * The heading of the column that says when something happens to jobs in this state.
   * @param {string} st
   */
  function whenTitle(st) {
    /** @type {Record<string, string>} */
    const titles = {
      blocked: "Waiting since",
      pending: "Available",
      delayed: "Runs",
      leased: "Lease ends",
      done: "Finished",
      dead: "Died",
      cancelled: "Cancelled",
    };
    return titles[st] || "When";
  }

  /**
   * When, for this job's state: available since, runs at, lease ends, finished.
   * @param {Job} job
   * @returns {number | null}
   */
  function whenOf(job) {
    if (job.state === "blocked") return job.created_at;
    if (job.state === "leased") return job.lease_expires_at;
    if (isQueued(job)) return job.run_at;
    return job.finished_at;
  }

  /**
   * Whether the job is still in its queue (waiting, for its time or its prerequisites, or with a
   * consumer): it can be cancelled.
   * @param {Job} job
   */
  function isQueued(job) {
    return job.state === "blocked" || job.state === "pending" || job.state === "delayed" ||
      job.state === "leased";
  }

  /**
   * The buttons for what may be done to a job in its state: run a delayed one now, requeue a dead
   * one, cancel one still queued, delete a finished one. `inView`: the job view's wording and
   * classes (job-run, job-requeue, job-cancel, job-delete) rather than a list row's.
   * @param {Job} job
   * @param {boolean} inView
   * @returns {HTMLElement[]}
   */
  function jobActions(job, inView) {
    const actions = [];
    if (job.state === "delayed") {
      actions.push(actionButton("Run now", inView ? "primary job-run" : "run-now", function () {
        return runJob(job);
      }));
    }
    if (job.state === "dead") {
      actions.push(actionButton("Requeue", inView ? "primary job-requeue" : "requeue", function () {
        return requeueJob(job);
      }));
    }
    if (isQueued(job)) {
      actions.push(confirmButton(
        inView ? "Cancel job" : "Cancel",
        inView ? "Cancel it?" : "Cancel?",
        inView ? "danger job-cancel" : "cancel danger",
        function () {
          return deleteJob(job);
        },
      ));
    } else {
      actions.push(confirmButton(
        "Delete",
        inView ? "Delete it?" : "Delete?",
        inView ? "danger job-delete" : "delete danger",
        function () {
          return deleteJob(job);
        },
      ));
    }
    return actions;
  }

  /**
   * Drops a job from the dead letters once it is requeued or deleted.
   * @param {Job} job
   */
  function dropDead(job) {
    const d = state.dead;
    if (d.queue !== job.queue) return;
    d.jobs = d.jobs.filter(function (j) {
      return j.id !== job.id;
    });
    if (d.seen !== null) d.seen--;
    renderJobs(DEAD);
  }

  /**
   * Brings the views that show a job up to date after an action on it.
   * @param {Job} job
   * @returns {Promise<void> | undefined}
   */
  function afterAction(job) {
    if (state.browse.queue === job.queue) loadJobs(BROWSE, job.queue, false);
    if (state.jobId === job.id) return showJob(job.id, false);
  }

  /**
   * @param {Job} job
   */
  function requeueJob(job) {
    return api("POST", queuePath(job.queue) + "/dead/requeue", { ids: [job.id] }).then(
      function (out) {
        if (out.requeued === 0) toast("Job #" + job.id + " was no longer dead", "error");
        else toast("Requeued job #" + job.id + " to " + job.queue);
        dropDead(job);
        return afterAction(job);
      },
    );
  }

  /**
   * @param {Job} job
   */
  function deleteJob(job) {
    return api("DELETE", "/v1/jobs/" + job.id).then(function (out) {
      toast((out.removed ? "Deleted job #" : "Cancelled job #") + job.id);
      dropDead(job);
      return afterAction(job);
    });
  }

  /**
   * Makes a delayed job pending now.
   * @param {Job} job
   */
  function runJob(job) {
    return api("POST", "/v1/jobs/" + job.id + "/run", {}).then(function () {
      toast("Job #" + job.id + " runs now");
      return afterAction(job);
    });
  }

  /**
   * Shows the list on queue `name`, and scrolls to it.
   * @param {JobListKind} kind
   * @param {string} name
   */
  function openJobs(kind, name) {
    field(kind.id + "-queue").value = name;
    if (kind === BROWSE) openOnJobs(name);
    loadJobs(kind, name, false);
    $(kind.id + "-card").scrollIntoView({ behavior: "smooth", block: "start" });
  }
  /**
   * The state the job browser opens a queue on: the first, in the tabs' order, that holds jobs
   * ("pending" when none does), so a queue of finished jobs does not open on an empty tab.
   * @param {Counts | null} counts
   * @returns {string}
   */
  function firstStateWithJobs(counts) {
    if (counts) {
      for (let i = 0; i < STATES.length; i++) {
        if (counts[STATES[i]] > 0) return STATES[i];
      }
    }
    return "pending";
  }

  /**
   * Points the job browser's state tab at the first state of queue `name` that holds jobs.
   * @param {string} name
   */
  function openOnJobs(name) {
    const q = name ? findQueue(name) : null;
    state.browse.state = firstStateWithJobs(q ? q.counts : null);
  }
  [DEAD, BROWSE].forEach(function (kind) {
    $(kind.id + "-queue").addEventListener("change", function () {
      if (kind === BROWSE) openOnJobs(field(kind.id + "-queue").value);
      loadJobs(kind, field(kind.id + "-queue").value, false);
    });
    $(kind.id + "-refresh").addEventListener("click", function () {
      loadJobs(kind, kind.list.queue, false);
    });
  });

  // ---- dead letters ----

  /** The "Requeue all" button, kept while its count and queue stand (and while it is armed). */
  function renderDeadActions() {
    const d = state.dead;
    const q = d.queue ? findQueue(d.queue) : null;
    const slot = $("dead-all-slot");
    const count = q ? q.counts.dead : 0;
    if (count === 0 || d.error) {
      slot.replaceChildren();
      return;
    }
    const existing = slot.firstElementChild;
    if (
      existing && existing.getAttribute("data-count") === String(count) &&
      existing.getAttribute("data-queue") === d.queue
    ) return;
    if (existing && existing.classList.contains("armed")) return;
    const name = d.queue;
    const button = confirmButton(
      "Requeue all " + int(count),
      "Requeue all " + int(count) + "?",
      "requeue-all",
      function () {
        return api("POST", queuePath(name) + "/dead/requeue", {}).then(function (out) {
          toast(
            "Requeued " + int(out.requeued) + " dead job" + (out.requeued === 1 ? "" : "s") +
              " of " + name,
          );
          return loadJobs(DEAD, name, false);
        });
      },
    );
    button.id = "dead-requeue-all";
    button.setAttribute("data-count", String(count));
    button.setAttribute("data-queue", name);
    slot.replaceChildren(button);
  }

  // ---- the job browser ----

  $("browse-order").addEventListener("change", function () {
    state.browse.order = field("browse-order").value;
    loadJobs(BROWSE, state.browse.queue, false);
  });
  $("browse-states").querySelectorAll("button.tab").forEach(function (tab) {
    tab.addEventListener("click", function () {
      state.browse.state = tab.getAttribute("data-state") || "pending";
      loadJobs(BROWSE, state.browse.queue, false);
    });
  });

  /** The order and the state tabs, as the browser stands. */
  function renderBrowseControls() {
    renderBulkControls();
    const b = state.browse;
    field("browse-order").value = b.order;
    $("browse-states").querySelectorAll("button.tab").forEach(function (tab) {
      const on = tab.getAttribute("data-state") === b.state;
      tab.classList.toggle("on", on);
      tab.setAttribute("aria-selected", on ? "true" : "false");
    });
  }

  // ---- act on all matching: a bulk action over the browser's queue and state ----

  /**
   * The actions a job in each state can take, as the server's bulk actions define them.
   * @type {Record<string, string[]>}
   */
  const BULK_ACTIONS_BY_STATE = {
    blocked: ["cancel", "delete"],
    pending: ["cancel", "delete"],
    delayed: ["cancel", "delete"],
    leased: ["cancel", "delete"],
    done: ["replay", "delete"],
    dead: ["requeue", "replay", "delete"],
    cancelled: ["replay", "delete"],
  };
  /** How often a running bulk action is asked for its progress, ms. */
  const BULK_POLL_MS = 500;
  /** @type {{ id: number, stop: boolean } | null} the task this page follows */
  let bulkFollowed = null;

  /** The action choices for the browser's state; clears a count that no longer stands. */
  function renderBulkControls() {
    const actions = BULK_ACTIONS_BY_STATE[
      /** @type {keyof typeof BULK_ACTIONS_BY_STATE} */ (state.browse.state)
    ] || [];
    const select = /** @type {HTMLSelectElement} */ ($("bulk-action"));
    const key = state.browse.queue + "\n" + state.browse.state;
    if (select.getAttribute("data-for") === key) return;
    select.setAttribute("data-for", key);
    const chosen = select.value;
    select.replaceChildren(...actions.map(function (action) {
      return h("option", { value: action, text: action[0].toUpperCase() + action.slice(1) });
    }));
    if (actions.indexOf(chosen) >= 0) select.value = chosen;
    $("bulk-scope").textContent = state.browse.queue
      ? "The " + state.browse.state + " jobs of " + state.browse.queue
      : "Choose a queue first";
    if (bulkFollowed === null) $("bulk-status").replaceChildren();
  }

  /** The filter the form describes, over the browser's state. */
  function bulkFilter() {
    /** @type {Record<string, unknown>} */
    const filter = { states: [state.browse.state] };
    const text = [
      ["error_contains", "bulk-error"],
      ["group", "bulk-group"],
      ["key_prefix", "bulk-key"],
    ];
    text.forEach(function (pair) {
      const value = field(pair[1]).value;
      if (value !== "") filter[pair[0]] = value;
    });
    const path = field("bulk-path").value.trim();
    if (path !== "") {
      const raw = field("bulk-value").value;
      let equals = /** @type {unknown} */ (raw);
      try {
        equals = JSON.parse(raw);
      } catch (_) {
        // Not JSON: the text itself.
      }
      filter.payload = { path: path, equals: equals };
    }
    return filter;
  }

  /**
   * Follows task `id` until it ends, showing its progress and a Stop button while it runs.
   * @param {number} id
   * @returns {Promise<any>} the ended task
   */
  function followBulk(id) {
    bulkFollowed = { id: id, stop: false };
    const followed = bulkFollowed;
    return new Promise(function (resolve, reject) {
      function poll() {
        api("GET", "/v1/bulk/" + id).then(function (task) {
          if (task.state !== "running") {
            if (bulkFollowed === followed) bulkFollowed = null;
            resolve(task);
            return;
          }
          if (!task.dry_run) {
            const stop = actionButton("Stop", "", function () {
              return api("DELETE", "/v1/bulk/" + id);
            });
            stop.id = "bulk-stop";
            $("bulk-status").replaceChildren(
              h("span", { id: "bulk-progress", text: bulkProgress(task) }),
              stop,
            );
          }
          setTimeout(poll, BULK_POLL_MS);
        }, reject);
      }
      poll();
    });
  }

  /**
   * @param {any} task
   * @returns {string}
   */
  function bulkProgress(task) {
    return task.action + ": " + int(task.examined) + " examined, " + int(task.matched) +
      " matched, " + int(task.done) + " done";
  }

  $("bulk-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const queue = state.browse.queue;
    if (!queue || bulkFollowed !== null || field("bulk-action").value === "") return;
    const action = field("bulk-action").value;
    const filter = bulkFilter();
    const status = $("bulk-status");
    status.replaceChildren(h("span", { text: "Counting…" }));
    runFrom(/** @type {HTMLButtonElement} */ ($("bulk-count")), function () {
      return api("POST", queuePath(queue) + "/bulk", {
        filter: filter,
        action: action,
        dry_run: true,
      }).then(function (task) {
        return followBulk(task.id);
      }).then(function (counted) {
        const n = counted.matched;
        const verb = action[0].toUpperCase() + action.slice(1);
        const line = h("span", {
          id: "bulk-matched",
          "data-count": String(n),
          text: int(n) + " job" + (n === 1 ? "" : "s") + " match (of " +
            int(counted.examined) + " examined).",
        });
        if (n === 0) {
          status.replaceChildren(line);
          return;
        }
        const go = confirmButton(
          verb + " all " + int(n) + " matching",
          verb + " " + int(n) + " jobs? Click again",
          "danger",
          function () {
            return api("POST", queuePath(queue) + "/bulk", { filter: filter, action: action })
              .then(function (task) {
                return followBulk(task.id);
              }).then(function (ended) {
                status.replaceChildren(
                  h("span", {
                    id: "bulk-progress",
                    text: bulkProgress(ended) + " (" + ended.state + ")",
                  }),
                );
                toast(verb + ": " + int(ended.done) + " of " + queue + " (" + ended.state + ")");
                return loadJobs(BROWSE, queue, false);
              });
          },
        );
        go.id = "bulk-go";
        status.replaceChildren(line, go);
      }).catch(function (error) {
        status.replaceChildren();
        throw error;
      });
    });
  });

  // ---- job lookup ----

  $("job-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const text = field("job-id").value.trim().replace(/^#/, "");
    if (!/^[1-9][0-9]{0,15}$/.test(text)) {
      $("job-view").replaceChildren(
        h("div", { class: "empty error", text: "A job id is a whole number, like 42." }),
      );
      return;
    }
    showJob(Number(text), false);
  });

  /**
   * @param {number} id
   * @param {boolean} reveal
   * @returns {Promise<void>}
   */
  function showJob(id, reveal) {
    state.jobId = id;
    field("job-id").value = String(id);
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
      const text = error.status === 404
        ? "No job #" + id + ": it never existed, or it was removed after it finished."
        : error.message;
      $("job-view").replaceChildren(
        h("div", { class: "empty" + (error.status === 404 ? "" : " error"), text: text }),
      );
    }).then(function () {
      state.jobLoading = false;
    });
  }

  /** Keeps a job that is still moving up to date. */
  function followJob() {
    const job = state.job;
    if (!job || state.jobLoading || state.jobId !== job.id) return;
    if ($("job-view").querySelector(".armed")) return; // never redraw under an armed button
    if (isQueued(job)) showJob(job.id, false);
  }

  /**
   * @param {string} title
   * @param {unknown} value
   * @param {string} [cls]
   */
  function block(title, value, cls) {
    return [
      h("h3", { text: title }),
      h("pre", {
        class: cls || "",
        text: typeof value === "string" && cls ? value : JSON.stringify(value, null, 2),
      }),
    ];
  }

  /**
   * @param {Job} job
   */
  function renderJob(job) {
    const now = Date.now();
    const actions = h("div", { class: "actions" }, jobActions(job, true));
    const head = h(
      "div",
      { class: "job-head" },
      h("span", { class: "title", text: "Job #" + job.id }),
      h("span", { class: "badge s-" + job.state, text: job.state }),
      h("span", { class: "muted" }, "in ", h("span", { class: "qname", text: job.queue })),
      actions,
    );
    const backoff = job.backoff
      ? span(job.backoff.base_ms) + " doubling to " + span(job.backoff.max_ms)
      : "server default";
    const kv = h(
      "dl",
      { class: "kv" },
      h("dt", { text: "Attempts" }),
      h("dd", { text: job.attempts + " of " + job.max_attempts }),
      h("dt", { text: "Priority" }),
      h("dd", { text: job.priority }),
      h("dt", { text: "Key" }),
      h("dd", {
        class: job.key === null ? "muted" : "mono",
        text: job.key === null ? "none" : job.key,
      }),
      h("dt", { text: "Lease length" }),
      h("dd", { text: job.lease_ms === null ? "server default" : span(job.lease_ms) }),
      h("dt", { text: "Backoff" }),
      h("dd", { text: backoff }),
      h("dt", { text: "Enqueued" }),
      timeCell(job.created_at, now, undefined, "dd"),
    );
    if (job.flow) {
      kv.appendChild(h("dt", { text: "Flow" }));
      kv.appendChild(
        h(
          "dd",
          null,
          flowLink(job.flow, job.id, "link job-flow", "#" + job.flow.id),
          h("span", { class: "muted", text: " as " }),
          h("span", { class: "mono", text: job.flow.ref }),
        ),
      );
    }
    /** @type {HTMLElement[]} */
    let parts = [head, kv, h("h3", { text: "Timeline" }), timeline(job, now)];
    parts = parts.concat(block("Payload", job.payload));
    if (job.progress !== null) parts = parts.concat(progressBlock(job, now));
    if (job.checkpoint !== null) parts = parts.concat(block("Checkpoint", job.checkpoint));
    if (job.result !== null) parts = parts.concat(block("Result", job.result));
    if (job.last_error !== null) parts = parts.concat(block("Last error", job.last_error, "err"));
    $("job-view").replaceChildren.apply($("job-view"), parts);
  }

  /**
   * The fraction of the work a progress report says is done, or null when it says no such thing:
   * a number from 0 to 1, `{percent}` (0–100), or `{done, of}` / `{current, total}`.
   * @param {unknown} value
   * @returns {number | null}
   */
  function progressFraction(value) {
    /** @param {unknown} n */
    const num = (n) => typeof n === "number" && Number.isFinite(n);
    /** @param {number} f */
    const within = (f) => f >= 0 && f <= 1 ? f : null;
    if (num(value)) return within(/** @type {number} */ (value));
    if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
    const o = /** @type {Record<string, unknown>} */ (value);
    if (num(o.percent)) return within(/** @type {number} */ (o.percent) / 100);
    const done = num(o.done) ? o.done : o.current;
    const of = num(o.of) ? o.of : o.total;
    if (num(done) && num(of) && /** @type {number} */ (of) > 0) {
      return within(/** @type {number} */ (done) / /** @type {number} */ (of));
    }
    return null;
  }

  /**
   * The job's last progress report: a bar when it reads as a fraction, the value as JSON, and
   * when it came. Redrawn with the job while it is followed (every second while it is queued).
   * @param {Job} job
   * @param {number} now
   */
  function progressBlock(job, now) {
    const fraction = progressFraction(job.progress);
    const when = job.progress_at === null ? "" : "reported " + relative(job.progress_at, now);
    /** @type {HTMLElement[]} */
    const parts = [h("h3", { text: "Progress" })];
    const line = h("div", { class: "progress-line" });
    if (fraction !== null) {
      line.appendChild(
        h("progress", { class: "job-progress", max: "1", value: String(fraction) }),
      );
      line.appendChild(
        h("span", { class: "progress-pct", text: Math.round(fraction * 100) + "%" }),
      );
    }
    line.appendChild(h("span", { class: "muted progress-at", text: when }));
    parts.push(line);
    parts.push(h("pre", { class: "progress-value", text: JSON.stringify(job.progress, null, 2) }));
    return parts;
  }

  /**
   * @param {Job} job
   * @param {number} now
   */
  function timeline(job, now) {
    const items = [{ at: job.created_at, what: "Enqueued", cls: "start" }];
    if (job.run_at !== job.created_at) {
      const ahead = job.run_at > now;
      items.push({
        at: job.run_at,
        what: ahead
          ? (job.attempts > 0 ? "Retry due" : "Due to run")
          : (job.attempts > 0 ? "Available again" : "Became available"),
        cls: ahead ? "future" : "",
      });
    }
    if (job.state === "leased" && job.lease_expires_at !== null) {
      items.push({
        at: job.lease_expires_at,
        what: "Lease of attempt " + job.attempts + " ends unless acked or extended",
        cls: "future",
      });
    }
    if (job.finished_at !== null) {
      /** @type {Record<string, string[]>} */
      const ends = {
        done: ["Done (acked)", "done"],
        dead: ["Dead-lettered", "dead"],
        cancelled: ["Cancelled", ""],
      };
      const end = ends[job.state] || ["Finished", ""];
      items.push({ at: job.finished_at, what: end[0], cls: end[1] });
    } else {
      /** @type {Record<string, string>} */
      const now_ = {
        blocked: "Waiting for its prerequisites",
        pending: "Waiting for a consumer",
        delayed: "Waiting for its time",
        leased: "With a consumer (attempt " + job.attempts + ")",
      };
      items.push({ at: now, what: "Now: " + (now_[job.state] || job.state), cls: "now" });
    }
    items.sort(function (a, b) {
      return a.at - b.at;
    });
    const list = h("ol", { class: "timeline" });
    items.forEach(function (item) {
      const offset = item.at - job.created_at;
      const note = item.cls === "start"
        ? relative(item.at, now)
        : (offset >= 0 ? "+" + span(offset) : "−" + span(-offset)) + " after enqueue";
      list.appendChild(
        h(
          "li",
          { class: item.cls },
          h("div", { class: "what", text: item.what }),
          h("div", { class: "when", text: clock(item.at) + " · " + note }),
        ),
      );
    });
    return list;
  }

  // ---- flows: jobs that wait for jobs ----

  /**
   * @typedef {{ ref: string, on_failure: string }} FlowEdge
   * @typedef {{ ref: string, id: number, queue: string, state: string, depends_on: FlowEdge[] }} FlowNode
   * @typedef {{
   *   id: number, key: string | null, created_at: number, finished_at: number | null,
   *   counts: Record<string, number>, nodes?: FlowNode[]
   * }} FlowView
   * @typedef {{ from: number, to: number, rule: string }} LaidEdge
   * @typedef {{
   *   depth: Int32Array, slot: Float64Array, drawn: number[], edges: LaidEdge[], columns: number,
   *   rows: number, perColumn: number[], edgeCount: number, hiddenNodes: number,
   *   hiddenEdges: number
   * }} FlowLayout
   *   where each node (by its index in the flow's nodes) is drawn: `depth` is its column (the
   *   longest path to it from a node without prerequisites), `slot` its row (NaN when it is not
   *   drawn); `perColumn` counts the nodes of each column, drawn or not
   */

  /** How many flows the list shows at a time. */
  const FLOW_PAGE = 25;
  /** The most nodes a flow page draws; the rest are counted, not drawn, so a large flow stays quick. */
  const FLOW_MAX_DRAWN = 400;
  /** The most edges a flow page draws. */
  const FLOW_MAX_EDGES = 1500;
  /** How often an open flow that has not finished is read again, ms (large flows less often). */
  const FLOW_FOLLOW_MS = 2000;
  const FLOW_FOLLOW_LARGE_MS = 10000;
  /** How often the list of flows is read again while the page is open, ms. */
  const FLOWS_REFRESH_MS = 5000;
  /** The geometry of a drawn flow: node boxes, the column and row pitch, the margins. */
  const FLOW_NODE_W = 172;
  const FLOW_NODE_H = 38;
  const FLOW_COL = 236;
  const FLOW_ROW = 50;
  const FLOW_TOP = 34;
  const FLOW_LEFT = 16;

  /**
   * @type {{
   *   list: FlowView[], next: number | null, loading: boolean, error: string, started: boolean,
   *   timer: ReturnType<typeof setInterval> | undefined
   * }}
   */
  const flows = {
    list: [],
    next: null,
    loading: false,
    error: "",
    started: false,
    timer: undefined,
  };

  /**
   * @type {{
   *   id: number | null, flow: FlowView | null, focus: number | null, loading: boolean,
   *   loadedAt: number, shape: string, nodes: Map<number, Element>
   * }}
   */
  const flowPage = {
    id: null,
    flow: null,
    focus: null,
    loading: false,
    loadedAt: 0,
    shape: "",
    nodes: new Map(),
  };

  /**
   * Lays a flow out in columns by depth: a node's column is the longest path to it from a node
   * without prerequisites, so every edge points right. Within a column, nodes sit in the mean row
   * of their prerequisites (one barycentre pass, left to right), which keeps most edges short.
   * Only the first `maxNodes` nodes by depth (then creation order) are placed, whole columns
   * first, so every placed node's prerequisites are placed too; at most `maxEdges` edges among
   * them are kept. The work is linear in the flow's nodes and edges, whatever is drawn.
   * @param {FlowNode[]} nodes
   * @param {number} maxNodes
   * @param {number} maxEdges
   * @returns {FlowLayout}
   */
  function flowLayout(nodes, maxNodes, maxEdges) {
    const n = nodes.length;
    /** @type {Map<string, number>} */
    const index = new Map();
    for (let i = 0; i < n; i++) index.set(nodes[i].ref, i);
    /** @type {{ from: number, rule: string }[][]} */
    const prereqs = [];
    /** @type {number[][]} */
    const dependents = [];
    const waiting = new Int32Array(n);
    let edgeCount = 0;
    for (let i = 0; i < n; i++) {
      prereqs.push([]);
      dependents.push([]);
    }
    for (let i = 0; i < n; i++) {
      const edges = nodes[i].depends_on;
      for (let e = 0; e < edges.length; e++) {
        const from = index.get(edges[e].ref);
        if (from === undefined || from === i) continue;
        prereqs[i].push({ from: from, rule: edges[e].on_failure });
        dependents[from].push(i);
        waiting[i]++;
        edgeCount++;
      }
    }
    // Longest paths by Kahn's algorithm. A stored flow has no cycle; were one read, its nodes
    // would go one column past the deepest rather than hang the page.
    const depth = new Int32Array(n);
    /** @type {number[]} */
    const order = [];
    for (let i = 0; i < n; i++) if (waiting[i] === 0) order.push(i);
    for (let k = 0; k < order.length; k++) {
      const at = order[k];
      const next = dependents[at];
      for (let j = 0; j < next.length; j++) {
        const to = next[j];
        if (depth[to] < depth[at] + 1) depth[to] = depth[at] + 1;
        if (--waiting[to] === 0) order.push(to);
      }
    }
    let deepest = 0;
    for (let i = 0; i < n; i++) if (waiting[i] === 0 && depth[i] > deepest) deepest = depth[i];
    if (order.length < n) {
      deepest++;
      for (let i = 0; i < n; i++) if (waiting[i] > 0) depth[i] = deepest;
    }
    const columnCount = n === 0 ? 0 : deepest + 1;
    /** @type {number[][]} */
    const byColumn = [];
    for (let c = 0; c < columnCount; c++) byColumn.push([]);
    for (let i = 0; i < n; i++) byColumn[depth[i]].push(i);
    const perColumn = byColumn.map(function (column) {
      return column.length;
    });
    /** @type {number[][]} */
    const columns = [];
    let room = Math.max(0, maxNodes);
    for (let c = 0; c < columnCount && room > 0; c++) {
      const take = byColumn[c].slice(0, room);
      room -= take.length;
      columns.push(take);
    }
    let rows = 0;
    columns.forEach(function (column) {
      rows = Math.max(rows, column.length);
    });
    const slot = new Float64Array(n).fill(NaN);
    columns.forEach(function (column) {
      const key = new Map();
      column.forEach(function (i, k) {
        const from = prereqs[i];
        let sum = 0;
        let count = 0;
        for (let j = 0; j < from.length; j++) {
          const y = slot[from[j].from];
          if (y === y) { // not NaN: placed
            sum += y;
            count++;
          }
        }
        key.set(i, count > 0 ? sum / count : k);
      });
      column.sort(function (a, b) {
        return key.get(a) - key.get(b) || a - b;
      });
      // Whole rows, the same in every column, so the gaps between rows run clear across.
      const offset = Math.floor((rows - column.length) / 2);
      column.forEach(function (i, k) {
        slot[i] = offset + k;
      });
    });
    /** @type {number[]} */
    const drawn = [];
    /** @type {LaidEdge[]} */
    const edges = [];
    columns.forEach(function (column) {
      column.forEach(function (i) {
        drawn.push(i);
        const from = prereqs[i];
        for (let j = 0; j < from.length; j++) {
          if (slot[from[j].from] !== slot[from[j].from]) continue;
          if (edges.length < maxEdges) {
            edges.push({ from: from[j].from, to: i, rule: from[j].rule });
          }
        }
      });
    });
    return {
      depth: depth,
      slot: slot,
      drawn: drawn,
      edges: edges,
      columns: columns.length,
      rows: rows,
      perColumn: perColumn,
      edgeCount: edgeCount,
      hiddenNodes: n - drawn.length,
      hiddenEdges: edgeCount - edges.length,
    };
  }

  /**
   * A flow's nodes by state as a thin bar, one segment per state, in lifecycle order.
   * @param {Record<string, number>} counts
   */
  function stateBar(counts) {
    const w = 120, hgt = 8;
    let total = 0;
    STATES.forEach(function (st) {
      total += counts[st] || 0;
    });
    const root = s("svg", {
      width: w,
      height: hgt,
      viewBox: "0 0 " + w + " " + hgt,
      class: "statebar",
      "aria-hidden": "true",
    });
    let x = 0;
    STATES.forEach(function (st) {
      const n = counts[st] || 0;
      if (n === 0 || total === 0) return;
      const width = (n / total) * w;
      root.appendChild(s("rect", { x: x, y: 0, width: width, height: hgt, class: "s-" + st }));
      x += width;
    });
    return root;
  }

  /**
   * The states a flow's nodes are in, as "3 done · 2 blocked", in lifecycle order.
   * @param {Record<string, number>} counts
   */
  function countsText(counts) {
    /** @type {string[]} */
    const parts = [];
    STATES.forEach(function (st) {
      if (counts[st]) parts.push(int(counts[st]) + " " + st);
    });
    return parts.join(" · ") || "no nodes";
  }

  /**
   * @param {Record<string, number>} counts
   */
  function nodeTotal(counts) {
    let total = 0;
    STATES.forEach(function (st) {
      total += counts[st] || 0;
    });
    return total;
  }

  // The list of flows.

  /** Reads the flows once the stream is up, and every few seconds while only one page shows. */
  function startFlows() {
    if (!flows.started) {
      flows.started = true;
      loadFlows(false);
      const wanted = flowFromHash();
      if (wanted !== null && flowPage.id === null) showFlow(wanted, null, false);
    }
    if (flows.timer === undefined) {
      flows.timer = setInterval(function () {
        if (!document.hidden && flows.list.length <= FLOW_PAGE) loadFlows(false);
      }, FLOWS_REFRESH_MS);
    }
  }

  /**
   * Loads the first page of flows (or, with `more`, the next one).
   * @param {boolean} more
   * @returns {Promise<void>}
   */
  function loadFlows(more) {
    if (flows.loading) return Promise.resolve();
    flows.loading = true;
    const after = more && flows.next !== null ? "&after=" + flows.next : "";
    return api("GET", "/v1/flows?limit=" + FLOW_PAGE + after).then(function (data) {
      /** @type {FlowView[]} */
      const page = data.flows;
      flows.list = more ? flows.list.concat(page) : page;
      flows.next = data.next_after !== undefined
        ? data.next_after
        : page.length === FLOW_PAGE
        ? page[page.length - 1].id
        : null;
      flows.error = "";
    }, function (error) {
      flows.error = error.status === 403
        ? "This token may not read flows: " + error.message
        : error.message;
    }).then(function () {
      flows.loading = false;
      renderFlows();
    });
  }

  function renderFlows() {
    const view = $("flows-view");
    const now = Date.now();
    $("flows-caption").textContent = flows.error
      ? ""
      : int(flows.list.length) + (flows.next === null ? "" : "+") + " flow" +
        (flows.list.length === 1 ? "" : "s");
    if (flows.error) {
      view.replaceChildren(h("div", { class: "empty error", text: flows.error }));
      return;
    }
    if (flows.list.length === 0) {
      view.replaceChildren(
        h(
          "div",
          { class: "empty" },
          "No flows. Create one with ",
          h("code", { text: "POST /v1/flows" }),
          ": jobs that wait for other jobs, drawn here as a graph.",
        ),
      );
      return;
    }
    const body = h("tbody", { id: "flows-body" });
    flows.list.forEach(function (f) {
      body.appendChild(h(
        "tr",
        { "data-flow": f.id, class: flowPage.id === f.id ? "on" : null },
        h(
          "td",
          { class: "l" },
          h("button", {
            type: "button",
            class: "link open-flow",
            text: "#" + f.id,
            title: "Open this flow",
            onclick: function () {
              openFlow(f.id, null);
            },
          }),
        ),
        h("td", {
          class: "l key mono" + (f.key === null ? " muted" : ""),
          text: f.key === null ? "—" : clip(f.key, 40),
          title: f.key,
        }),
        timeCell(f.created_at, now, "c-created"),
        h("td", { class: "c-nodes", text: int(nodeTotal(f.counts)) }),
        h(
          "td",
          { class: "l c-states", title: countsText(f.counts) },
          stateBar(f.counts),
          h("span", { class: "states-text", text: countsText(f.counts) }),
        ),
        f.finished_at === null
          ? h("td", { class: "c-finished" }, h("span", { class: "badge running", text: "running" }))
          : timeCell(f.finished_at, now, "c-finished"),
      ));
    });
    const table = h(
      "table",
      null,
      tableHead([
        ["Flow", true],
        ["Key", true],
        "Created",
        "Nodes",
        ["By state", true],
        "Finished",
      ]),
      body,
    );
    const foot = h(
      "div",
      { class: "foot" },
      h("span", { id: "flows-count", text: "Showing " + int(flows.list.length) }),
    );
    if (flows.next !== null) {
      foot.appendChild(h("span", { class: "spacer" }));
      foot.appendChild(actionButton("Load more", "flows-more", function () {
        return loadFlows(true);
      }));
    }
    view.replaceChildren(h("div", { class: "scroll" }, table), foot);
  }

  $("flows-refresh").addEventListener("click", function () {
    loadFlows(false);
  });
  $("flow-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const text = field("flow-id").value.trim().replace(/^#/, "");
    if (!/^[1-9][0-9]{0,15}$/.test(text)) {
      toast("A flow id is a whole number, like 7.", "error");
      return;
    }
    openFlow(Number(text), null);
  });

  // The flow page: `#flow/ID` in the address, so it can be linked to and survives a reload.

  /** The flow the address names, or null. */
  function flowFromHash() {
    const m = /^#flow\/([1-9][0-9]{0,15})$/.exec(location.hash);
    return m ? Number(m[1]) : null;
  }

  /**
   * Opens flow `id` on the flow page (and in the address), with job `focus`'s node marked.
   * @param {number} id
   * @param {number | null} focus
   */
  function openFlow(id, focus) {
    if (location.hash !== "#flow/" + id) history.pushState(null, "", "#flow/" + id);
    showFlow(id, focus, true);
  }

  globalThis.addEventListener("popstate", function () {
    const id = flowFromHash();
    if (id === null) closeFlow();
    else if (id !== flowPage.id) showFlow(id, null, true);
  });

  /**
   * @param {number} id
   * @param {number | null} focus
   * @param {boolean} reveal
   * @returns {Promise<void>}
   */
  function showFlow(id, focus, reveal) {
    const fresh = flowPage.id !== id;
    flowPage.id = id;
    flowPage.focus = focus;
    field("flow-id").value = String(id);
    $("flow-card").classList.remove("hidden");
    $("flow-title").textContent = "Flow #" + id;
    if (fresh) {
      flowPage.flow = null;
      flowPage.shape = "";
      $("flow-caption").textContent = "";
      $("flow-actions").replaceChildren();
      $("flow-view").replaceChildren(
        h("div", { class: "empty", text: "Loading flow #" + id + "…" }),
      );
    }
    markListedFlow();
    if (reveal) $("flow-card").scrollIntoView({ behavior: "smooth", block: "start" });
    return loadFlow();
  }

  function closeFlow() {
    flowPage.id = null;
    flowPage.flow = null;
    flowPage.shape = "";
    flowPage.nodes = new Map();
    $("flow-card").classList.add("hidden");
    $("flow-view").replaceChildren();
    markListedFlow();
  }

  $("flow-close").addEventListener("click", function () {
    if (location.hash !== "") history.pushState(null, "", location.pathname + location.search);
    closeFlow();
  });
  $("flow-refresh").addEventListener("click", function () {
    loadFlow();
  });

  function markListedFlow() {
    document.querySelectorAll("#flows-body tr").forEach(function (tr) {
      tr.classList.toggle("on", tr.getAttribute("data-flow") === String(flowPage.id));
    });
  }

  /**
   * Reads the open flow and shows it; an answer for a flow no longer open is dropped.
   * @returns {Promise<void>}
   */
  function loadFlow() {
    const id = flowPage.id;
    if (id === null) return Promise.resolve();
    flowPage.loading = true;
    return api("GET", "/v1/flows/" + id).then(function (/** @type {FlowView} */ flow) {
      if (flowPage.id !== id) return;
      flowPage.flow = flow;
      renderFlow(flow);
    }, function (error) {
      if (flowPage.id !== id) return;
      flowPage.flow = null;
      flowPage.shape = "";
      $("flow-caption").textContent = "";
      $("flow-actions").replaceChildren();
      const text = error.status === 404
        ? "No flow #" + id + ": it never existed, or its jobs were all removed."
        : error.status === 403
        ? "This token may not read flows: " + error.message
        : error.message;
      $("flow-view").replaceChildren(
        h("div", { class: "empty" + (error.status === 404 ? "" : " error"), text: text }),
      );
    }).then(function () {
      flowPage.loading = false;
      flowPage.loadedAt = Date.now();
    });
  }

  /**
   * Keeps an open flow that has not finished up to date while the tab is visible (never under an
   * armed button).
   */
  function followFlow() {
    const flow = flowPage.flow;
    if (
      !flow || document.hidden || flowPage.loading || flowPage.id !== flow.id ||
      flow.finished_at !== null
    ) return;
    if ($("flow-card").querySelector(".armed")) return;
    const nodes = flow.nodes ? flow.nodes.length : 0;
    const every = nodes > FLOW_MAX_DRAWN ? FLOW_FOLLOW_LARGE_MS : FLOW_FOLLOW_MS;
    if (Date.now() - flowPage.loadedAt >= every) loadFlow();
  }

  /**
   * Shows a flow: its counts by state, what is not drawn, and its graph. The graph is laid out
   * again only when its nodes or edges changed; otherwise only the nodes' states are updated.
   * @param {FlowView} flow
   */
  function renderFlow(flow) {
    const now = Date.now();
    const nodes = flow.nodes || [];
    let edgeTotal = 0;
    nodes.forEach(function (node) {
      edgeTotal += node.depends_on.length;
    });
    $("flow-caption").replaceChildren(
      flow.key === null ? "no key" : h("span", { class: "mono", text: flow.key }),
      " · created " + relative(flow.created_at, now) + " · ",
      flow.finished_at === null
        ? h("span", { class: "badge running flow-status", text: "running" })
        : h("span", {
          class: "flow-status",
          text: "finished " + relative(flow.finished_at, now),
          title: new Date(flow.finished_at).toLocaleString(),
        }),
    );
    const open = STATES.filter(function (st) {
      return (flow.counts[st] || 0) > 0 && ["done", "dead", "cancelled"].indexOf(st) < 0;
    }).length > 0;
    const actions = $("flow-actions");
    if (!open) actions.replaceChildren();
    else if (!actions.querySelector(".flow-cancel")) {
      const id = flow.id;
      actions.replaceChildren(
        confirmButton("Cancel flow", "Cancel every job of it?", "danger flow-cancel", function () {
          return api("DELETE", "/v1/flows/" + id).then(function (out) {
            toast(
              "Cancelled " + int(out.cancelled) + " job" + (out.cancelled === 1 ? "" : "s") +
                " of flow #" + id,
            );
            if (state.browse.queue) loadJobs(BROWSE, state.browse.queue, false);
            loadFlows(false);
            return loadFlow();
          });
        }),
      );
    }

    const shape = nodes.length + "/" + edgeTotal + "/" +
      (nodes.length ? nodes[nodes.length - 1].id : 0) + "/" + flowPage.focus;
    if (shape !== flowPage.shape || !$("flow-view").querySelector(".flow-graph")) {
      flowPage.shape = shape;
      drawFlow(flow, nodes);
    } else {
      nodes.forEach(function (node) {
        const el = flowPage.nodes.get(node.id);
        if (el) setNodeState(el, node);
      });
    }
    $("flow-counts").replaceChildren(...flowCounts(flow.counts));
  }

  /**
   * The flow's nodes by state, as badges, with the total.
   * @param {Record<string, number>} counts
   */
  function flowCounts(counts) {
    /** @type {(HTMLElement | string)[]} */
    const out = [h("span", { class: "flow-total", text: int(nodeTotal(counts)) + " nodes" })];
    STATES.forEach(function (st) {
      const n = counts[st] || 0;
      if (n === 0) return;
      out.push(h("span", { class: "badge s-" + st, "data-state": st, text: st + " " + int(n) }));
    });
    return out;
  }

  /**
   * @param {Element} el
   * @param {FlowNode} node
   */
  function setNodeState(el, node) {
    const cls = "fnode s-" + node.state + (node.id === flowPage.focus ? " focus" : "");
    if (el.getAttribute("class") !== cls) el.setAttribute("class", cls);
    const title = el.querySelector("title");
    if (title) title.textContent = nodeTitle(node);
  }

  /**
   * @param {FlowNode} node
   */
  function nodeTitle(node) {
    return node.ref + " — job #" + node.id + " in " + node.queue + ", " + node.state +
      (node.depends_on.length
        ? "; waits for " + node.depends_on.map(function (e) {
          return e.ref + (e.on_failure === "cancel" ? "" : " (on failure: " + e.on_failure + ")");
        }).slice(0, 8).join(", ") + (node.depends_on.length > 8 ? ", …" : "")
        : "") +
      ". Click to show the job.";
  }

  /**
   * Draws the flow's graph anew (see {@linkcode flowLayout}) with a note of what is not drawn.
   * @param {FlowView} flow
   * @param {FlowNode[]} nodes
   */
  function drawFlow(flow, nodes) {
    const layout = flowLayout(nodes, FLOW_MAX_DRAWN, FLOW_MAX_EDGES);
    const width = FLOW_LEFT * 2 + Math.max(1, layout.columns) * FLOW_COL - (FLOW_COL - FLOW_NODE_W);
    const height = FLOW_TOP + Math.max(1, layout.rows) * FLOW_ROW + 8;
    const root = s("svg", {
      width: width,
      height: height,
      viewBox: "0 0 " + width + " " + height,
      class: "flow-svg",
      role: "img",
      "aria-label": "Flow #" + flow.id + ": " + layout.drawn.length + " of " + nodes.length +
        " nodes drawn in columns by depth, edges from each prerequisite to its dependents",
    });
    /** @param {number} i */
    const x = (i) => FLOW_LEFT + layout.depth[i] * FLOW_COL;
    /** @param {number} i */
    const y = (i) => FLOW_TOP + layout.slot[i] * FLOW_ROW;
    for (let c = 0; c < layout.columns; c++) {
      const count = layout.perColumn[c];
      root.appendChild(s(
        "text",
        { x: FLOW_LEFT + c * FLOW_COL, y: 16, class: "flow-col" },
        "depth " + c + " · " + int(count) + (count === 1 ? " node" : " nodes"),
      ));
    }
    const edges = s("g", { class: "flow-edges" });
    const ports = edgePorts(layout);
    /** @type {Map<number, Element[]>} each drawn node's edges, lit while it is hovered */
    const touching = new Map();
    layout.edges.forEach(function (e, k) {
      const x1 = x(e.from) + FLOW_NODE_W;
      const y1 = y(e.from) + ports.out[k];
      const x2 = x(e.to);
      const y2 = y(e.to) + ports.in[k];
      const path = s("path", {
        d: edgePath(x1, y1, x2, y2, layout.slot[e.from], layout.slot[e.to]),
        class: "edge on-" + e.rule,
        "data-from": nodes[e.from].ref,
        "data-to": nodes[e.to].ref,
        "data-on-failure": e.rule,
      });
      path.appendChild(
        s(
          "title",
          {},
          nodes[e.to].ref + " waits for " + nodes[e.from].ref + "; if it fails: " + e.rule,
        ),
      );
      edges.appendChild(path);
      [e.from, e.to].forEach(function (i) {
        const list = touching.get(i);
        if (list) list.push(path);
        else touching.set(i, [path]);
      });
    });
    root.appendChild(edges);
    /** @type {Map<number, Element>} */
    const elements = new Map();
    layout.drawn.forEach(function (i) {
      const node = nodes[i];
      const g = s("g", {
        transform: "translate(" + x(i) + " " + y(i) + ")",
        "data-id": node.id,
        "data-ref": node.ref,
        tabindex: 0,
        role: "button",
      });
      g.appendChild(s("title", {}, ""));
      g.appendChild(s("rect", { width: FLOW_NODE_W, height: FLOW_NODE_H, rx: 6 }));
      g.appendChild(s("text", { x: 9, y: 15, class: "ref" }, clip(node.ref, 22)));
      g.appendChild(
        s("text", { x: 9, y: 30, class: "jid" }, "#" + node.id + " · " + clip(node.queue, 16)),
      );
      setNodeState(g, node);
      g.addEventListener("click", function () {
        showJob(node.id, true);
      });
      g.addEventListener("keydown", function (event) {
        const key = /** @type {KeyboardEvent} */ (event).key;
        if (key === "Enter" || key === " ") {
          event.preventDefault();
          showJob(node.id, true);
        }
      });
      /** @param {boolean} on */
      const light = (on) => {
        (touching.get(i) || []).forEach(function (path) {
          path.classList.toggle("lit", on);
        });
      };
      g.addEventListener("mouseenter", () => light(true));
      g.addEventListener("mouseleave", () => light(false));
      g.addEventListener("focus", () => light(true));
      g.addEventListener("blur", () => light(false));
      elements.set(node.id, g);
      root.appendChild(g);
    });
    flowPage.nodes = elements;

    /** @type {(HTMLElement | string)[]} */
    const notes = [];
    if (layout.hiddenNodes > 0 || layout.hiddenEdges > 0) {
      notes.push(
        "Drawn: the first " + int(layout.drawn.length) + " nodes by depth and " +
          int(layout.edges.length) + " of their edges. Not drawn: " +
          int(layout.hiddenNodes) + " node" + (layout.hiddenNodes === 1 ? "" : "s") + " and " +
          int(layout.hiddenEdges) + " edge" + (layout.hiddenEdges === 1 ? "" : "s") +
          " (the counts above include them; the job browser lists them by state).",
      );
    }
    if (flowPage.focus !== null && !elements.has(flowPage.focus)) {
      notes.push(" Job #" + flowPage.focus + " is not drawn.");
    }
    const legend = h(
      "div",
      { class: "flow-legend" },
      h("span", { class: "muted", text: "If a prerequisite fails:" }),
      legendItem("cancel", "its dependent is cancelled"),
      legendItem("ignore", "it runs, without that outcome"),
      legendItem("run", "it runs, with the failure"),
      h("span", { class: "spacer" }),
      h("span", { class: "muted", text: "Click a node to show its job." }),
    );
    $("flow-view").replaceChildren(
      h(
        "div",
        { class: "flow-head" },
        h("div", { id: "flow-counts", class: "flow-counts" }),
        h("span", { class: "spacer" }),
        findForm(),
      ),
      h("div", {
        id: "flow-notice",
        class: "flow-notice" + (notes.length ? "" : " hidden"),
        text: notes.join(""),
      }),
      h(
        "div",
        { class: "flow-graph" },
        nodes.length ? root : h("div", {
          class: "empty",
          text: "This flow has no nodes left.",
        }),
      ),
      legend,
    );
    const focused = flowPage.focus === null ? undefined : elements.get(flowPage.focus);
    if (focused) focused.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  /**
   * The path of an edge from a prerequisite's box (`x1`, `y1`) to its dependent's (`x2`, `y2`):
   * one curve to the next column; past it, a curve into the gap between two rows (the one
   * midway between the nodes' rows), along it across the columns between, and a curve out, so
   * the edge does not run through the nodes it passes.
   * @param {number} x1
   * @param {number} y1
   * @param {number} x2
   * @param {number} y2
   * @param {number} fromRow
   * @param {number} toRow
   */
  function edgePath(x1, y1, x2, y2, fromRow, toRow) {
    const gap = FLOW_COL - FLOW_NODE_W;
    if (x2 - x1 <= gap + 1) {
      const bend = (x2 - x1) / 2;
      return "M" + x1 + " " + y1 + "C" + (x1 + bend) + " " + y1 + " " + (x2 - bend) + " " + y2 +
        " " + x2 + " " + y2;
    }
    const channel = Math.round((fromRow + toRow) / 2 + 0.5);
    const yg = FLOW_TOP + channel * FLOW_ROW - (FLOW_ROW - FLOW_NODE_H) / 2;
    const half = gap / 2;
    return "M" + x1 + " " + y1 + "C" + (x1 + half) + " " + y1 + " " + (x1 + half) + " " + yg +
      " " + (x1 + gap) + " " + yg + "L" + (x2 - gap) + " " + yg + "C" + (x2 - half) + " " + yg +
      " " + (x2 - half) + " " + y2 + " " + x2 + " " + y2;
  }

  /**
   * Where each drawn edge leaves its prerequisite's box and enters its dependent's, as offsets
   * from the box's top: a node's edges are spread over its height in the order of the nodes at
   * their other end, so edges that meet a node stay apart.
   * @param {FlowLayout} layout
   * @returns {{ out: number[], in: number[] }}
   */
  function edgePorts(layout) {
    const out = new Array(layout.edges.length).fill(FLOW_NODE_H / 2);
    const into = new Array(layout.edges.length).fill(FLOW_NODE_H / 2);
    /** @type {Map<number, number[]>} */
    const leaving = new Map();
    /** @type {Map<number, number[]>} */
    const entering = new Map();
    layout.edges.forEach(function (e, k) {
      if (!leaving.has(e.from)) leaving.set(e.from, []);
      if (!entering.has(e.to)) entering.set(e.to, []);
      /** @type {number[]} */ (leaving.get(e.from)).push(k);
      /** @type {number[]} */ (entering.get(e.to)).push(k);
    });
    /**
     * @param {Map<number, number[]>} groups
     * @param {number[]} offsets
     * @param {(k: number) => number} other
     */
    function spread(groups, offsets, other) {
      groups.forEach(function (list) {
        if (list.length < 2) return;
        list.sort(function (a, b) {
          return layout.slot[other(a)] - layout.slot[other(b)] || a - b;
        });
        const step = Math.min(6, (FLOW_NODE_H - 12) / (list.length - 1));
        list.forEach(function (k, j) {
          offsets[k] = FLOW_NODE_H / 2 + (j - (list.length - 1) / 2) * step;
        });
      });
    }
    spread(leaving, out, (k) => layout.edges[k].to);
    spread(entering, into, (k) => layout.edges[k].from);
    return { out: out, in: into };
  }

  /**
   * The form that finds a node of the open flow by ref or job id: a drawn node is marked and
   * scrolled to; one not drawn opens in the job lookup.
   */
  function findForm() {
    const input = h("input", {
      id: "flow-find",
      placeholder: "Find a node: ref or job id",
      "aria-label": "Find a node of this flow by ref or job id",
    });
    const form = h("form", { id: "flow-find-form", autocomplete: "off" }, input);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const flow = flowPage.flow;
      const wanted = input.value.trim();
      if (!flow || !flow.nodes || wanted === "") return;
      const id = /^#?[1-9][0-9]{0,15}$/.test(wanted) ? Number(wanted.replace("#", "")) : null;
      const node = flow.nodes.find(function (n) {
        return n.ref === wanted;
      }) || flow.nodes.find(function (n) {
        return n.id === id;
      });
      if (!node) {
        toast("Flow #" + flow.id + " has no node " + JSON.stringify(wanted), "error");
        return;
      }
      flowPage.focus = node.id;
      renderFlow(flow);
      field("flow-find").value = wanted;
      if (!flowPage.nodes.has(node.id)) showJob(node.id, true);
    });
    return form;
  }

  /**
   * @param {string} rule
   * @param {string} meaning
   */
  function legendItem(rule, meaning) {
    const sample = s("svg", { width: 34, height: 10, viewBox: "0 0 34 10", "aria-hidden": "true" });
    sample.appendChild(s("line", { x1: 1, x2: 33, y1: 5, y2: 5, class: "edge on-" + rule }));
    return h("span", { class: "legend-item" }, sample, h("b", { text: rule }), " " + meaning);
  }

  // ---- schedules: listed with their next tick, paused and resumed from the page ----

  /**
   * @typedef {{
   *   name: string, queue: string, cron: string, timezone: string, missed: string,
   *   paused: boolean, next_tick_at: number | null, last_tick_at: number | null,
   *   last_job_id: number | null
   * }} ScheduleView
   */

  /** @type {{ list: ScheduleView[], loading: boolean, timer: ReturnType<typeof setInterval> | undefined, error: string }} */
  const schedules = { list: [], loading: false, timer: undefined, error: "" };

  /** How often the schedules are read again while the page is open, ms. */
  const SCHEDULES_REFRESH_MS = 5000;

  /** Reads the schedules now, and every few seconds from then on (once the stream is up). */
  function startSchedules() {
    loadSchedules();
    if (schedules.timer === undefined) {
      schedules.timer = setInterval(function () {
        if (!document.hidden) loadSchedules();
      }, SCHEDULES_REFRESH_MS);
    }
  }

  function loadSchedules() {
    if (schedules.loading) return Promise.resolve();
    schedules.loading = true;
    return api("GET", "/v1/schedules").then(function (data) {
      schedules.list = data.schedules;
      schedules.error = "";
    }).catch(function (error) {
      schedules.error = error.message;
    }).then(function () {
      schedules.loading = false;
      renderSchedules();
    });
  }

  function renderSchedules() {
    const now = Date.now();
    const body = $("schedules-body");
    body.replaceChildren.apply(
      body,
      schedules.list.map(function (s) {
        return scheduleRow(s, now);
      }),
    );
    $("schedules-empty").classList.toggle("hidden", schedules.list.length > 0);
    const paused = schedules.list.filter(function (s) {
      return s.paused;
    }).length;
    $("schedules-caption").textContent = schedules.error
      ? "could not read: " + schedules.error
      : schedules.list.length + (schedules.list.length === 1 ? " schedule" : " schedules") +
        (paused ? " · " + paused + " paused" : "");
  }

  /**
   * @param {ScheduleView} s
   * @param {number} now
   */
  function scheduleRow(s, now) {
    const toggle = actionButton(s.paused ? "Resume" : "Pause", "schedule-toggle", function () {
      return toggleSchedule(s);
    });
    const last = s.last_job_id === null ? h("td", { class: "muted", text: "—" }) : h(
      "td",
      {},
      h("button", {
        type: "button",
        class: "link",
        text: "#" + s.last_job_id,
        onclick: function () {
          showJob(/** @type {number} */ (s.last_job_id), true);
        },
      }),
    );
    return h(
      "tr",
      { "data-schedule": s.name },
      h(
        "td",
        { class: "l" },
        h("span", { class: "qname", text: s.name }),
        h("span", { class: "badge paused" + (s.paused ? "" : " hidden"), text: "paused" }),
      ),
      h("td", { class: "l", text: s.queue }),
      h("td", { class: "l mono", text: s.cron }),
      h("td", { class: "l", text: s.timezone }),
      s.paused
        ? h("td", { class: "muted c-next", text: "paused" })
        : timeCell(s.next_tick_at, now, "c-next"),
      timeCell(s.last_tick_at, now, "c-last"),
      last,
      h("td", { class: "actions" }, toggle),
    );
  }

  /**
   * @param {ScheduleView} s
   */
  function toggleSchedule(s) {
    const path = "/v1/schedules/" + encodeURIComponent(s.name) + (s.paused ? "/resume" : "/pause");
    return api("POST", path, {}).then(function (/** @type {ScheduleView} */ updated) {
      toast((updated.paused ? "Paused schedule " : "Resumed schedule ") + updated.name);
      schedules.list = schedules.list.map(function (x) {
        return x.name === updated.name ? updated : x;
      });
      renderSchedules();
    });
  }

  $("schedules-refresh").addEventListener("click", function () {
    loadSchedules();
  });

  // ---- ordering groups: the held ones, their settings, and a form to change them ----

  /** Groups read per page of `GET /v1/queues/{queue}/groups`. */
  const GROUPS_PAGE = 100;
  /** How often the chosen queue's groups are read again while the page is open, ms. */
  const GROUPS_REFRESH_MS = 5000;

  /**
   * @type {{
   *   queue: string, list: GroupState[], next: string | null, loading: boolean, error: string,
   *   heldKey: string, timer: ReturnType<typeof setInterval> | undefined
   * }}
   */
  const groups = {
    queue: "",
    list: [],
    next: null,
    loading: false,
    error: "",
    heldKey: "",
    timer: undefined,
  };

  /**
   * @param {string} queue
   * @param {string} group
   */
  function groupPath(queue, group) {
    return queuePath(queue) + "/groups/" + encodeURIComponent(group);
  }

  /**
   * Shows the groups of queue `name` and scrolls to them.
   * @param {string} name
   */
  function openGroups(name) {
    field("groups-queue").value = name;
    loadGroups(name, false);
    $("groups-card").scrollIntoView({ behavior: "smooth", block: "start" });
  }

  /**
   * Loads the first page of queue `name`'s groups (or, with `more`, the next one). An answer for a
   * queue no longer chosen is dropped.
   * @param {string} name
   * @param {boolean} more
   * @returns {Promise<void>}
   */
  function loadGroups(name, more) {
    if (!more) {
      if (groups.queue !== name) {
        groups.list = [];
        groups.next = null;
      }
      groups.queue = name;
      groups.error = "";
      groups.heldKey = "";
    }
    renderHeldGroups();
    if (!name) {
      renderGroups();
      return Promise.resolve();
    }
    groups.loading = true;
    if (!more && groups.list.length === 0) renderGroups();
    const after = more && groups.next !== null ? "&after=" + encodeURIComponent(groups.next) : "";
    return api("GET", queuePath(name) + "/groups?limit=" + GROUPS_PAGE + after).then(
      function (/** @type {{ groups: GroupState[], next_after: string | null }} */ data) {
        if (groups.queue !== name) return;
        groups.list = more ? groups.list.concat(data.groups) : data.groups;
        groups.next = data.next_after;
        groups.error = "";
      },
      function (/** @type {ApiError} */ error) {
        if (groups.queue !== name) return;
        groups.error = error.status === 403
          ? "This token may not see the groups of " + name + "."
          : error.message;
      },
    ).then(function () {
      if (groups.queue !== name) return;
      groups.loading = false;
      renderGroups();
    });
  }

  /** Reads the groups again every few seconds while a queue is chosen (first page only). */
  function startGroups() {
    if (groups.timer !== undefined) return;
    groups.timer = setInterval(function () {
      if (document.hidden || !groups.queue || groups.loading || groups.error) return;
      if (groups.list.length > GROUPS_PAGE) return; // paged on: keep what the user loaded
      if ($("groups-view").querySelector(".armed")) return;
      loadGroups(groups.queue, false);
    }, GROUPS_REFRESH_MS);
  }

  /**
   * The held groups of the chosen queue, from its live stats: the ones holding the most jobs back
   * and why. Rebuilt only when they change.
   */
  function renderHeldGroups() {
    const box = $("groups-held");
    const q = groups.queue ? findQueue(groups.queue) : null;
    const counts = q && q.groups ? q.groups : null;
    const top = counts && counts.top_held ? counts.top_held : [];
    const slots = counts ? counts.full : 0;
    const rated = counts ? counts.rate_held || 0 : 0;
    const key = JSON.stringify([groups.queue, slots, rated, top]);
    if (key === groups.heldKey) return;
    groups.heldKey = key;
    if (slots + rated === 0) {
      box.replaceChildren();
      box.classList.add("hidden");
      return;
    }
    /** @type {string[]} */
    const why = [];
    if (slots > 0) why.push(int(slots) + " without a free slot");
    if (rated > 0) why.push(int(rated) + " waiting for their rate");
    const rows = top.map(function (g) {
      return h(
        "tr",
        { "data-group": g.group },
        h("td", { class: "l mono", text: clip(g.group, 60), title: g.group }),
        h("td", {
          class: "l held-why",
          text: heldWord(g.held),
          title: g.held === "rate"
            ? "Its own rate gives no token yet"
            : "As many of its jobs leased as its concurrency allows",
        }),
        h("td", { class: "c-pending", text: int(g.pending) }),
        h("td", { class: "c-leased", text: int(g.leased) }),
        h("td", { class: "c-limit", text: int(g.limit) }),
      );
    });
    box.replaceChildren();
    appendAll(box, [
      h(
        "div",
        { class: "groups-summary" },
        h("span", { class: "badge held", text: "held" }),
        " ",
        h("span", {
          id: "groups-held-text",
          text: "Jobs held because of " + int(slots + rated) +
            (slots + rated === 1 ? " group" : " groups") + " (" + why.join(", ") + ")" +
            (top.length ? ", most pending first:" : ""),
        }),
      ),
      top.length === 0 ? null : h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { id: "groups-held-table" },
          tableHead([["Held group", true], ["Held by", true], "Pending", "Leased", "Limit"]),
          h("tbody", null, rows),
        ),
      ),
    ]);
    box.classList.remove("hidden");
  }

  /** The list of groups (with settings of their own, or jobs) and the form's availability. */
  function renderGroups() {
    const view = $("groups-view");
    const name = groups.queue;
    $("group-form").classList.toggle("hidden", !name);
    if (!name) {
      $("groups-caption").textContent = "";
      view.replaceChildren(h("div", {
        class: "empty",
        text: "Choose a queue to see its ordering groups: the held ones and their settings.",
      }));
      return;
    }
    const configured = groups.list.filter(function (g) {
      return g.configured;
    }).length;
    $("groups-caption").textContent = groups.error ? "" : int(groups.list.length) +
      (groups.next !== null ? "+" : "") + (groups.list.length === 1 ? " group" : " groups") +
      " · " + int(configured) + " with settings of their own";
    if (groups.error) {
      view.replaceChildren(h("div", { class: "empty error", text: groups.error }));
      return;
    }
    if (groups.list.length === 0) {
      view.replaceChildren(h("div", {
        class: "empty",
        text: groups.loading
          ? "Loading…"
          : "No group of " + name + " has settings or jobs. Every group has weight 1, the " +
            "queue's group limit and no rate of its own until you set them below.",
      }));
      return;
    }
    const now = Date.now();
    const body = h(
      "tbody",
      { id: "groups-body" },
      groups.list.map(function (g) {
        return groupRow(name, g, now);
      }),
    );
    const table = h(
      "table",
      null,
      tableHead([
        ["Group", true],
        "Weight",
        "Concurrency",
        "Rate",
        "Pending",
        "Leased",
        ["Held", true],
        "",
      ]),
      body,
    );
    const foot = h(
      "div",
      { class: "foot" },
      h("span", {
        id: "groups-count",
        text: "Showing " + int(groups.list.length) + (groups.next !== null ? " (more after)" : ""),
      }),
    );
    if (groups.next !== null) {
      foot.appendChild(h("span", { class: "spacer" }));
      foot.appendChild(actionButton("Load more", "groups-more", function () {
        return loadGroups(name, true);
      }));
    }
    view.replaceChildren(h("div", { class: "scroll" }, table), foot);
  }

  /**
   * @param {string} queue
   * @param {GroupState} g
   * @param {number} now
   */
  function groupRow(queue, g, now) {
    const st = g.settings;
    const edit = h("button", {
      type: "button",
      class: "group-edit",
      text: "Edit",
      onclick: function () {
        fillGroupForm(g);
        field("group-weight").focus();
      },
    });
    const reset = g.configured
      ? confirmButton("Reset", "Reset?", "group-reset", function () {
        return resetGroup(queue, g.group);
      })
      : null;
    const held = g.held === null ? h("td", { class: "l muted c-held", text: "—" }) : h("td", {
      class: "l c-held warn",
      text: heldWord(g.held) +
        (g.held === "rate" && g.held_until !== null ? " · " + relative(g.held_until, now) : ""),
      title: g.held === "rate"
        ? "Its own rate gives no token yet"
        : "As many of its jobs leased as its limit (" + int(g.limit) + ")",
    });
    return h(
      "tr",
      { "data-group": g.group, class: g.configured ? "configured" : null },
      h(
        "td",
        { class: "l" },
        h("span", { class: "qname", text: clip(g.group, 60), title: g.group }),
        g.configured ? null : h("span", { class: "muted defaults", text: " defaults" }),
      ),
      h("td", { class: "c-weight" + (st.weight === 1 ? " zero" : ""), text: String(st.weight) }),
      h("td", {
        class: "c-concurrency" + (st.concurrency === null ? " zero" : ""),
        text: st.concurrency === null ? "group limit " + int(g.limit) : int(st.concurrency),
      }),
      h("td", {
        class: "c-rate mono" + (st.rate === null ? " zero" : ""),
        text: st.rate === null ? "—" : st.rate,
      }),
      h("td", { class: "c-pending" + (g.pending === 0 ? " zero" : ""), text: int(g.pending) }),
      h("td", { class: "c-leased" + (g.leased === 0 ? " zero" : ""), text: int(g.leased) }),
      held,
      h("td", { class: "actions" }, edit, reset),
    );
  }

  /**
   * Puts a group's settings in the form, to change them.
   * @param {GroupState} g
   */
  function fillGroupForm(g) {
    field("group-name").value = g.group;
    field("group-weight").value = String(g.settings.weight);
    field("group-concurrency").value = g.settings.concurrency === null
      ? ""
      : String(g.settings.concurrency);
    field("group-rate").value = g.settings.rate === null ? "" : g.settings.rate;
  }

  /**
   * The settings the form describes: an empty weight is the default 1, an empty concurrency or
   * rate is none of the group's own. Numbers go as typed; the server says what it refuses.
   * @returns {{ weight: number, concurrency: number | null, rate: string | null }}
   */
  function groupFormSettings() {
    const weight = field("group-weight").value.trim();
    const concurrency = field("group-concurrency").value.trim();
    const rateText = field("group-rate").value.trim();
    return {
      weight: weight === "" ? 1 : Number(weight),
      concurrency: concurrency === "" || concurrency === "none" ? null : Number(concurrency),
      rate: rateText === "" || rateText === "none" ? null : rateText,
    };
  }

  /**
   * Puts the answer for one group in the list: it joins the list if it was not there, and leaves
   * it when it has neither settings nor jobs (as the server lists them).
   * @param {string} queue
   * @param {GroupState} updated
   */
  function showGroup(queue, updated) {
    if (groups.queue !== queue) return;
    const listed = updated.configured || updated.pending > 0 || updated.leased > 0;
    let found = false;
    groups.list = groups.list.flatMap(function (g) {
      if (g.group !== updated.group) return [g];
      found = true;
      return listed ? [updated] : [];
    });
    if (!found && listed) {
      groups.list = groups.list.concat([updated]).sort(function (a, b) {
        return compareBytes(a.group, b.group);
      });
    }
    renderGroups();
  }

  /**
   * Orders names as the server lists them: by their UTF-8 bytes.
   * @param {string} a
   * @param {string} b
   */
  function compareBytes(a, b) {
    const x = new TextEncoder().encode(a);
    const y = new TextEncoder().encode(b);
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (x[i] !== y[i]) return x[i] - y[i];
    }
    return x.length - y.length;
  }

  /**
   * @param {string} queue
   * @param {string} group
   */
  function resetGroup(queue, group) {
    return api("DELETE", groupPath(queue, group)).then(function (/** @type {GroupState} */ out) {
      toast("Group " + clip(group, 40) + " of " + queue + " is back to the defaults");
      showGroup(queue, out);
      return out;
    });
  }

  $("group-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const queue = groups.queue;
    const group = field("group-name").value;
    if (!queue) return;
    if (group === "") {
      toast("Name the group first.", "error");
      return;
    }
    const settings = groupFormSettings();
    runFrom(/** @type {HTMLButtonElement} */ ($("group-save")), function () {
      return api("PUT", groupPath(queue, group), settings).then(
        function (/** @type {GroupState} */ out) {
          toast("Saved group " + clip(group, 40) + " of " + queue);
          fillGroupForm(out);
          showGroup(queue, out);
        },
      );
    });
  });
  $("group-form-reset").addEventListener("click", function () {
    const queue = groups.queue;
    const group = field("group-name").value;
    if (!queue || group === "") return;
    runFrom(/** @type {HTMLButtonElement} */ ($("group-form-reset")), function () {
      return resetGroup(queue, group).then(fillGroupForm);
    });
  });
  /** The form's fields as typed, to tell whether the user changed them meanwhile. */
  function groupFormText() {
    return ["group-name", "group-weight", "group-concurrency", "group-rate"].map(function (id) {
      return field(id).value;
    }).join("\n");
  }
  // Naming a group shows its settings, to change them from there (a read-change-write); an
  // answer that comes after the user typed into the form changes nothing.
  $("group-name").addEventListener("change", function () {
    const queue = groups.queue;
    const group = field("group-name").value;
    if (!queue || group === "") return;
    const typed = groupFormText();
    api("GET", groupPath(queue, group)).then(function (/** @type {GroupState} */ g) {
      if (groups.queue === queue && groupFormText() === typed) fillGroupForm(g);
    }, fail);
  });
  $("groups-queue").addEventListener("change", function () {
    loadGroups(field("groups-queue").value, false);
  });
  $("groups-refresh").addEventListener("click", function () {
    loadGroups(groups.queue, false);
  });
  startGroups();

  connect();
})();
