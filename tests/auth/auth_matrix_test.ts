/**
 * The authorization matrix (DESIGN §3, §7): every HTTP endpoint and every WebSocket op, called
 * as each kind of caller — no token, a bad token, each scope, and an admin token limited to
 * another queue — against the answer §7 prescribes. Allowed calls are made for real (a fresh
 * job and a real lease token in each cell), so "allowed" means the call went all the way
 * through; refused calls must change nothing. One table per protocol; a failure prints the
 * whole row, expected against actual.
 *
 * The finer points (Bearer parsing, globs, sha256 entries, Origin) are in http_auth_test.ts,
 * ws_auth_test.ts and auth_test.ts; this file is the complete grid.
 */

import assert from "node:assert/strict";
import { parseJobFilter } from "../../lib/core/job_filter.ts";
import { createHash } from "node:crypto";
import { TokenSet } from "../../lib/auth/tokens.ts";
import { newJob } from "../helpers/new_job.ts";
import { upgradeStatus } from "../helpers/raw_ws.ts";
import { type Answer, startTestServer, type TestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const TOKENS = {
  produce: "matrix-produce-token-0123456789",
  consume: "matrix-consume-token-0123456789",
  admin: "matrix-admin-token-0123456789ab",
  elsewhere: "matrix-elsewhere-token-012345678",
} as const;

/** The callers of the grid, with the Authorization header each sends. */
const CALLERS = {
  none: null,
  bad: "Bearer matrix-not-a-token-0123456789",
  produce: `Bearer ${TOKENS.produce}`,
  consume: `Bearer ${TOKENS.consume}`,
  admin: `Bearer ${TOKENS.admin}`,
  elsewhere: `Bearer ${TOKENS.elsewhere}`,
} as const;
type Caller = keyof typeof CALLERS;
const CALLER_NAMES = Object.keys(CALLERS) as Caller[];

/** The tokens file: the admin entry as a sha256 digest; "elsewhere" is admin on other.* only. */
const ENTRIES = [
  { name: "producer", token: TOKENS.produce, scopes: ["produce"] },
  { name: "consumer", token: TOKENS.consume, scopes: ["consume"] },
  {
    name: "admin",
    sha256: createHash("sha256").update(TOKENS.admin).digest("hex"),
    scopes: ["admin"],
  },
  { name: "elsewhere", token: TOKENS.elsewhere, scopes: ["admin"], queues: ["other.*"] },
];

/** Who may call a route (§7): a scope, either job scope, both, any valid token, or anyone. */
type Access = "produce" | "consume" | "job" | "consume and produce" | "admin" | "read" | "open";

/** The answer a caller should get from a route, by §7. */
function expectedStatus(access: Access, queueBound: boolean, caller: Caller, ok: number): number {
  if (access === "open") return ok;
  if (caller === "none" || caller === "bad") return 401;
  const scopes: Record<Exclude<Caller, "none" | "bad">, Access[]> = {
    produce: ["produce", "job", "read"],
    consume: ["consume", "job", "read"],
    admin: ["produce", "consume", "job", "consume and produce", "admin", "read"],
    elsewhere: ["produce", "consume", "job", "consume and produce", "admin", "read"],
  };
  if (!scopes[caller].includes(access)) return 403;
  if (caller === "elsewhere" && queueBound) return 403;
  return ok;
}

function startMatrixServer(): Promise<TestServer> {
  return startTestServer({ tokens: ENTRIES });
}

/** A job made through the broker (no auth involved), for one cell of the grid. */
interface Target {
  queue: string;
  pending: number;
  leased: { id: number; token: string };
  dead: number;
  /** A dry-run bulk action of the cell's queue. */
  bulk: number;
  /** A flow in queue `<queue>.flow`: its first node leased, its second blocked behind it. */
  flow: { id: number; leased: { id: number; token: string } };
}

let cells = 0;

async function target(server: TestServer): Promise<Target> {
  const broker = server.server.broker;
  const queue = `mq${++cells}`;
  const job = (payload: string) => newJob(payload, server.clock.now());
  const [dead] = await broker.enqueue(queue, [job('"dead"')]);
  const [d] = await broker.lease(queue, 1, 0, 60_000);
  await broker.nack(dead.id, d.lease.token, { error: "x", delay_ms: null, dead: true });
  const [leased] = await broker.enqueue(queue, [job('"leased"')]);
  const [l] = await broker.lease(queue, 1, 0, 60_000);
  assert.equal(l.job.id, leased.id);
  const [pending] = await broker.enqueue(queue, [job('"pending"')]);
  // A schedule of the same name, in the cell's queue, for the schedule routes.
  await server.server.scheduler.put({
    name: queue,
    queue,
    cron: "0 0 1 1 *",
    timezone: "UTC",
    payload: "1",
    priority: 0,
    max_attempts: 5,
    lease_ms: null,
    backoff: null,
    missed: "last",
  });
  const bulk = broker.bulk.start({
    filter: parseJobFilter(queue, {}),
    action: "cancel",
    dry_run: true,
    by: "setup",
  });
  const flowQueue = `${queue}.flow`;
  const flow = await broker.createFlow({
    key: null,
    nodes: [
      { ref: "a", queue: flowQueue, job: job('"a"'), depends_on: [] },
      {
        ref: "b",
        queue: flowQueue,
        job: job('"b"'),
        depends_on: [{ ref: "a", on_failure: "run" }],
      },
    ],
  });
  const [f] = await broker.lease(flowQueue, 1, 0, 60_000);
  return {
    queue,
    pending: pending.id,
    leased: { id: leased.id, token: l.lease.token },
    dead: dead.id,
    bulk: bulk.id,
    flow: { id: flow.id, leased: { id: f.job.id, token: f.lease.token } },
  };
}

/** Every row of the HTTP grid: the call a cell makes, and its answer when allowed. */
interface HttpRow {
  route: string;
  access: Access;
  /** Whether the call is about one queue (its path's, or its job's), mq… here. */
  queueBound: boolean;
  ok: number;
  call: (t: Target) => [method: string, path: string, body?: unknown];
}

const HTTP_ROWS: HttpRow[] = [
  {
    route: "POST /v1/queues/{queue}/jobs",
    access: "produce",
    queueBound: true,
    ok: 201,
    call: (t) => ["POST", `/v1/queues/${t.queue}/jobs`, { payload: 1 }],
  },
  {
    route: "POST /v1/queues/{queue}/jobs (batch)",
    access: "produce",
    queueBound: true,
    ok: 201,
    call: (t) => ["POST", `/v1/queues/${t.queue}/jobs`, { jobs: [{ payload: 1 }] }],
  },
  {
    route: "POST /v1/queues/{queue}/leases",
    access: "consume",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/queues/${t.queue}/leases`, { max: 1 }],
  },
  ...(["ack", "nack", "extend"] as const).map((op): HttpRow => ({
    route: `POST /v1/jobs/{id}/${op}`,
    access: "consume",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/jobs/${t.leased.id}/${op}`, { token: t.leased.token }],
  })),
  {
    route: "POST /v1/jobs/{id}/checkpoint",
    access: "consume",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/jobs/${t.leased.id}/checkpoint`, { token: t.leased.token, data: 1 }],
  },
  {
    route: "GET /v1/jobs/{id}",
    access: "job",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/jobs/${t.pending}`],
  },
  {
    route: "DELETE /v1/jobs/{id}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["DELETE", `/v1/jobs/${t.pending}`],
  },
  {
    route: "GET /v1/queues/{queue}/jobs",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/queues/${t.queue}/jobs?state=pending&order=newest`],
  },
  {
    route: "POST /v1/jobs/{id}/run",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/jobs/${t.pending}/run`],
  },
  {
    route: "DELETE /v1/jobs/{id} (a leased job)",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["DELETE", `/v1/jobs/${t.leased.id}`],
  },
  {
    route: "POST /v1/flows",
    access: "produce",
    queueBound: true,
    ok: 201,
    call: (t) => ["POST", "/v1/flows", { nodes: [{ ref: "a", queue: t.queue, payload: 1 }] }],
  },
  {
    // Spans every queue (a summary names none): a token limited to some is refused.
    route: "GET /v1/flows",
    access: "job",
    queueBound: true,
    ok: 200,
    call: () => ["GET", "/v1/flows"],
  },
  {
    route: "GET /v1/flows/{id}",
    access: "job",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/flows/${t.flow.id}`],
  },
  {
    route: "DELETE /v1/flows/{id}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["DELETE", `/v1/flows/${t.flow.id}`],
  },
  {
    // A settle with the lease and an enqueue at once: both scopes.
    route: "POST /v1/jobs/{id}/flow",
    access: "consume and produce",
    queueBound: true,
    ok: 201,
    call: (t) => ["POST", `/v1/jobs/${t.flow.leased.id}/flow`, {
      token: t.flow.leased.token,
      nodes: [{ ref: "c", queue: `${t.queue}.flow`, payload: 1, depends_on: ["a"] }],
    }],
  },
  {
    route: "GET /v1/queues",
    access: "read",
    queueBound: false,
    ok: 200,
    call: () => ["GET", "/v1/queues"],
  },
  {
    route: "GET /v1/queues/{queue}",
    access: "read",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/queues/${t.queue}`],
  },
  {
    route: "POST /v1/queues/{queue}/pause",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/queues/${t.queue}/pause`],
  },
  {
    route: "POST /v1/queues/{queue}/resume",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/queues/${t.queue}/resume`],
  },
  {
    route: "GET /v1/queues/{queue}/settings",
    access: "read",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/queues/${t.queue}/settings`],
  },
  {
    route: "PUT /v1/queues/{queue}/settings",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["PUT", `/v1/queues/${t.queue}/settings`, { concurrency: 5 }],
  },
  {
    route: "GET /v1/queues/{queue}/groups",
    access: "read",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/queues/${t.queue}/groups`],
  },
  {
    route: "GET /v1/queues/{queue}/groups/{group}",
    access: "read",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/queues/${t.queue}/groups/acme`],
  },
  {
    route: "PUT /v1/queues/{queue}/groups/{group}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["PUT", `/v1/queues/${t.queue}/groups/acme`, { weight: 2 }],
  },
  {
    route: "DELETE /v1/queues/{queue}/groups/{group}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["DELETE", `/v1/queues/${t.queue}/groups/acme`],
  },
  {
    route: "GET /v1/queues/{queue}/dead",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/queues/${t.queue}/dead`],
  },
  {
    route: "POST /v1/queues/{queue}/dead/requeue",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/queues/${t.queue}/dead/requeue`, { ids: [t.dead] }],
  },
  {
    route: "POST /v1/queues/{queue}/bulk",
    access: "admin",
    queueBound: true,
    ok: 202,
    call: (t) => ["POST", `/v1/queues/${t.queue}/bulk`, { action: "cancel", dry_run: true }],
  },
  {
    // Every task the token may see: a token limited to some queues gets those only.
    route: "GET /v1/bulk",
    access: "admin",
    queueBound: false,
    ok: 200,
    call: () => ["GET", "/v1/bulk"],
  },
  {
    route: "GET /v1/bulk/{id}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/bulk/${t.bulk}`],
  },
  {
    route: "DELETE /v1/bulk/{id}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["DELETE", `/v1/bulk/${t.bulk}`],
  },
  {
    // Spans every queue: a token limited to some is refused (its admin scope notwithstanding).
    route: "GET /metrics",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: () => ["GET", "/metrics"],
  },
  {
    // The dashboard's live feed: any valid token, filtered to the queues it may see.
    route: "GET /v1/events",
    access: "read",
    queueBound: false,
    ok: 200,
    call: () => ["GET", "/v1/events"],
  },
  {
    route: "GET /v1/schedules",
    access: "read",
    queueBound: false,
    ok: 200,
    call: () => ["GET", "/v1/schedules"],
  },
  {
    route: "GET /v1/schedules/{name}",
    access: "read",
    queueBound: true,
    ok: 200,
    call: (t) => ["GET", `/v1/schedules/${t.queue}`],
  },
  {
    route: "PUT /v1/schedules/{name}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["PUT", `/v1/schedules/${t.queue}`, {
      queue: t.queue,
      cron: "0 0 1 1 *",
      payload: 2,
    }],
  },
  ...(["pause", "resume"] as const).map((action): HttpRow => ({
    route: `POST /v1/schedules/{name}/${action}`,
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["POST", `/v1/schedules/${t.queue}/${action}`],
  })),
  {
    route: "DELETE /v1/schedules/{name}",
    access: "admin",
    queueBound: true,
    ok: 200,
    call: (t) => ["DELETE", `/v1/schedules/${t.queue}`],
  },
  // Open to all: health, the API documents, the dashboard.
  ...["/healthz", "/readyz", "/openapi.json", "/asyncapi.json", "/"].map((path): HttpRow => ({
    route: `GET ${path}`,
    access: "open",
    queueBound: false,
    ok: 200,
    call: () => ["GET", path],
  })),
];

/** Calls a route as a caller; reads the body (just the start of an event stream). */
async function callAs(
  server: TestServer,
  caller: Caller,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer> {
  const headers = new Headers();
  if (CALLERS[caller] !== null) headers.set("authorization", CALLERS[caller]!);
  if (body !== undefined) headers.set("content-type", "application/json");
  const response = await fetch(server.url + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let text: string;
  if (response.headers.get("content-type")?.startsWith("text/event-stream")) {
    const reader = response.body!.getReader();
    const { value } = await reader.read();
    await reader.cancel();
    text = new TextDecoder().decode(value);
  } else text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

/** The stored state of a cell's jobs, to show a refused call changed nothing. */
async function stateOf(server: TestServer, t: Target): Promise<string> {
  const broker = server.server.broker;
  const jobs = await Promise.all([t.pending, t.leased.id, t.dead].map((id) => broker.get(id)));
  const [stats] = await broker.stats(t.queue);
  const schedule = await server.server.scheduler.find(t.queue);
  const flow = await broker.getFlow(t.flow.id);
  return JSON.stringify({ jobs, stats, schedule, flow });
}

Deno.test("every HTTP endpoint answers each caller as §7 prescribes", async () => {
  await using server = await startMatrixServer();
  const expected: string[] = [];
  const actual: string[] = [];
  for (const row of HTTP_ROWS) {
    const want: string[] = [];
    const got: string[] = [];
    for (const caller of CALLER_NAMES) {
      const status = expectedStatus(row.access, row.queueBound, caller, row.ok);
      const t = await target(server);
      const before = await stateOf(server, t);
      const [method, path, body] = row.call(t);
      const answer = await callAs(server, caller, method, path, body);
      want.push(`${caller}:${status}`);
      got.push(`${caller}:${answer.status}`);
      if (answer.status === 401) {
        assert.equal(answer.body.error.code, "unauthorized", row.route);
        assert.equal(answer.headers.get("www-authenticate"), "Bearer", row.route);
      }
      if (answer.status === 403) assert.equal(answer.body.error.code, "forbidden", row.route);
      if (answer.status >= 400) {
        assert.equal(await stateOf(server, t), before, `${row.route} as ${caller} changed state`);
        for (const token of Object.values(TOKENS)) {
          assert.ok(!JSON.stringify(answer.body).includes(token), "an answer echoes a token");
        }
      }
    }
    expected.push(`${row.route.padEnd(40)} ${want.join(" ")}`);
    actual.push(`${row.route.padEnd(40)} ${got.join(" ")}`);
  }
  assert.deepEqual(actual, expected);
});

Deno.test("a token limited to other queues sees only them in GET /v1/queues and the live feed", async () => {
  await using server = await startMatrixServer();
  const t = await target(server);
  await server.server.broker.enqueue("other.eu", [newJob("1", server.clock.now())]);
  const list = await callAs(server, "elsewhere", "GET", "/v1/queues");
  assert.deepEqual(list.body.queues.map((q: { name: string }) => q.name), ["other.eu"]);
  const all = await callAs(server, "admin", "GET", "/v1/queues");
  assert.ok(all.body.queues.some((q: { name: string }) => q.name === t.queue));
  const feed = await callAs(server, "elsewhere", "GET", "/v1/events");
  assert.ok(feed.body.includes("other.eu"), "the feed shows its own queue");
  assert.ok(!feed.body.includes(t.queue), "the feed hides other queues");
});

Deno.test("a requeue by a token limited to other queues cannot reach a dead job by id", async () => {
  await using server = await startMatrixServer();
  const t = await target(server);
  const answer = await callAs(server, "elsewhere", "POST", "/v1/queues/other.x/dead/requeue", {
    ids: [t.dead],
  });
  assert.deepEqual([answer.status, answer.body], [200, { requeued: 0 }]);
  assert.equal((await server.server.broker.get(t.dead))?.state, "dead");
});

// ---- WebSocket ----

/** Every row of the WebSocket grid: the frame a cell sends, and who may send it (§7). */
interface WsRow {
  op: string;
  access: Access | "any";
  frame: (t: Target) => Record<string, unknown>;
}

const WS_ROWS: WsRow[] = [
  {
    op: "subscribe",
    access: "consume",
    frame: (t) => ({ op: "subscribe", queue: t.queue, prefetch: 1 }),
  },
  { op: "unsubscribe", access: "any", frame: (t) => ({ op: "unsubscribe", queue: t.queue }) },
  {
    op: "enqueue",
    access: "produce",
    frame: (t) => ({ op: "enqueue", queue: t.queue, payload: 1 }),
  },
  {
    op: "enqueue (batch)",
    access: "produce",
    frame: (t) => ({ op: "enqueue", queue: t.queue, jobs: [{ payload: 1 }] }),
  },
  ...(["ack", "nack", "extend"] as const).map((op): WsRow => ({
    op,
    access: "consume",
    frame: (t) => ({ op, id: t.leased.id, token: t.leased.token }),
  })),
  {
    op: "checkpoint",
    access: "consume",
    frame: (t) => ({ op: "checkpoint", id: t.leased.id, token: t.leased.token, data: 1 }),
  },
];

/**
 * The outcome a caller should see for a frame: `ok`, an error code, or `1008` when the socket
 * is closed (no token: every frame is refused and ends the socket).
 */
function expectedFrame(row: WsRow, caller: Caller): string {
  if (caller === "none" || caller === "bad") return "unauthorized+1008";
  if (row.access === "any") return "ok";
  return expectedStatus(row.access, true, caller, 200) === 200 ? "ok" : "forbidden";
}

/** Sends one frame as `caller` on a fresh socket; answers what came back. */
async function frameAs(
  server: TestServer,
  caller: Caller,
  via: "header" | "auth frame",
  frame: Record<string, unknown>,
): Promise<string> {
  const header = CALLERS[caller];
  const headers = via === "header" && header !== null && caller !== "bad"
    ? { Authorization: header }
    : undefined;
  await using ws = await WsClient.connect(wsUrl(server.url), { headers });
  if (via === "auth frame" && header !== null) {
    const auth = await ws.request({ op: "auth", token: header.slice("Bearer ".length) });
    if (auth.op !== "ok") {
      const close = await ws.closedWithin();
      return `${auth.code}+${close.code}`;
    }
  }
  const reply = await ws.request(frame);
  if (reply.op === "ok") return "ok";
  if (reply.code === "unauthorized") return `unauthorized+${(await ws.closedWithin()).code}`;
  assert.equal(ws.socket.readyState, WebSocket.OPEN, "a refused frame keeps the socket");
  return reply.code;
}

for (const via of ["header", "auth frame"] as const) {
  Deno.test(`every WebSocket op answers each caller as §7 prescribes (token in the ${via})`, async () => {
    await using server = await startMatrixServer();
    const expected: string[] = [];
    const actual: string[] = [];
    for (const row of WS_ROWS) {
      const want: string[] = [];
      const got: string[] = [];
      for (const caller of CALLER_NAMES) {
        // A bad token in the header is refused at the upgrade: see the upgrade test below.
        if (via === "header" && caller === "bad") continue;
        const t = await target(server);
        const before = await stateOf(server, t);
        want.push(`${caller}:${expectedFrame(row, caller)}`);
        const outcome = await frameAs(server, caller, via, row.frame(t));
        got.push(`${caller}:${outcome}`);
        if (outcome !== "ok") {
          assert.equal(await stateOf(server, t), before, `${row.op} as ${caller} changed state`);
        }
      }
      expected.push(`${row.op.padEnd(16)} ${want.join(" ")}`);
      actual.push(`${row.op.padEnd(16)} ${got.join(" ")}`);
    }
    assert.deepEqual(actual, expected);
  });
}

Deno.test("the WebSocket upgrade answers each caller's Authorization header as §3 prescribes", async () => {
  await using server = await startMatrixServer();
  const expected: string[] = [];
  const actual: string[] = [];
  for (const caller of CALLER_NAMES) {
    const header = CALLERS[caller];
    const answer = await upgradeStatus(wsUrl(server.url), {
      headers: header === null ? {} : { Authorization: header },
    });
    // No header: upgraded, the token must come in the first frame. A bad one: 401 at once.
    expected.push(`${caller}:${caller === "bad" ? 401 : 101}`);
    actual.push(`${caller}:${answer.status}`);
  }
  assert.deepEqual(actual, expected);
});

Deno.test("the auth frame as first frame answers each caller as §3 prescribes", async () => {
  await using server = await startMatrixServer();
  const names: Record<string, string> = {
    produce: "producer",
    consume: "consumer",
    admin: "admin",
    elsewhere: "elsewhere",
  };
  for (const caller of CALLER_NAMES) {
    await using ws = await WsClient.connect(wsUrl(server.url));
    const header = CALLERS[caller];
    const token = header === null ? undefined : header.slice("Bearer ".length);
    const reply = await ws.request({ op: "auth", token });
    if (caller === "none" || caller === "bad") {
      assert.equal(reply.code, "unauthorized", caller);
      assert.equal((await ws.closedWithin()).code, 1008, caller);
    } else {
      assert.deepEqual([reply.op, reply.name], ["ok", names[caller]], caller);
    }
  }
});

// ---- Origin on the upgrade: what ws_auth_test.ts leaves out ----

Deno.test("the upgrade checks Origin even when the Authorization header is valid", async () => {
  await using server = await startMatrixServer();
  const answer = await upgradeStatus(wsUrl(server.url), {
    headers: { Origin: "http://evil.example", Authorization: CALLERS.admin },
  });
  assert.equal(answer.status, 403);
  assert.equal(answer.body.error.code, "forbidden");
});

Deno.test("a listed origin must match in scheme, host and port; the Host match ignores case", async () => {
  await using server = await startTestServer({
    config: { allowedOrigins: ["https://app.example"] },
  });
  const url = wsUrl(server.url);
  const cases: [string, Record<string, string>, number][] = [
    ["the listed origin", { Origin: "https://app.example" }, 101],
    ["its default port spelt out", { Origin: "https://app.example:443" }, 101],
    ["another scheme", { Origin: "http://app.example" }, 403],
    ["another port", { Origin: "https://app.example:8443" }, 403],
    ["a subdomain", { Origin: "https://x.app.example" }, 403],
    ["a longer name", { Origin: "https://app.example.evil" }, 403],
    ["same origin, upper case", { Origin: server.url.toUpperCase().replace("HTTP", "http") }, 101],
    ["not a URL", { Origin: "app.example" }, 403],
  ];
  for (const [what, headers, status] of cases) {
    assert.equal((await upgradeStatus(url, { headers })).status, status, what);
  }
});

// A page whose name an attacker rebinds to 127.0.0.1 is "same origin" by §7's rule (its Origin
// host equals the Host it sends). Without tokens the Host allow-list refuses it; with tokens
// the Host is not checked (token holders keep their names) and every frame needs a token.
Deno.test("a DNS-rebound page is refused by the Host check; with tokens on, it still cannot act", async () => {
  await using open = await startTestServer();
  const port = new URL(open.url).port;
  const rebound = { Origin: `http://evil.example:${port}`, Host: `evil.example:${port}` };
  assert.equal((await upgradeStatus(wsUrl(open.url), { headers: rebound })).status, 403);
  await using guarded = await startMatrixServer();
  const gport = new URL(guarded.url).port;
  // The rebound page's socket (WebSocket cannot spoof Host, so this one stands in for it).
  await using ws = await WsClient.connect(wsUrl(guarded.url));
  assert.equal(
    (await upgradeStatus(wsUrl(guarded.url), {
      headers: { Origin: `http://evil.example:${gport}`, Host: `evil.example:${gport}` },
    })).status,
    101,
    "upgraded, but every frame needs a token",
  );
  assert.equal(
    (await ws.request({ op: "subscribe", queue: "q", prefetch: 1 })).code,
    "unauthorized",
  );
});

Deno.test("Principal.limited is set by queue globs that leave queues out, not by * alone", () => {
  const set = TokenSet.parse(JSON.stringify([
    { name: "all", token: "a".repeat(16), scopes: ["admin"] },
    { name: "star", token: "b".repeat(16), scopes: ["admin"], queues: ["*"] },
    { name: "stars", token: "c".repeat(16), scopes: ["admin"], queues: ["x.*", "**"] },
    { name: "some", token: "d".repeat(16), scopes: ["admin"], queues: ["x.*"] },
  ]));
  const limited = (t: string) => set.authenticate(t.repeat(16))?.limited;
  assert.deepEqual(["a", "b", "c", "d"].map(limited), [false, false, false, true]);
});
