/**
 * `/v1/schedules…` on a real server (port 0, manual clock): define, read, list, tick, pause,
 * resume, replace, delete; every answer checked against the OpenAPI document by `send()`;
 * validation errors naming the field; scopes and queue restrictions.
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { type Answer, startTestServer, type TestServer } from "../helpers/test_server.ts";

const START = Date.parse("2026-01-01T00:00:00.000Z");

/** Moves the clock and waits for the scheduler's pass (and any timer it re-armed). */
async function advance(server: TestServer, ms: number): Promise<void> {
  await server.advance(ms);
  for (let i = 0; i < 3; i++) {
    await server.server.scheduler.idle();
    await server.advance(0);
  }
}

function invalidField(answer: Answer, field: string, why: RegExp): void {
  assert.equal(answer.status, 400, JSON.stringify(answer.body));
  assert.equal(answer.body.error.code, "validation_failed");
  assert.match(answer.body.error.message, new RegExp(`"${field.replace(/[.[\]]/g, "\\$&")}"`));
  assert.match(answer.body.error.message, why);
}

Deno.test("PUT /v1/schedules/{name} creates a schedule that enqueues a job at each tick", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  const put = await server.request("PUT", "/v1/schedules/heartbeat", {
    queue: "pings",
    cron: "*/15 * * * * *",
    payload: { ping: true },
    priority: 3,
    max_attempts: 2,
    lease_ms: 5000,
    backoff: { base_ms: 100, max_ms: 1000 },
  });
  assert.equal(put.status, 201);
  assert.deepEqual(put.body, {
    name: "heartbeat",
    queue: "pings",
    cron: "*/15 * * * * *",
    timezone: "UTC",
    missed: "last",
    payload: { ping: true },
    priority: 3,
    max_attempts: 2,
    lease_ms: 5000,
    backoff: { base_ms: 100, max_ms: 1000 },
    paused: false,
    next_tick_at: START + 15_000,
    last_tick_at: null,
    last_job_id: null,
    created_at: START,
    updated_at: START,
  });
  await advance(server, 15_000);
  await advance(server, 15_000);
  const got = await server.request("GET", "/v1/schedules/heartbeat");
  assert.equal(got.status, 200);
  assert.equal(got.body.last_tick_at, START + 30_000);
  assert.equal(got.body.next_tick_at, START + 45_000);
  const job = await server.request("GET", `/v1/jobs/${got.body.last_job_id}`);
  assert.equal(job.body.key, "schedule:heartbeat:2026-01-01T00:00:30.000Z");
  assert.deepEqual(job.body.payload, { ping: true });
  assert.equal(job.body.priority, 3);
  const stats = await server.request("GET", "/v1/queues/pings");
  assert.equal(stats.body.counts.pending, 2);
  const list = await server.request("GET", "/v1/schedules");
  assert.deepEqual(list.body.schedules.map((s: { name: string }) => s.name), ["heartbeat"]);
});

Deno.test("a schedule keeps its payload as the very text sent, and so do its jobs", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  // JSON.parse would round the integer and drop ".0"; the key order is kept either way.
  const payload = '{"n":12345678901234567890,"f":1.0,"b":[1,2]}';
  const put = await server.request(
    "PUT",
    "/v1/schedules/exact",
    `{"queue":"q","cron":"*/10 * * * * *","payload":${payload}}`,
  );
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const read = await fetch(server.url + "/v1/schedules/exact");
  assert.ok((await read.text()).includes(`"payload":${payload},`));
  await advance(server, 10_000);
  const jobs = await fetch(server.url + "/v1/queues/q/jobs?state=pending");
  assert.ok((await jobs.text()).includes(`"payload":${payload},`));
});

Deno.test("PUT /v1/schedules/{name} replaces a schedule: 200, created_at kept", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  await server.request("PUT", "/v1/schedules/s", { queue: "q", cron: "0 * * * *", payload: 1 });
  await server.advance(1000);
  const again = await server.request("PUT", "/v1/schedules/s", {
    queue: "q",
    cron: "0 9 * * MON",
    timezone: "Europe/Berlin",
    missed: "all",
    payload: 2,
  });
  assert.equal(again.status, 200);
  assert.equal(again.body.created_at, START);
  assert.equal(again.body.updated_at, START + 1000);
  assert.equal(again.body.timezone, "Europe/Berlin");
  assert.equal(again.body.missed, "all");
  // Monday 5 January 2026, 09:00 CET.
  assert.equal(again.body.next_tick_at, Date.parse("2026-01-05T08:00:00.000Z"));
});

Deno.test("POST /v1/schedules/{name}/pause and /resume stop and restart its ticks", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  await server.request("PUT", "/v1/schedules/s", { queue: "q", cron: "* * * * *", payload: 1 });
  const paused = await server.request("POST", "/v1/schedules/s/pause");
  assert.equal(paused.status, 200);
  assert.equal(paused.body.paused, true);
  assert.equal(paused.body.next_tick_at, null);
  await advance(server, 180_000);
  assert.equal((await server.request("GET", "/v1/queues/q")).body.counts.pending, 0);
  const resumed = await server.request("POST", "/v1/schedules/s/resume", {});
  assert.equal(resumed.body.paused, false);
  assert.equal(resumed.body.next_tick_at, START + 240_000);
  await advance(server, 60_000);
  assert.equal((await server.request("GET", "/v1/queues/q")).body.counts.pending, 1);
  invalidField(await server.request("POST", "/v1/schedules/s/pause", { now: 1 }), "now", /unknown/);
});

Deno.test("DELETE /v1/schedules/{name} removes it; unknown names answer 404", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  await server.request("PUT", "/v1/schedules/s", { queue: "q", cron: "* * * * *", payload: 1 });
  const gone = await server.request("DELETE", "/v1/schedules/s");
  assert.equal(gone.status, 200);
  assert.deepEqual(gone.body, { name: "s", deleted: true });
  for (
    const [method, path] of [
      ["GET", "/v1/schedules/s"],
      ["DELETE", "/v1/schedules/s"],
      ["POST", "/v1/schedules/s/pause"],
      ["POST", "/v1/schedules/s/resume"],
    ]
  ) {
    const answer = await server.request(method, path);
    assert.equal(answer.status, 404, `${method} ${path}`);
    assert.equal(answer.body.error.code, "not_found");
    assert.match(answer.body.error.message, /Cannot find schedule "s"/);
  }
  assert.deepEqual((await server.request("GET", "/v1/schedules")).body, {
    schedules: [],
    next_after: null,
  });
});

Deno.test("PUT /v1/schedules/{name} refuses bad input with validation_failed naming the field", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  const put = (name: string, body: unknown) => server.request("PUT", `/v1/schedules/${name}`, body);
  const ok = { queue: "q", cron: "0 3 * * *", payload: 1 };
  invalidField(await put("s", { ...ok, cron: "61 * * * *" }), "cron", /minute: 61/);
  invalidField(await put("s", { ...ok, cron: "0 3 * *" }), "cron", /expected 5 fields.*got 4/);
  invalidField(await put("s", { ...ok, cron: "0 0 30 2 *" }), "cron", /never matches/);
  invalidField(await put("s", { ...ok, cron: 5 }), "cron", /expected a cron expression/);
  invalidField(await put("s", { ...ok, timezone: "Europe/Atlantis" }), "timezone", /unknown/);
  invalidField(await put("s", { ...ok, missed: "some" }), "missed", /none, last, all/);
  invalidField(await put("s", { ...ok, queue: "bad queue" }), "queue", /expected 1–128/);
  invalidField(await put("s", { queue: "q", payload: 1 }), "cron", /is required/);
  invalidField(await put("s", { queue: "q", cron: "* * * * *" }), "payload", /is required/);
  invalidField(await put("s", { ...ok, key: "k" }), "key", /not a schedule option/);
  invalidField(await put("s", { ...ok, priorty: 1 }), "priorty", /unknown field/);
  invalidField(await put("s", { ...ok, max_attempts: 0 }), "max_attempts", /from 1 to 1000/);
  invalidField(await put("s", { ...ok, lease_ms: 1 }), "lease_ms", /from 100/);
  invalidField(await put("-bad", ok), "name", /expected 1–128/);
  invalidField(await put("x".repeat(129), ok), "name", /expected 1–128/);
  assert.deepEqual((await server.request("GET", "/v1/schedules")).body, {
    schedules: [],
    next_after: null,
  });
});

Deno.test("/v1/schedules: reads need any token, writes admin; a token sees only its queues", async () => {
  const tokens = [
    { name: "reader", token: "schedules-reader-token-0123456789", scopes: ["produce"] },
    { name: "admin", token: "schedules-admin-token-01234567890", scopes: ["admin"] },
    {
      name: "billing",
      token: "schedules-billing-token-012345678",
      scopes: ["admin"],
      queues: ["billing.*"],
    },
  ];
  await using server = await startTestServer({ clock: new ManualClock(START), tokens });
  const as = (who: number) => ({ authorization: `Bearer ${tokens[who].token}` });
  const body = (queue: string) => ({ queue, cron: "0 * * * *", payload: null });
  assert.equal((await server.request("GET", "/v1/schedules")).status, 401);
  assert.equal((await server.request("PUT", "/v1/schedules/a", body("q"), as(0))).status, 403);
  assert.equal((await server.request("PUT", "/v1/schedules/a", body("q"), as(1))).status, 201);
  assert.equal(
    (await server.request("PUT", "/v1/schedules/b", body("billing.eu"), as(2))).status,
    201,
  );
  const readerSees = await server.request("GET", "/v1/schedules", undefined, as(0));
  assert.deepEqual(readerSees.body.schedules.map((s: { name: string }) => s.name), ["a", "b"]);
  const billingSees = await server.request("GET", "/v1/schedules", undefined, as(2));
  assert.deepEqual(billingSees.body.schedules.map((s: { name: string }) => s.name), ["b"]);
  assert.equal((await server.request("GET", "/v1/schedules/a", undefined, as(2))).status, 403);
  assert.equal((await server.request("POST", "/v1/schedules/a/pause", {}, as(2))).status, 403);
  assert.equal((await server.request("DELETE", "/v1/schedules/a", undefined, as(2))).status, 403);
  assert.equal((await server.request("POST", "/v1/schedules/b/pause", {}, as(0))).status, 403);
  // Taking over schedule "a" would move it out of a queue the token may not touch.
  assert.equal(
    (await server.request("PUT", "/v1/schedules/a", body("billing.x"), as(2))).status,
    403,
  );
  assert.equal((await server.request("POST", "/v1/schedules/b/pause", {}, as(2))).status, 200);
});

Deno.test("a schedule's job without max_attempts takes its queue's setting when enqueued", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  const settings = await server.request("PUT", "/v1/queues/q/settings", { max_attempts: 2 });
  assert.equal(settings.status, 200);
  const put = await server.request("PUT", "/v1/schedules/s", {
    queue: "q",
    cron: "* * * * * *",
    payload: 1,
  });
  assert.equal(put.body.max_attempts, null, "null: the queue's, resolved per job");
  await advance(server, 1000);
  const { body } = await server.request("GET", "/v1/schedules/s");
  const job = await server.request("GET", `/v1/jobs/${body.last_job_id}`);
  assert.equal(job.body.max_attempts, 2);
});

Deno.test("past --max-schedules a new schedule answers 409 conflict; replacing and deleting still work, and /metrics counts them", async () => {
  await using server = await startTestServer({
    clock: new ManualClock(START),
    config: { maxSchedules: 2 },
  });
  const body = { queue: "q", cron: "*/10 * * * * *", payload: 1 };
  assert.equal((await server.request("PUT", "/v1/schedules/a", body)).status, 201);
  assert.equal((await server.request("PUT", "/v1/schedules/b", body)).status, 201);
  assert.equal((await server.request("POST", "/v1/schedules/b/pause", {})).status, 200);
  const refused = await server.request("PUT", "/v1/schedules/c", body);
  assert.equal(refused.status, 409, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, "conflict");
  assert.match(refused.body.error.message, /2 schedules is the limit \(--max-schedules\)/);
  assert.equal((await server.request("GET", "/v1/schedules/c")).status, 404);
  assert.equal(
    (await server.request("PUT", "/v1/schedules/a", { ...body, priority: 1 })).status,
    200,
  );
  await advance(server, 10_000);
  await advance(server, 10_000);
  const metrics = await (await fetch(server.url + "/metrics")).text();
  assert.match(metrics, /^tegami_schedules\{state="active"\} 1$/m);
  assert.match(metrics, /^tegami_schedules\{state="paused"\} 1$/m);
  assert.match(metrics, /^tegami_schedule_jobs_total 2$/m);
  assert.equal((await server.request("DELETE", "/v1/schedules/b")).status, 200);
  assert.equal((await server.request("PUT", "/v1/schedules/c", body)).status, 201);
});
