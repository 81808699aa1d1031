/**
 * The job browser over HTTP: `GET /v1/queues/{queue}/jobs` lists one state's jobs by id either
 * way with cursor paging, and `POST /v1/jobs/{id}/run` makes a delayed job pending now. Real
 * server, real SQLite file, the test clock.
 */

import assert from "node:assert/strict";
import { deadJob, enqueue, getJob, leaseOne } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";

async function list(server: TestServer, queue: string, query: string) {
  const answer = await server.request("GET", `/v1/queues/${queue}/jobs?${query}`);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body as { jobs: { id: number; state: string }[]; next_after: number | null };
}

Deno.test("GET /v1/queues/{queue}/jobs lists one state's jobs, oldest or newest first", async () => {
  await using server = await startTestServer();
  const pending = [
    await enqueue(server, "b", { payload: 1 }),
    await enqueue(server, "b", { payload: 2, priority: 5 }),
  ];
  const delayed = await enqueue(server, "b", { payload: 3, delay_ms: 60_000 });
  await enqueue(server, "other", { payload: 4 });
  const oldest = await list(server, "b", "state=pending");
  assert.deepEqual(oldest.jobs.map((j) => j.id), pending);
  assert.equal(oldest.next_after, null);
  assert.deepEqual(
    (await list(server, "b", "state=pending&order=newest")).jobs.map((j) => j.id),
    [...pending].reverse(),
  );
  const [job] = (await list(server, "b", "state=delayed")).jobs;
  assert.deepEqual(job, await getJob(server, delayed), "each entry is the whole job object");
  assert.deepEqual((await list(server, "b", "state=done")).jobs, []);
});

Deno.test("GET /v1/queues/{queue}/jobs pages with next_after until a short page", async () => {
  await using server = await startTestServer();
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(await enqueue(server, "p", { payload: i }));
  const seen: number[] = [];
  let after: number | null = null;
  let pages = 0;
  do {
    const page = await list(
      server,
      "p",
      `state=pending&order=newest&limit=2${after === null ? "" : `&after=${after}`}`,
    );
    seen.push(...page.jobs.map((j) => j.id));
    after = page.next_after;
    pages++;
  } while (after !== null);
  assert.deepEqual(seen, [...ids].reverse());
  assert.equal(pages, 3);
});

Deno.test("GET /v1/queues/{queue}/jobs refuses a missing state and unknown parameters", async () => {
  await using server = await startTestServer();
  for (
    const [query, field] of [
      ["", "state"],
      ["state=waiting", "state"],
      ["state=pending&order=up", "order"],
      ["state=pending&limit=0", "limit"],
      ["state=pending&limit=1001", "limit"],
      ["state=pending&after=-1", "after"],
      ["state=pending&sort=id", "sort"],
    ]
  ) {
    const answer = await server.request("GET", `/v1/queues/q/jobs?${query}`);
    assert.equal(answer.status, 400, query);
    assert.equal(answer.body.error.code, "validation_failed");
    assert.match(answer.body.error.message, new RegExp(`"${field}"`), query);
  }
});

Deno.test("POST /v1/jobs/{id}/run makes a delayed job pending and delivers it at once", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "r", { payload: "later", delay_ms: 3_600_000 });
  const waiting = server.request("POST", "/v1/queues/r/leases", { wait_ms: 10_000 });
  const run = await server.request("POST", `/v1/jobs/${id}/run`);
  assert.equal(run.status, 200, JSON.stringify(run.body));
  assert.deepEqual(run.body, { id, state: "pending", run_at: server.clock.now() });
  const leased = await waiting;
  assert.deepEqual(leased.body.jobs.map((j: { id: number }) => j.id), [id]);
});

Deno.test("POST /v1/jobs/{id}/run answers 409 conflict unless the job is delayed or pending", async () => {
  await using server = await startTestServer();
  const pending = await enqueue(server, "r", { payload: 1 });
  const again = await server.request("POST", `/v1/jobs/${pending}/run`, {});
  assert.equal(again.status, 200);
  assert.equal(again.body.state, "pending");
  const leased = (await leaseOne(server, "r")).id;
  const dead = await deadJob(server, "d", 2);
  for (const id of [leased, dead]) {
    const answer = await server.request("POST", `/v1/jobs/${id}/run`);
    assert.equal(answer.status, 409);
    assert.equal(answer.body.error.code, "conflict");
  }
  assert.equal((await getJob(server, leased)).state, "leased");
  assert.equal((await server.request("POST", "/v1/jobs/9999/run")).status, 404);
  assert.equal(
    (await server.request("POST", `/v1/jobs/${pending}/run`, { now: true })).status,
    400,
  );
});
