/**
 * The `traceparent` and `tracestate` headers of a one-job enqueue: the job's trace context
 * unless its attributes carry one, checked by W3C Trace Context's rules (§3.2, §3.3).
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/test_server.ts";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OWN = "00-11111111111111111111111111111111-2222222222222222-00";

Deno.test("POST /v1/queues/{queue}/jobs stores the trace headers as the job's attributes", async () => {
  await using server = await startTestServer();
  const made = await server.request("POST", "/v1/queues/q/jobs", {
    payload: 1,
    attributes: { lang: { type: "String", value: "en" } },
  }, { traceparent: TRACEPARENT, tracestate: "rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE" });
  assert.equal(made.status, 201);
  const leased = await server.request("POST", "/v1/queues/q/leases", { max: 1 });
  assert.deepEqual(leased.body.jobs[0].attributes, {
    lang: { type: "String", value: "en" },
    traceparent: { type: "String", value: TRACEPARENT },
    tracestate: { type: "String", value: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE" },
  });
});

Deno.test("POST /v1/queues/{queue}/jobs keeps a job's own traceparent over the headers", async () => {
  await using server = await startTestServer();
  const made = await server.request("POST", "/v1/queues/q/jobs", {
    payload: 1,
    attributes: { traceparent: { type: "String", value: OWN } },
  }, { traceparent: TRACEPARENT, tracestate: "rojo=1" });
  const job = await server.request("GET", `/v1/jobs/${made.body.id}`);
  assert.deepEqual(job.body.attributes, { traceparent: { type: "String", value: OWN } });
});

Deno.test("POST /v1/queues/{queue}/jobs leaves a batch's jobs to their own attributes", async () => {
  await using server = await startTestServer();
  const made = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }, {
      payload: 2,
      attributes: { traceparent: { type: "String", value: OWN } },
    }],
  }, { traceparent: TRACEPARENT });
  assert.equal(made.status, 201);
  const leased = await server.request("POST", "/v1/queues/q/leases", { max: 2 });
  assert.deepEqual(leased.body.jobs.map((j: { attributes: unknown }) => j.attributes), [
    null,
    { traceparent: { type: "String", value: OWN } },
  ]);
});

Deno.test("POST /v1/queues/{queue}/jobs refuses a bad trace header naming it, storing nothing", async () => {
  await using server = await startTestServer();
  const ten = Object.fromEntries(
    Array.from({ length: 10 }, (_, i) => [`a${i}`, { type: "String", value: "x" }]),
  );
  const cases: [Record<string, string>, unknown, RegExp][] = [
    [{ traceparent: TRACEPARENT.toUpperCase() }, { payload: 1 }, /"traceparent" header: expected/],
    [
      { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" },
      { payload: 1 },
      /"traceparent" header: the trace id must not be all zeros/,
    ],
    [{ tracestate: "rojo=1" }, { payload: 1 }, /"tracestate" header: needs a traceparent/],
    [{ traceparent: TRACEPARENT, tracestate: "Rojo=1" }, { payload: 1 }, /"tracestate" header/],
    [
      { traceparent: TRACEPARENT },
      { payload: 1, attributes: ten },
      /"traceparent" header: .*no room/,
    ],
    [{ traceparent: "garbage" }, { jobs: [{ payload: 1 }] }, /"traceparent" header/],
  ];
  for (const [headers, body, message] of cases) {
    const answer = await server.request("POST", "/v1/queues/q/jobs", body, headers);
    assert.equal(answer.status, 400, JSON.stringify(headers));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.match(answer.body.error.message, message);
  }
  const full = Object.fromEntries(
    Array.from({ length: 4 }, (_, i) => [`a${i}`, { type: "String", value: "x".repeat(970) }]),
  );
  const over = await server.request("POST", "/v1/queues/q/jobs", {
    payload: 1,
    attributes: full,
  }, { traceparent: TRACEPARENT });
  assert.equal(over.status, 413);
  assert.match(
    over.body.error.message,
    /"traceparent" header: with it the job's attributes pass 4096 bytes/,
  );
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal(stats.body.counts.pending, 0);
});
