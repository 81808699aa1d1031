/**
 * Every error code the HTTP API can answer (DESIGN §2, §7), and malformed input of every kind:
 * the right 4xx with an `{"error": {"code", "message"}}` body, never a 5xx, and never a change to
 * the jobs already stored. Auth errors (401, 403) are in http_auth_test.ts. The closed set
 * itself, ERROR_CODES, is held to its documents: the code table of docs/api.md and the code enums
 * of openapi.json and asyncapi.json list exactly its codes, with STATUS_OF's statuses.
 */

import assert from "node:assert/strict";
import {
  enqueue,
  lease,
  leaseOne,
  parseRawAnswer,
  RawHttp,
  untilConsumers,
} from "../helpers/http_calls.ts";
import {
  type Answer,
  readAnswer,
  startTestServer,
  type TestServer,
} from "../helpers/test_server.ts";
import { ERROR_CODES, STATUS_OF } from "../../lib/core/errors.ts";
import openapi from "../../lib/http/openapi.json" with { type: "json" };
import asyncapi from "../../lib/ws/asyncapi.json" with { type: "json" };

/** Asserts an answer is the error `code` with its status and the documented body shape. */
function assertError(answer: Answer, status: number, code: string, message?: RegExp): void {
  const context = JSON.stringify(answer.body);
  assert.equal(answer.status, status, context);
  assert.match(answer.headers.get("content-type") ?? "", /^application\/json/, context);
  assert.deepEqual(Object.keys(answer.body), ["error"], context);
  assert.deepEqual(Object.keys(answer.body.error).sort(), ["code", "message"], context);
  assert.equal(answer.body.error.code, code, context);
  assert.equal(typeof answer.body.error.message, "string");
  assert.ok(answer.body.error.message.length > 0);
  if (message !== undefined) assert.match(answer.body.error.message, message);
}

/** Sends a request with an exact body (bytes or text) and content type (null: none). */
async function sendRaw(
  server: TestServer,
  method: string,
  path: string,
  body: string | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array<ArrayBuffer>> | null,
  contentType: string | null = "application/json",
): Promise<Answer> {
  const headers = new Headers();
  if (contentType !== null) headers.set("content-type", contentType);
  // A Uint8Array or a stream gets no Content-Type from fetch; a string would get text/plain.
  const payload = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return readAnswer(
    method,
    path,
    await fetch(server.url + path, { method, headers, body: payload }),
  );
}

async function pendingCount(server: TestServer, queue: string): Promise<number> {
  return (await server.request("GET", `/v1/queues/${queue}`)).body.counts.pending;
}

// ---- invalid_json ----

Deno.test("a body that is not JSON answers 400 invalid_json", async (t) => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const bodies = ["{", '{"payload": 1,}', "{'payload': 1}", "payload=1", "[1, 2", "nul", "{}}"];
  for (const body of bodies) {
    await t.step(`enqueue with ${JSON.stringify(body)}`, async () => {
      assertError(await sendRaw(server, "POST", "/v1/queues/q/jobs", body), 400, "invalid_json");
    });
  }
  for (const op of ["ack", "nack", "extend", "checkpoint"]) {
    await t.step(`${op} with a broken body`, async () => {
      assertError(await sendRaw(server, "POST", `/v1/jobs/${id}/${op}`, "{"), 400, "invalid_json");
    });
  }
  for (const path of ["/v1/queues/q/leases", "/v1/queues/q/dead/requeue", "/v1/queues/q/pause"]) {
    await t.step(`POST ${path} with a broken body`, async () => {
      assertError(await sendRaw(server, "POST", path, "{"), 400, "invalid_json");
    });
  }
  assert.equal(await pendingCount(server, "q"), 1);
});

Deno.test("a body nesting deeper than 1000 levels answers 400 invalid_json unparsed", async () => {
  await using server = await startTestServer();
  const body = (depth: number) => `{"payload":${"[".repeat(depth)}1${"]".repeat(depth)}}`;
  const deep = await sendRaw(server, "POST", "/v1/queues/q/jobs", body(1000));
  assertError(deep, 400, "invalid_json", /deeper than 1000 levels/);
  assert.equal(await pendingCount(server, "q"), 0);
  const fine = await sendRaw(server, "POST", "/v1/queues/q/jobs", body(999));
  assert.equal(fine.status, 201, JSON.stringify(fine.body));
});

Deno.test("a body that is not valid UTF-8 answers 400 invalid_json", async () => {
  await using server = await startTestServer();
  const bytes = new Uint8Array([
    ...new TextEncoder().encode('{"payload":"'),
    0xff,
    0xfe,
    0x22,
    0x7d,
  ]);
  const answer = await sendRaw(server, "POST", "/v1/queues/q/jobs", bytes);
  assertError(answer, 400, "invalid_json", /UTF-8/);
  const overlong = new Uint8Array([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]);
  assertError(await sendRaw(server, "POST", "/v1/queues/q/jobs", overlong), 400, "invalid_json");
  assert.equal(await pendingCount(server, "q"), 0);
});

Deno.test("a body cut short of its Content-Length answers 400, not 500", async () => {
  await using server = await startTestServer();
  using raw = await RawHttp.connect(server);
  await raw.write(
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      'Content-Length: 100\r\n\r\n{"payload":1}',
  );
  await raw.endWrite();
  const answer = parseRawAnswer(await raw.readAll());
  assert.equal(answer.status, 400, JSON.stringify(answer.body));
  assert.equal((answer.body as { error: { code: string } }).error.code, "invalid_json");
  assert.equal(await pendingCount(server, "q"), 0);
});

Deno.test("a Content-Length sent twice cannot carry a body past --max-body", async () => {
  await using server = await startTestServer({ config: { maxBody: 2048, maxPayload: 1024 } });
  const jobs = Array.from({ length: 5 }, (_, i) => ({ payload: String(i).repeat(900) }));
  const body = JSON.stringify({ jobs });
  using raw = await RawHttp.connect(server);
  await raw.write(
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      "Connection: close\r\n" +
      `Content-Length: ${body.length}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  const answer = parseRawAnswer(await raw.readAll());
  assert.equal(answer.status, 413, JSON.stringify(answer.body));
  assert.equal((answer.body as { error: { code: string } }).error.code, "payload_too_large");
  assert.equal(await pendingCount(server, "q"), 0);
});

// ---- validation_failed ----

const LONG_KEY = "k".repeat(513);
const LONG_KEY_MULTIBYTE = "€".repeat(171); // 171 characters, 513 bytes of UTF-8

/** [what, method, path, body, the field the message must name] */
const INVALID: [string, string, string, unknown, string][] = [
  ["payload missing", "POST", "/v1/queues/q/jobs", { priority: 1 }, "payload"],
  ["an empty object", "POST", "/v1/queues/q/jobs", {}, "payload"],
  ["no body at all", "POST", "/v1/queues/q/jobs", undefined, "body"],
  ["a JSON array body", "POST", "/v1/queues/q/jobs", [{ payload: 1 }], "body"],
  ["a JSON string body", "POST", "/v1/queues/q/jobs", '"payload"', "body"],
  ["a JSON null body", "POST", "/v1/queues/q/jobs", "null", "body"],
  ["a JSON null body on a lease", "POST", "/v1/queues/q/leases", "null", "body"],
  ["a JSON null body on a requeue", "POST", "/v1/queues/q/dead/requeue", "null", "body"],
  ["a query parameter on a lease", "POST", "/v1/queues/q/leases?max=5", {}, "max"],
  ["a query parameter on the queue list", "GET", "/v1/queues?foo=1", undefined, "foo"],
  ["a query parameter on an enqueue", "POST", "/v1/queues/q/jobs?x=1", { payload: 1 }, "x"],
  ["priority 1.5", "POST", "/v1/queues/q/jobs", { payload: 1, priority: 1.5 }, "priority"],
  ["priority as text", "POST", "/v1/queues/q/jobs", { payload: 1, priority: "1" }, "priority"],
  ["priority true", "POST", "/v1/queues/q/jobs", { payload: 1, priority: true }, "priority"],
  ["priority 2^31", "POST", "/v1/queues/q/jobs", { payload: 1, priority: 2 ** 31 }, "priority"],
  ["priority 1e999", "POST", "/v1/queues/q/jobs", '{"payload":1,"priority":1e999}', "priority"],
  ["key of 513 bytes", "POST", "/v1/queues/q/jobs", { payload: 1, key: LONG_KEY }, "key"],
  [
    "key of 171 characters and 513 bytes",
    "POST",
    "/v1/queues/q/jobs",
    { payload: 1, key: LONG_KEY_MULTIBYTE },
    "key",
  ],
  ["an empty key", "POST", "/v1/queues/q/jobs", { payload: 1, key: "" }, "key"],
  ["a numeric key", "POST", "/v1/queues/q/jobs", { payload: 1, key: 7 }, "key"],
  [
    "a key with a lone surrogate",
    "POST",
    "/v1/queues/q/jobs",
    '{"payload":1,"key":"\\ud800"}',
    "key",
  ],
  [
    "delay_ms with run_at",
    "POST",
    "/v1/queues/q/jobs",
    { payload: 1, delay_ms: 10, run_at: 1_700_000_000_000 },
    "delay_ms",
  ],
  ["negative delay_ms", "POST", "/v1/queues/q/jobs", { payload: 1, delay_ms: -1 }, "delay_ms"],
  ["negative run_at", "POST", "/v1/queues/q/jobs", { payload: 1, run_at: -1 }, "run_at"],
  ["max_attempts 0", "POST", "/v1/queues/q/jobs", { payload: 1, max_attempts: 0 }, "max_attempts"],
  [
    "max_attempts 1001",
    "POST",
    "/v1/queues/q/jobs",
    { payload: 1, max_attempts: 1001 },
    "max_attempts",
  ],
  ["lease_ms 99", "POST", "/v1/queues/q/jobs", { payload: 1, lease_ms: 99 }, "lease_ms"],
  [
    "lease_ms 12 h + 1",
    "POST",
    "/v1/queues/q/jobs",
    { payload: 1, lease_ms: 12 * 3600_000 + 1 },
    "lease_ms",
  ],
  ["lease_ms as text", "POST", "/v1/queues/q/jobs", { payload: 1, lease_ms: "30s" }, "lease_ms"],
  ["an unknown field", "POST", "/v1/queues/q/jobs", { payload: 1, priorty: 2 }, "priorty"],
  [
    "a __proto__ field",
    "POST",
    "/v1/queues/q/jobs",
    '{"payload":1,"__proto__":{"priority":5}}',
    "__proto__",
  ],
  [
    "backoff without max_ms",
    "POST",
    "/v1/queues/q/jobs",
    { payload: 1, backoff: { base_ms: 10 } },
    "backoff.max_ms",
  ],
  [
    "backoff max below base",
    "POST",
    "/v1/queues/q/jobs",
    { payload: 1, backoff: { base_ms: 10, max_ms: 5 } },
    "backoff.max_ms",
  ],
  [
    "backoff with an unknown field",
    "POST",
    "/v1/queues/q/jobs",
    { payload: 1, backoff: { base_ms: 1, max_ms: 2, factor: 3 } },
    "backoff.factor",
  ],
  ["backoff as an array", "POST", "/v1/queues/q/jobs", { payload: 1, backoff: [1, 2] }, "backoff"],
  ["an empty batch", "POST", "/v1/queues/q/jobs", { jobs: [] }, "jobs"],
  ["jobs as an object", "POST", "/v1/queues/q/jobs", { jobs: { payload: 1 } }, "jobs"],
  ["a batch with a job field beside it", "POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }],
    priority: 1,
  }, "priority"],
  ["a batch holding a non-object", "POST", "/v1/queues/q/jobs", { jobs: [[1]] }, "jobs[0]"],
  ["a queue name starting with a dash", "POST", "/v1/queues/-q/jobs", { payload: 1 }, "queue"],
  ["a queue name with a space", "POST", "/v1/queues/a%20b/jobs", { payload: 1 }, "queue"],
  ["a queue name with a slash", "POST", "/v1/queues/a%2Fb/jobs", { payload: 1 }, "queue"],
  ["a queue name of dots", "POST", "/v1/queues/%2E%2Ex/jobs", { payload: 1 }, "queue"],
  ["a queue name with NUL", "POST", "/v1/queues/q%00/jobs", { payload: 1 }, "queue"],
  ["a queue name with !", "POST", "/v1/queues/q!/jobs", { payload: 1 }, "queue"],
  ["a queue name of 129 characters", "POST", `/v1/queues/${"a".repeat(129)}/jobs`, {
    payload: 1,
  }, "queue"],
  ["a bad queue name for stats", "GET", "/v1/queues/%C3%A9t%C3%A9", undefined, "queue"],
  ["a queue name that is not percent-encoding", "GET", "/v1/queues/%zz", undefined, "queue"],
  ["a job id that is not percent-encoding", "DELETE", "/v1/jobs/%E0%A4", undefined, "id"],
  ["a bad queue name for pause", "POST", "/v1/queues/-/pause", undefined, "queue"],
  ["a bad queue name for dead", "GET", "/v1/queues/_x/dead", undefined, "queue"],
  ["pause with a field", "POST", "/v1/queues/q/pause", { whatever: 1 }, "whatever"],
  ["resume with a field", "POST", "/v1/queues/q/resume", { whatever: 1 }, "whatever"],
  ["requeue ids as strings", "POST", "/v1/queues/q/dead/requeue", { ids: ["1"] }, "ids[0]"],
  ["lease max 0", "POST", "/v1/queues/q/leases", { max: 0 }, "max"],
  ["lease max 101", "POST", "/v1/queues/q/leases", { max: 101 }, "max"],
  ["lease max as text", "POST", "/v1/queues/q/leases", { max: "1" }, "max"],
  ["lease wait_ms 60001", "POST", "/v1/queues/q/leases", { wait_ms: 60_001 }, "wait_ms"],
  ["lease wait_ms -1", "POST", "/v1/queues/q/leases", { wait_ms: -1 }, "wait_ms"],
  ["lease lease_ms 99", "POST", "/v1/queues/q/leases", { lease_ms: 99 }, "lease_ms"],
  ["lease with an unknown field", "POST", "/v1/queues/q/leases", { count: 1 }, "count"],
  ["lease with an array body", "POST", "/v1/queues/q/leases", [], "body"],
  ["job id 0", "GET", "/v1/jobs/0", undefined, "id"],
  ["job id -1", "GET", "/v1/jobs/-1", undefined, "id"],
  ["job id 1.5", "GET", "/v1/jobs/1.5", undefined, "id"],
  ["job id abc", "GET", "/v1/jobs/abc", undefined, "id"],
  ["job id 1e3", "DELETE", "/v1/jobs/1e3", undefined, "id"],
  ["job id of 17 digits", "GET", "/v1/jobs/12345678901234567", undefined, "id"],
  ["job id beyond 2^53", "POST", "/v1/jobs/9007199254740993/ack", { token: "t" }, "id"],
  ["ack without a token", "POST", "/v1/jobs/1/ack", {}, "token"],
  ["ack with a numeric token", "POST", "/v1/jobs/1/ack", { token: 5 }, "token"],
  ["ack with an empty token", "POST", "/v1/jobs/1/ack", { token: "" }, "token"],
  ["ack with a 257-character token", "POST", "/v1/jobs/1/ack", { token: "t".repeat(257) }, "token"],
  ["ack with an unknown field", "POST", "/v1/jobs/1/ack", { token: "t", reslt: 1 }, "reslt"],
  ["nack with dead as text", "POST", "/v1/jobs/1/nack", { token: "t", dead: "true" }, "dead"],
  ["nack with a numeric error", "POST", "/v1/jobs/1/nack", { token: "t", error: 5 }, "error"],
  ["nack with delay_ms -1", "POST", "/v1/jobs/1/nack", { token: "t", delay_ms: -1 }, "delay_ms"],
  [
    "extend with lease_ms 99",
    "POST",
    "/v1/jobs/1/extend",
    { token: "t", lease_ms: 99 },
    "lease_ms",
  ],
  ["checkpoint without data", "POST", "/v1/jobs/1/checkpoint", { token: "t" }, "data"],
  ["requeue ids not an array", "POST", "/v1/queues/q/dead/requeue", { ids: 1 }, "ids"],
  ["requeue id 0", "POST", "/v1/queues/q/dead/requeue", { ids: [0] }, "ids[0]"],
  ["requeue id as text", "POST", "/v1/queues/q/dead/requeue", { ids: [1, "2"] }, "ids[1]"],
  ["requeue with an unknown field", "POST", "/v1/queues/q/dead/requeue", { all: true }, "all"],
  ["dead list limit 0", "GET", "/v1/queues/q/dead?limit=0", undefined, "limit"],
  ["dead list limit 1001", "GET", "/v1/queues/q/dead?limit=1001", undefined, "limit"],
  ["dead list limit abc", "GET", "/v1/queues/q/dead?limit=abc", undefined, "limit"],
  ["dead list after -1", "GET", "/v1/queues/q/dead?after=-1", undefined, "after"],
];

Deno.test("each invalid field answers 400 validation_failed naming the field", async (t) => {
  await using server = await startTestServer();
  for (const [what, method, path, body, field] of INVALID) {
    await t.step(what, async () => {
      const answer = await server.request(method, path, body);
      const escaped = field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      assertError(answer, 400, "validation_failed", new RegExp(`"${escaped}"`));
    });
  }
  const counts = (await server.request("GET", "/v1/queues/q")).body.counts;
  assert.deepEqual(counts, {
    blocked: 0,
    pending: 0,
    delayed: 0,
    leased: 0,
    done: 0,
    dead: 0,
    cancelled: 0,
  });
});

Deno.test("the limits themselves are accepted", async (t) => {
  await using server = await startTestServer();
  const valid: [string, Record<string, unknown>][] = [
    ["key of 512 bytes", { payload: 1, key: "k".repeat(512) }],
    ["key of 170 three-byte characters", { payload: 1, key: "€".repeat(170) }],
    ["max_attempts 1", { payload: 1, max_attempts: 1 }],
    ["max_attempts 1000", { payload: 1, max_attempts: 1000 }],
    ["lease_ms 100", { payload: 1, lease_ms: 100 }],
    ["lease_ms 12 h", { payload: 1, lease_ms: 12 * 3600_000 }],
    ["priority -2^31", { payload: 1, priority: -(2 ** 31) }],
    ["priority 2^31 - 1", { payload: 1, priority: 2 ** 31 - 1 }],
    ["null options", { payload: 1, priority: null, key: null, delay_ms: null, backoff: null }],
    ["a null payload", { payload: null }],
  ];
  for (const [what, job] of valid) {
    await t.step(what, async () => {
      const answer = await server.request("POST", "/v1/queues/q/jobs", job);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
    });
  }
  await t.step("a queue name of 128 characters", async () => {
    const answer = await server.request("POST", `/v1/queues/${"a".repeat(128)}/jobs`, {
      payload: 1,
    });
    assert.equal(answer.status, 201);
  });
  await t.step("a batch with atomic null", async () => {
    const answer = await server.request("POST", "/v1/queues/other/jobs", {
      jobs: [{ payload: 1 }],
      atomic: null,
    });
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
  });
  await t.step("lease max 100, wait_ms 0 and lease_ms 12 h", async () => {
    const jobs = await lease(server, "q", { max: 100, wait_ms: 0, lease_ms: 12 * 3600_000 });
    assert.equal(jobs.length, valid.length);
  });
});

Deno.test("a batch over max_batch answers 400 and stores nothing", async () => {
  await using server = await startTestServer({ config: { maxBatch: 2 } });
  const answer = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3 }],
  });
  assertError(answer, 400, "validation_failed", /"jobs".*batch limit of 2/);
  assert.equal(await pendingCount(server, "q"), 0);
});

// ---- not_found ----

Deno.test("an unknown route answers 404 not_found", async (t) => {
  await using server = await startTestServer();
  const cases: [string, string][] = [
    ["GET", "/v1/nope"],
    ["GET", "/v2/queues"],
    ["GET", "/v1/jobs"],
    ["POST", "/v1/jobs/1/retry"],
    ["GET", "/v1/jobs/1/ack/more"],
    ["GET", "/v1/queues/q/jobs/1"],
    ["GET", "/index.html"],
    ["GET", "/v1/../../etc/passwd"],
  ];
  for (const [method, path] of cases) {
    await t.step(`${method} ${path}`, async () => {
      assertError(await server.request(method, path), 404, "not_found");
    });
  }
});

Deno.test("a known path with the wrong method answers 404 not_found", async (t) => {
  await using server = await startTestServer();
  const cases: [string, string][] = [
    ["PUT", "/v1/queues/q/jobs"],
    ["DELETE", "/v1/queues/q/jobs"],
    ["GET", "/v1/jobs/1/run"],
    ["GET", "/v1/queues/q/leases"],
    ["PATCH", "/v1/jobs/1"],
    ["POST", "/v1/jobs/1"],
    ["GET", "/v1/jobs/1/ack"],
    ["DELETE", "/v1/queues/q"],
    ["POST", "/healthz"],
    ["DELETE", "/"],
    ["POST", "/metrics"],
  ];
  for (const [method, path] of cases) {
    await t.step(`${method} ${path}`, async () => {
      assertError(await server.request(method, path), 404, "not_found", /wrong method/);
    });
  }
});

// ---- payload_too_large ----

Deno.test("a payload over maxPayload answers 413 and stores nothing", async () => {
  await using server = await startTestServer({ config: { maxPayload: 1024 } });
  const big = "x".repeat(1100);
  assertError(
    await server.request("POST", "/v1/queues/q/jobs", { payload: big }),
    413,
    "payload_too_large",
    /"payload".*1024/,
  );
  assertError(
    await server.request("POST", "/v1/queues/q/jobs", { jobs: [{ payload: 1 }, { payload: big }] }),
    413,
    "payload_too_large",
    /"jobs\[1\]\.payload"/,
  );
  assert.equal(await pendingCount(server, "q"), 0);
  // 1022 characters plus the quotes is exactly the limit.
  assert.equal(
    (await server.request("POST", "/v1/queues/q/jobs", { payload: "x".repeat(1022) })).status,
    201,
  );
});

Deno.test("an ack result or checkpoint over maxPayload answers 413 and keeps the lease", async () => {
  await using server = await startTestServer({ config: { maxPayload: 1024 } });
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  const big = "x".repeat(1100);
  assertError(
    await server.request("POST", `/v1/jobs/${id}/ack`, { token, result: big }),
    413,
    "payload_too_large",
    /"result"/,
  );
  assertError(
    await server.request("POST", `/v1/jobs/${id}/checkpoint`, { token, data: big }),
    413,
    "payload_too_large",
    /"data"/,
  );
  const job = (await server.request("GET", `/v1/jobs/${id}`)).body;
  assert.deepEqual([job.state, job.result, job.checkpoint], ["leased", null, null]);
  assert.equal((await server.request("POST", `/v1/jobs/${id}/ack`, { token })).status, 200);
});

Deno.test("a body over maxBody with a Content-Length answers 413", async () => {
  await using server = await startTestServer({ config: { maxBody: 4096 } });
  const body = JSON.stringify({ jobs: Array.from({ length: 400 }, (_, i) => ({ payload: i })) });
  assert.ok(body.length > 4096);
  const answer = await sendRaw(server, "POST", "/v1/queues/q/jobs", body);
  assertError(answer, 413, "payload_too_large", /4096/);
  assert.equal(await pendingCount(server, "q"), 0);
});

Deno.test("a streamed body over maxBody without a Content-Length answers 413", async () => {
  await using server = await startTestServer({ config: { maxBody: 4096 } });
  const chunk = new TextEncoder().encode(" ".repeat(1024));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull(controller) {
      if (sent === 0) controller.enqueue(new TextEncoder().encode('{"payload":"'));
      if (sent++ < 8) controller.enqueue(chunk);
      else controller.close();
    },
  });
  // The server may answer and close before the whole stream is written, which fetch reports as
  // an error; either way nothing may be stored.
  const answer = await sendRaw(server, "POST", "/v1/queues/q/jobs", stream).catch((e) => e);
  if (!(answer instanceof Error)) assertError(answer, 413, "payload_too_large");
  assert.equal(await pendingCount(server, "q"), 0);
});

// ---- unsupported_media_type ----

Deno.test("a body with a non-JSON Content-Type answers 415", async (t) => {
  await using server = await startTestServer();
  for (
    const type of [
      "text/plain",
      "text/plain;charset=UTF-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/jsonx",
      "application/xml",
    ]
  ) {
    await t.step(type, async () => {
      const answer = await sendRaw(server, "POST", "/v1/queues/q/jobs", '{"payload":1}', type);
      assertError(answer, 415, "unsupported_media_type");
    });
  }
  assert.equal(await pendingCount(server, "q"), 0);
});

Deno.test("a body without Content-Type is read as JSON", async () => {
  await using server = await startTestServer();
  const answer = await sendRaw(server, "POST", "/v1/queues/q/jobs", '{"payload":1}', null);
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  assert.equal(await pendingCount(server, "q"), 1);
});

Deno.test("JSON content types with parameters or a +json suffix are accepted", async () => {
  await using server = await startTestServer();
  for (
    const type of [
      "application/json; charset=utf-8",
      "Application/JSON",
      "application/vnd.api+json",
    ]
  ) {
    const answer = await sendRaw(server, "POST", "/v1/queues/q/jobs", '{"payload":1}', type);
    assert.equal(answer.status, 201, type);
  }
});

Deno.test("a call without a body answers 415 to a non-JSON Content-Type when auth is off", async () => {
  await using server = await startTestServer();
  for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]) {
    const answer = await sendRaw(server, "POST", "/v1/queues/q/pause", null, type);
    assert.equal(answer.status, 415, type);
    assert.equal((answer.body as { error: { code: string } }).error.code, "unsupported_media_type");
  }
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal((stats.body as { paused: boolean }).paused, false);
});

// ---- unavailable ----

Deno.test("a request still sending its body when shutdown begins answers 503 unavailable", async () => {
  await using server = await startTestServer();
  using raw = await RawHttp.connect(server);
  const body = '{"payload":1}';
  await raw.write(
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
      `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
  );
  // The 100 Continue proves the handler is running and waiting for the body.
  assert.match(await raw.readUntil("\r\n\r\n"), /^HTTP\/1\.1 100 Continue/);
  const stopping = server.stop();
  await raw.write(body);
  const answer = parseRawAnswer(await raw.readAll());
  await stopping;
  assert.equal(answer.status, 503, JSON.stringify(answer.body));
  assert.equal((answer.body as { error: { code: string } }).error.code, "unavailable");
});

// ---- the closed set ----

Deno.test("error codes map to the statuses of the documented table", () => {
  assert.deepEqual(STATUS_OF, {
    invalid_json: 400,
    validation_failed: 400,
    unauthorized: 401,
    forbidden: 403,
    not_found: 404,
    request_timeout: 408,
    lease_lost: 409,
    conflict: 409,
    payload_too_large: 413,
    unsupported_media_type: 415,
    rate_limited: 429,
    internal: 500,
    unavailable: 503,
  });
});

/** The rows of the code table under "### Errors" in docs/api.md: code and status, in order. */
async function documentedCodes(): Promise<[code: string, status: number][]> {
  const text = await Deno.readTextFile(new URL("../../docs/api.md", import.meta.url));
  const section = text.split("\n### Errors\n")[1]?.split("\n### ")[0];
  assert.ok(section !== undefined, 'docs/api.md has an "### Errors" section');
  return [...section.matchAll(/^\| `([a-z_]+)` +\| (\d{3}) +\|/gm)]
    .map((row) => [row[1], Number(row[2])]);
}

Deno.test("ERROR_CODES is the code table of docs/api.md, each code with its status", async () => {
  const rows = await documentedCodes();
  assert.deepEqual(rows.map(([code]) => code), [...ERROR_CODES], "the codes, in order");
  for (const [code, status] of rows) {
    assert.equal(status, STATUS_OF[code as keyof typeof STATUS_OF], `the status of ${code}`);
  }
});

/** The `code` enum of an error object in an OpenAPI or AsyncAPI schema, if it names one. */
type CodeEnum = { enum?: string[] } | undefined;

Deno.test("ERROR_CODES is the error-code enum of openapi.json and of asyncapi.json", () => {
  const http = openapi.components.schemas.Error.properties.error.properties.code as CodeEnum;
  assert.deepEqual(http?.enum, [...ERROR_CODES], "openapi.json: schemas.Error");
  const ws = asyncapi.components.schemas.errorFrame.properties.code as CodeEnum;
  assert.deepEqual(ws?.enum, [...ERROR_CODES], "asyncapi.json: schemas.errorFrame");
});

Deno.test("each error response of openapi.json names codes of ERROR_CODES answered with its status", () => {
  const responses: Record<string, { content: { "application/json": { schema: unknown } } }> =
    openapi.components.responses;
  const codesOf = (name: string): string[] => {
    const schema = responses[name].content["application/json"].schema as {
      allOf?: { properties?: { error?: { properties?: { code?: CodeEnum } } } }[];
    };
    return schema.allOf?.[1]?.properties?.error?.properties?.code?.enum ?? [];
  };
  let checked = 0;
  for (const [path, item] of Object.entries(openapi.paths)) {
    for (const [method, operation] of Object.entries(item as Record<string, unknown>)) {
      const answers = (operation as { responses?: Record<string, { $ref?: string }> }).responses;
      for (const [status, answer] of Object.entries(answers ?? {})) {
        const name = answer.$ref?.match(/^#\/components\/responses\/(\w+)$/)?.[1];
        if (name === undefined) continue;
        const codes = codesOf(name);
        assert.ok(codes.length > 0, `${name} names its codes`);
        for (const code of codes) {
          assert.ok((ERROR_CODES as readonly string[]).includes(code), `${name}: ${code}`);
          // A request line past the limit is an invalid request whose status RFC 9112 §3 names.
          if (status === "414" && code === "validation_failed") continue;
          assert.equal(
            STATUS_OF[code as keyof typeof STATUS_OF],
            Number(status),
            `${method} ${path}: ${status} ${name} names ${code}`,
          );
        }
        checked++;
      }
    }
  }
  assert.ok(checked > 50, `${checked} error responses`);
});

// ---- a barrage of bad input ----

/** One malformed request: method, path, body (text or bytes; undefined: none), content type. */
type Bad = [
  method: string,
  path: string,
  body?: string | Uint8Array<ArrayBuffer>,
  contentType?: string | null,
];

function barrage(ids: { pending: number; leased: number; dead: number }, token: string): Bad[] {
  const deep = "[".repeat(100_000) + "]".repeat(100_000);
  const { pending, leased, dead } = ids;
  return [
    // garbage bodies
    ["POST", "/v1/queues/q/jobs", ""],
    ["POST", "/v1/queues/q/jobs", "\u0000\u0001\u0002"],
    ["POST", "/v1/queues/q/jobs", new Uint8Array([0xff, 0xd8, 0xff, 0xe0])],
    ["POST", "/v1/queues/q/jobs", "{".repeat(10_000)],
    ["POST", "/v1/queues/q/jobs", "true"],
    ["POST", "/v1/queues/q/jobs", "12345678901234567890"],
    ["POST", "/v1/queues/q/jobs", "\uFEFF{}"],
    ["POST", "/v1/queues/q/jobs", `{"payload":1}{"payload":2}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"payload":2,"priority":"x"}`],
    // huge numbers
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"priority":1e308}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"priority":-1e999}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"max_attempts":9007199254740993}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"delay_ms":1e300}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"run_at":1e300}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"lease_ms":1e21}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"backoff":{"base_ms":1,"max_ms":1e100}}`],
    ["POST", "/v1/queues/q/leases", `{"max":1e10}`],
    ["POST", "/v1/queues/q/leases", `{"wait_ms":1e400}`],
    ["GET", "/v1/queues/q/dead?limit=99999999999999999999"],
    ["GET", "/v1/queues/q/dead?after=1e3"],
    // nested arrays and odd shapes
    ["POST", "/v1/queues/q/jobs", `{"jobs":${deep}}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"key":${deep}}`],
    ["POST", "/v1/queues/q/jobs", `{"jobs":[[[[{"payload":1}]]]]}`],
    ["POST", "/v1/queues/q/jobs", `{"jobs":[{"payload":1},null]}`],
    ["POST", "/v1/queues/q/jobs", `{"jobs":[{"payload":1},{"payload":2,"priority":[1]}]}`],
    ["POST", "/v1/queues/q/jobs", `{"jobs":"all"}`],
    ["POST", "/v1/queues/q/leases", `{"max":[1]}`],
    ["POST", `/v1/queues/q/dead/requeue`, `{"ids":[[${dead}]]}`],
    ["POST", `/v1/queues/q/dead/requeue`, `{"ids":["${dead}"]}`],
    ["POST", `/v1/queues/q/dead/requeue`, `{"ids":{"0":${dead}}}`],
    // __proto__ and friends
    ["POST", "/v1/queues/q/jobs", `{"__proto__":{"payload":1}}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"__proto__":null}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"constructor":{"prototype":{"x":1}}}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"backoff":{"__proto__":{"base_ms":1}}}`],
    ["POST", "/v1/queues/q/jobs", `{"jobs":[{"payload":1}],"__proto__":[]}`],
    ["POST", "/v1/queues/q/leases", `{"__proto__":{"max":5}}`],
    ["POST", `/v1/queues/q/dead/requeue`, `{"__proto__":{"ids":null}}`],
    ["POST", `/v1/jobs/${leased}/ack`, `{"token":"${token}","__proto__":{}}`],
    ["POST", `/v1/jobs/${leased}/ack`, `{"__proto__":{"token":"${token}"}}`],
    // wrong types, including with the real token (the lease must survive)
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"priority":{}}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"delay_ms":"10"}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"max_attempts":true}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"key":{"k":1}}`],
    ["POST", "/v1/queues/q/jobs", `{"payload":1,"backoff":"fast"}`],
    ["POST", "/v1/queues/q/leases", `{"lease_ms":"1s"}`],
    ["POST", "/v1/queues/q/leases", `"max"`],
    ["POST", `/v1/jobs/${leased}/ack`, `{"token":["${token}"]}`],
    ["POST", `/v1/jobs/${leased}/ack`, `{"token":"${token}","result":1,"extra":2}`],
    ["POST", `/v1/jobs/${leased}/nack`, `{"token":"${token}","delay_ms":-5}`],
    ["POST", `/v1/jobs/${leased}/nack`, `{"token":"${token}","dead":1}`],
    ["POST", `/v1/jobs/${leased}/nack`, `{"token":"${token}","error":{"msg":"x"}}`],
    ["POST", `/v1/jobs/${leased}/nack`, `{"token":"${token}","delay_ms":0.5}`],
    ["POST", `/v1/jobs/${leased}/extend`, `{"token":"${token}","lease_ms":50}`],
    ["POST", `/v1/jobs/${leased}/extend`, `{"token":"${token}","lease_ms":"1h"}`],
    ["POST", `/v1/jobs/${leased}/checkpoint`, `{"token":"${token}"}`],
    ["POST", `/v1/jobs/${leased}/checkpoint`, `[{"token":"${token}","data":1}]`],
    ["POST", `/v1/jobs/${leased}/ack`, `{"token":"${token}"}`, "text/plain"],
    ["POST", `/v1/jobs/${leased}/ack`, `{"token":"${token}x"}`],
    ["POST", `/v1/jobs/${leased}/ack`, `{"token":"${token.toUpperCase()}!"}`],
    ["POST", `/v1/jobs/${pending}/ack`, `{"token":"${token}"}`],
    ["POST", `/v1/jobs/${pending}/nack`, `{"token":"${token}","dead":true}`],
    ["POST", `/v1/jobs/${dead}/nack`, `{"token":"${token}"}`],
    ["POST", `/v1/jobs/${pending}/extend`, `{"token":"${token}"}`],
    // wrong methods
    ["PUT", `/v1/jobs/${pending}`, `{"state":"done"}`],
    ["PATCH", `/v1/jobs/${pending}`, `{"priority":9}`],
    ["POST", `/v1/jobs/${pending}`, `{"payload":2}`],
    ["GET", `/v1/jobs/${leased}/ack`],
    ["DELETE", `/v1/queues/q`],
    ["DELETE", `/v1/queues/q/jobs`],
    ["PUT", `/v1/queues/q/pause`],
    ["GET", `/v1/queues/q/dead/requeue`],
    ["OPTIONS", `/v1/queues/q/jobs`],
    // odd paths, percent-encoding included
    ["DELETE", `/v1/jobs/%${pending}`],
    ["DELETE", `/v1/jobs/${pending}%00`],
    ["DELETE", `/v1/jobs/${pending}.0`],
    ["DELETE", `/v1/jobs/+${pending}`],
    ["DELETE", `/v1/jobs/${pending}e0`],
    ["DELETE", `/v1/jobs/0x${pending.toString(16)}`],
    ["DELETE", `/v1/jobs/%E2%80%AE${pending}`],
    ["DELETE", "/v1/jobs/99999999999999999999"],
    ["DELETE", "/v1/jobs/999999"],
    ["GET", "/v1/jobs/%FF%FE"],
    ["GET", "/v1/jobs/%"],
    ["POST", `/v1/jobs/${leased}/ack%2Fnack`, `{"token":"${token}"}`],
    ["POST", "/v1/queues/%71%00/jobs", `{"payload":1}`],
    ["POST", "/v1/queues/%ED%A0%80/jobs", `{"payload":1}`],
    ["POST", "/v1/queues/q%2F..%2Fother/jobs", `{"payload":1}`],
    ["POST", `/v1/queues/${"q".repeat(5000)}/jobs`, `{"payload":1}`],
    ["POST", "/v1/queues/q/dead%2Frequeue", "{}"],
    ["GET", "/v1/queues/q/dead?limit=-1"],
    ["GET", "/v1/queues/q/dead?limit=%00"],
    ["GET", "/v1/queues/q/dead?after=%FF"],
    ["GET", "/%2e%2e/%2e%2e/etc/passwd"],
    ["GET", "/v1/ws2"],
  ];
}

Deno.test("a barrage of malformed requests leaves every job unchanged and gets no 5xx", async () => {
  await using server = await startTestServer({ config: { maxBody: 1024 * 1024 } });
  const pending = await enqueue(server, "q", { payload: { n: 1 }, key: "p", priority: 2 });
  const delayed = await enqueue(server, "q", { payload: [2], delay_ms: 600_000 });
  const leasedId = await enqueue(server, "q", { payload: "leased", priority: 9 });
  const delivery = await leaseOne(server, "q");
  assert.equal(delivery.id, leasedId);
  const dead = await enqueue(server, "q", { payload: null, max_attempts: 1, priority: 8 });
  const d = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${dead}/nack`, { token: d.lease.token, error: "boom" });
  const done = await enqueue(server, "q", { payload: true, priority: 7 });
  const dd = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${done}/ack`, { token: dd.lease.token, result: "ok" });
  const cancelled = await enqueue(server, "q", { payload: 6 });
  await server.request("DELETE", `/v1/jobs/${cancelled}`);
  await server.request("POST", "/v1/queues/paused/pause");
  const ids = [pending, delayed, leasedId, dead, done, cancelled];
  const before = await Promise.all(ids.map((id) => server.request("GET", `/v1/jobs/${id}`)));
  const queuesBefore = await server.request("GET", "/v1/queues");

  for (
    const [method, path, body, contentType] of barrage(
      { pending, leased: leasedId, dead },
      delivery.lease.token,
    )
  ) {
    const label = `${method} ${path.slice(0, 80)} ${
      typeof body === "string" ? body.slice(0, 80) : ""
    }`;
    const answer = await sendRaw(
      server,
      method,
      path,
      body ?? null,
      contentType === undefined ? "application/json" : contentType,
    );
    assert.ok(
      answer.status >= 400 && answer.status < 500,
      `${label} → ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`,
    );
    assert.deepEqual(Object.keys(answer.body), ["error"], label);
    assert.deepEqual(Object.keys(answer.body.error).sort(), ["code", "message"], label);
  }

  const raws = [
    "GARBAGE\r\n\r\n",
    "GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
    "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n",
    "GET /healthz HTTP/1.1\r\nHost: [::1\r\n\r\n",
    "GET /v1/queues HTTP/1.1\r\nHost: x:99999\r\n\r\n",
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n{}",
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n{}",
    'POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 13\r\nContent-Length: 14\r\n\r\n{"payload":1}',
    'POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 13\r\nTransfer-Encoding: chunked\r\n\r\n{"payload":1}',
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    'POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"pay\r\n',
    'POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\n\r\n{"payload":1}',
    `POST /v1/jobs/${leasedId}/nack HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 300\r\n\r\n{"token":"${delivery.lease.token}","dead":true}`,
  ];
  for (const text of raws) {
    using raw = await RawHttp.connect(server);
    await raw.write(text);
    await raw.endWrite();
    const answer = parseRawAnswer(await raw.readAll());
    assert.ok(answer.status < 500, `${JSON.stringify(text.slice(0, 60))} → ${answer.status}`);
  }

  const after = await Promise.all(ids.map((id) => server.request("GET", `/v1/jobs/${id}`)));
  for (let i = 0; i < ids.length; i++) {
    assert.equal(after[i].status, 200, `job ${ids[i]} is still there`);
    assert.deepEqual(after[i].body, before[i].body, `job ${ids[i]} is unchanged`);
  }
  assert.deepEqual((await server.request("GET", "/v1/queues")).body, queuesBefore.body);
  assert.deepEqual((await server.request("GET", "/healthz")).body, { status: "ok" });
  const metrics = await server.request("GET", "/metrics");
  assert.doesNotMatch(metrics.body, /status="5\d\d"/, "no 5xx was ever answered");
  // The leased job's lease survived every attempt on it.
  const ack = await server.request("POST", `/v1/jobs/${leasedId}/ack`, {
    token: delivery.lease.token,
  });
  assert.equal(ack.status, 200);
  assert.equal((await leaseOne(server, "q")).id, pending);
});

Deno.test("a barrage of bad requests does not disturb a waiting long-poll", async () => {
  await using server = await startTestServer();
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  for (const body of ["{", "[]", `{"payload":1,"x":1}`, `{"jobs":[]}`]) {
    const answer = await sendRaw(server, "POST", "/v1/queues/q/jobs", body);
    assert.equal(answer.status, 400);
  }
  const id = await enqueue(server, "q", { payload: "real" });
  assert.deepEqual((await poll).body.jobs.map((j: { id: number }) => j.id), [id]);
});
