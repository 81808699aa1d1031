/**
 * Bearer-token auth over real HTTP (DESIGN §3 auth paragraph, §7 scopes): 401 without a valid
 * token, 403 for a missing scope or a queue outside the token's globs, sha256 entries, and the
 * routes that stay open.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { enqueue, leaseOne } from "../helpers/http_calls.ts";
import { type Answer, startTestServer, type TestServer } from "../helpers/test_server.ts";

const PRODUCER = "producer-token-0123456789";
const CONSUMER = "consumer-token-0123456789";
const ADMIN = "admin-token-abcdefghijklmnop";
const BILLING = "billing-token-0123456789ab";
const MAIL_ADMIN = "mail-admin-token-012345678";

const ENTRIES = [
  { name: "producer", token: PRODUCER, scopes: ["produce"] },
  { name: "consumer", token: CONSUMER, scopes: ["consume"] },
  { name: "ops", sha256: createHash("sha256").update(ADMIN).digest("hex"), scopes: ["admin"] },
  { name: "billing", token: BILLING, scopes: ["produce", "consume"], queues: ["billing.*"] },
  { name: "mail-ops", token: MAIL_ADMIN, scopes: ["admin"], queues: ["mail", "mail-*"] },
];

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A test server with the tokens file above, written into its own temp dir. */
function startAuthServer(): Promise<TestServer> {
  return startTestServer({ tokens: ENTRIES });
}

function assertError(answer: Answer, status: number, code: string): void {
  const context = JSON.stringify(answer.body);
  assert.equal(answer.status, status, context);
  assert.deepEqual(Object.keys(answer.body), ["error"], context);
  assert.equal(answer.body.error.code, code, context);
  assert.equal(typeof answer.body.error.message, "string");
}

/** Asserts a message names no secret. */
function assertNoSecrets(answer: Answer): void {
  const text = JSON.stringify(answer.body);
  for (const secret of [PRODUCER, CONSUMER, ADMIN, BILLING, MAIL_ADMIN]) {
    assert.ok(!text.includes(secret), `answer leaks a token: ${text}`);
  }
}

/** A leased job in `queue`, enqueued and leased with the admin token. */
async function leasedJob(
  server: TestServer,
  queue: string,
): Promise<{ id: number; token: string }> {
  const id = await enqueue(server, queue, { payload: 1 }, bearer(ADMIN));
  const answer = await server.request(
    "POST",
    `/v1/queues/${queue}/leases`,
    { max: 1 },
    bearer(ADMIN),
  );
  assert.equal(answer.body.jobs[0].id, id);
  return { id, token: answer.body.jobs[0].lease.token };
}

/** Every non-open route, as [method, path, body]. Job routes use job `id`. */
function protectedRoutes(id: number): [string, string, unknown][] {
  return [
    ["POST", "/v1/queues/q/jobs", { payload: 1 }],
    ["POST", "/v1/queues/q/leases", {}],
    ["POST", `/v1/jobs/${id}/ack`, { token: "not-the-lease-token" }],
    ["POST", `/v1/jobs/${id}/nack`, { token: "not-the-lease-token" }],
    ["POST", `/v1/jobs/${id}/extend`, { token: "not-the-lease-token" }],
    ["POST", `/v1/jobs/${id}/checkpoint`, { token: "not-the-lease-token", data: 1 }],
    ["GET", `/v1/jobs/${id}`, undefined],
    ["DELETE", `/v1/jobs/${id}`, undefined],
    ["GET", "/v1/queues", undefined],
    ["GET", "/v1/queues/q", undefined],
    ["POST", "/v1/queues/q/pause", undefined],
    ["POST", "/v1/queues/q/resume", undefined],
    ["GET", "/v1/queues/q/dead", undefined],
    ["POST", "/v1/queues/q/dead/requeue", {}],
    ["GET", "/metrics", undefined],
  ];
}

Deno.test("with tokens configured, every API route without a token answers 401", async (t) => {
  await using server = await startAuthServer();
  const { id } = await leasedJob(server, "q");
  for (const [method, path, body] of protectedRoutes(id)) {
    await t.step(`${method} ${path}`, async () => {
      const answer = await server.request(method, path, body);
      assertError(answer, 401, "unauthorized");
      assert.equal(answer.headers.get("www-authenticate"), "Bearer");
    });
  }
  assert.equal(
    (await server.request("GET", `/v1/jobs/${id}`, undefined, bearer(ADMIN))).body.state,
    "leased",
  );
});

Deno.test("a wrong, malformed or non-Bearer credential answers 401 and echoes no token", async (t) => {
  await using server = await startAuthServer();
  const digest = createHash("sha256").update(ADMIN).digest("hex");
  const headers: [string, string][] = [
    ["a wrong token", "Bearer wrong-token-0123456789"],
    ["a token with one more character", `Bearer ${PRODUCER}x`],
    ["a token missing its last character", `Bearer ${PRODUCER.slice(0, -1)}`],
    ["the sha256 digest instead of the token", `Bearer ${digest}`],
    ["Basic auth", `Basic ${btoa(`user:${PRODUCER}`)}`],
    ["a bare token without a scheme", PRODUCER],
    ["Bearer without a token", "Bearer"],
    ["Bearer with blanks only", "Bearer    "],
    ["an empty header", ""],
    ["a token in another case", `Bearer ${PRODUCER.toUpperCase()}`],
  ];
  for (const [what, authorization] of headers) {
    await t.step(what, async () => {
      const answer = await server.request("POST", "/v1/queues/q/jobs", { payload: 1 }, {
        authorization,
      });
      assertError(answer, 401, "unauthorized");
      assertNoSecrets(answer);
    });
  }
  const stats = await server.request("GET", "/v1/queues/q", undefined, bearer(ADMIN));
  assert.equal(stats.body.counts.pending, 0, "nothing was enqueued");
});

Deno.test("the Bearer scheme is matched without regard to case", async () => {
  await using server = await startAuthServer();
  for (const scheme of ["bearer", "BEARER", "Bearer"]) {
    const answer = await server.request("POST", "/v1/queues/q/jobs", { payload: 1 }, {
      authorization: `${scheme} ${PRODUCER}`,
    });
    assert.equal(answer.status, 201, scheme);
  }
});

Deno.test("auth is checked before the body is read", async () => {
  await using server = await startAuthServer();
  const garbage = await server.request("POST", "/v1/queues/q/jobs", "{not json");
  assertError(garbage, 401, "unauthorized");
  const forbidden = await server.request(
    "POST",
    "/v1/queues/q/jobs",
    "{not json",
    bearer(CONSUMER),
  );
  assertError(forbidden, 403, "forbidden");
});

Deno.test("healthz, readyz and the dashboard page are open without a token", async () => {
  await using server = await startAuthServer();
  assert.deepEqual((await server.request("GET", "/healthz")).body, { status: "ok" });
  assert.deepEqual((await server.request("GET", "/readyz")).body, { status: "ready" });
  const page = await server.request("GET", "/");
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
  const withBadToken = await server.request(
    "GET",
    "/healthz",
    undefined,
    bearer("wrong-token-value-xyz"),
  );
  assert.equal(withBadToken.status, 200, "an open route ignores credentials");
});

Deno.test("GET /metrics needs the admin scope", async () => {
  await using server = await startAuthServer();
  assertError(await server.request("GET", "/metrics"), 401, "unauthorized");
  assertError(
    await server.request("GET", "/metrics", undefined, bearer(PRODUCER)),
    403,
    "forbidden",
  );
  assertError(
    await server.request("GET", "/metrics", undefined, bearer(CONSUMER)),
    403,
    "forbidden",
  );
  assertError(
    await server.request("GET", "/metrics", undefined, bearer(BILLING)),
    403,
    "forbidden",
  );
  const answer = await server.request("GET", "/metrics", undefined, bearer(ADMIN));
  assert.equal(answer.status, 200);
  assert.match(answer.body, /^# HELP /);
});

/** Which tokens may pass each route (the route's own answer follows, never 401 or 403). */
const SCOPE_MATRIX: [string, (id: number) => [string, string, unknown], string[]][] = [
  ["enqueue", () => ["POST", "/v1/queues/q/jobs", { payload: 1 }], ["producer", "admin"]],
  ["lease", () => ["POST", "/v1/queues/q/leases", { max: 1 }], ["consumer", "admin"]],
  ["ack", (id) => ["POST", `/v1/jobs/${id}/ack`, { token: "stale-token" }], ["consumer", "admin"]],
  ["nack", (id) => ["POST", `/v1/jobs/${id}/nack`, { token: "stale-token" }], [
    "consumer",
    "admin",
  ]],
  ["extend", (id) => ["POST", `/v1/jobs/${id}/extend`, { token: "stale-token" }], [
    "consumer",
    "admin",
  ]],
  [
    "checkpoint",
    (id) => ["POST", `/v1/jobs/${id}/checkpoint`, { token: "stale-token", data: 1 }],
    ["consumer", "admin"],
  ],
  ["GET job", (id) => ["GET", `/v1/jobs/${id}`, undefined], ["producer", "consumer", "admin"]],
  ["GET queues", () => ["GET", "/v1/queues", undefined], ["producer", "consumer", "admin"]],
  ["GET queue", () => ["GET", "/v1/queues/q", undefined], ["producer", "consumer", "admin"]],
  ["pause", () => ["POST", "/v1/queues/other/pause", undefined], ["admin"]],
  ["resume", () => ["POST", "/v1/queues/other/resume", undefined], ["admin"]],
  ["dead list", () => ["GET", "/v1/queues/q/dead", undefined], ["admin"]],
  ["requeue", () => ["POST", "/v1/queues/q/dead/requeue", {}], ["admin"]],
  ["cancel", () => ["DELETE", "/v1/jobs/999999", undefined], ["admin"]],
  ["metrics", () => ["GET", "/metrics", undefined], ["admin"]],
];

Deno.test("each scope opens exactly the routes §7 lists", async (t) => {
  await using server = await startAuthServer();
  const { id } = await leasedJob(server, "q");
  const tokens: Record<string, string> = { producer: PRODUCER, consumer: CONSUMER, admin: ADMIN };
  for (const [what, route, allowed] of SCOPE_MATRIX) {
    for (const [name, token] of Object.entries(tokens)) {
      const [method, path, body] = route(id);
      const may = allowed.includes(name);
      await t.step(`${name} ${may ? "may" : "may not"} ${what}`, async () => {
        const answer = await server.request(method, path, body, bearer(token));
        if (may) {
          assert.ok(
            answer.status < 500 && answer.status !== 401 && answer.status !== 403,
            `${answer.status} ${JSON.stringify(answer.body)}`,
          );
        } else {
          assertError(answer, 403, "forbidden");
          assert.match(
            answer.body.error.message,
            new RegExp(`"${name === "admin" ? "ops" : name}"`),
          );
          assertNoSecrets(answer);
        }
      });
    }
  }
  const job = await server.request("GET", `/v1/jobs/${id}`, undefined, bearer(ADMIN));
  assert.equal(job.body.state, "leased", "no refused call touched the job");
});

Deno.test("a consume token can run a job's whole lease end to end", async () => {
  await using server = await startAuthServer();
  const id = await enqueue(server, "q", { payload: 1 }, bearer(PRODUCER));
  const jobs = await server.request("POST", "/v1/queues/q/leases", {}, bearer(CONSUMER));
  const { token } = jobs.body.jobs[0].lease;
  const calls: [string, unknown][] = [
    ["checkpoint", { token, data: { step: 1 } }],
    ["extend", { token, lease_ms: 5000 }],
    ["ack", { token, result: "ok" }],
  ];
  for (const [op, body] of calls) {
    const answer = await server.request("POST", `/v1/jobs/${id}/${op}`, body, bearer(CONSUMER));
    assert.equal(answer.status, 200, `${op}: ${JSON.stringify(answer.body)}`);
  }
  const job = await server.request("GET", `/v1/jobs/${id}`, undefined, bearer(PRODUCER));
  assert.deepEqual([job.body.state, job.body.result], ["done", "ok"]);
});

Deno.test("a sha256 entry authenticates the token whose digest it holds", async () => {
  await using server = await startAuthServer();
  const answer = await server.request("POST", "/v1/queues/q/pause", undefined, bearer(ADMIN));
  assert.deepEqual([answer.status, answer.body], [200, { name: "q", paused: true }]);
});

Deno.test("a queue glob admits matching queues only, dots included", async (t) => {
  await using server = await startAuthServer();
  const cases: [string, number][] = [
    ["billing.eu", 201],
    ["billing.eu.invoices", 201],
    ["billing.", 201],
    ["billing", 403],
    ["billingx", 403],
    ["billing-eu", 403],
    ["xbilling.eu", 403],
    ["mail", 403],
  ];
  for (const [queue, status] of cases) {
    await t.step(`${queue} → ${status}`, async () => {
      const answer = await server.request(
        "POST",
        `/v1/queues/${queue}/jobs`,
        { payload: 1 },
        bearer(BILLING),
      );
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      if (status === 403) {
        assertError(answer, 403, "forbidden");
        assert.match(answer.body.error.message, new RegExp(`"${queue.replace(".", "\\.")}"`));
      }
    });
  }
});

Deno.test("a queue-restricted token gets 403 for every call on another queue", async (t) => {
  await using server = await startAuthServer();
  const other = await leasedJob(server, "mail");
  const pendingOther = await enqueue(server, "mail", { payload: 2 }, bearer(ADMIN));
  const calls: [string, string, string, unknown][] = [
    ["enqueue", "POST", "/v1/queues/mail/jobs", { payload: 1 }],
    ["lease", "POST", "/v1/queues/mail/leases", { max: 5 }],
    ["ack with the real token", "POST", `/v1/jobs/${other.id}/ack`, { token: other.token }],
    ["nack with the real token", "POST", `/v1/jobs/${other.id}/nack`, {
      token: other.token,
      dead: true,
    }],
    ["extend with the real token", "POST", `/v1/jobs/${other.id}/extend`, { token: other.token }],
    ["checkpoint with the real token", "POST", `/v1/jobs/${other.id}/checkpoint`, {
      token: other.token,
      data: "x",
    }],
    ["GET job", "GET", `/v1/jobs/${pendingOther}`, undefined],
    ["GET queue stats", "GET", "/v1/queues/mail", undefined],
  ];
  for (const [what, method, path, body] of calls) {
    await t.step(what, async () => {
      assertError(await server.request(method, path, body, bearer(BILLING)), 403, "forbidden");
    });
  }
  const job = await server.request("GET", `/v1/jobs/${other.id}`, undefined, bearer(ADMIN));
  assert.deepEqual([job.body.state, job.body.checkpoint], ["leased", null]);
  const stats = await server.request("GET", "/v1/queues/mail", undefined, bearer(ADMIN));
  assert.deepEqual(stats.body.counts, {
    blocked: 0,
    pending: 1,
    delayed: 0,
    leased: 1,
    done: 0,
    dead: 0,
    cancelled: 0,
  });
  const ack = await server.request(
    "POST",
    `/v1/jobs/${other.id}/ack`,
    { token: other.token },
    bearer(ADMIN),
  );
  assert.equal(ack.status, 200, "the lease is intact for its holder");
});

Deno.test("a queue-restricted admin token cannot cancel, pause or requeue elsewhere", async () => {
  await using server = await startAuthServer();
  const billingJob = await enqueue(server, "billing.eu", { payload: 1 }, bearer(ADMIN));
  assertError(
    await server.request("DELETE", `/v1/jobs/${billingJob}`, undefined, bearer(MAIL_ADMIN)),
    403,
    "forbidden",
  );
  for (const path of ["/v1/queues/billing.eu/pause", "/v1/queues/billing.eu/dead/requeue"]) {
    assertError(
      await server.request("POST", path, undefined, bearer(MAIL_ADMIN)),
      403,
      "forbidden",
    );
  }
  assertError(
    await server.request("GET", "/v1/queues/billing.eu/dead", undefined, bearer(MAIL_ADMIN)),
    403,
    "forbidden",
  );
  const mailJob = await enqueue(server, "mail-eu", { payload: 1 }, bearer(MAIL_ADMIN));
  const cancel = await server.request(
    "DELETE",
    `/v1/jobs/${mailJob}`,
    undefined,
    bearer(MAIL_ADMIN),
  );
  assert.deepEqual([cancel.status, cancel.body.state], [200, "cancelled"]);
  const job = await server.request("GET", `/v1/jobs/${billingJob}`, undefined, bearer(ADMIN));
  assert.equal(job.body.state, "pending");
});

Deno.test("a job-id call with a restricted token answers 404 for an unknown id", async () => {
  await using server = await startAuthServer();
  const answer = await server.request(
    "POST",
    "/v1/jobs/424242/ack",
    { token: "t" },
    bearer(BILLING),
  );
  assertError(answer, 404, "not_found");
});

Deno.test("GET /v1/queues answers any valid token, listing only the queues it may use", async () => {
  await using server = await startAuthServer();
  for (const queue of ["billing.eu", "billing.us", "mail", "mail-eu", "sms"]) {
    await enqueue(server, queue, { payload: 1 }, bearer(ADMIN));
  }
  const names = async (token: string) => {
    const answer = await server.request("GET", "/v1/queues", undefined, bearer(token));
    assert.equal(answer.status, 200);
    return answer.body.queues.map((s: { name: string }) => s.name).sort();
  };
  assert.deepEqual(await names(BILLING), ["billing.eu", "billing.us"]);
  assert.deepEqual(await names(MAIL_ADMIN), ["mail", "mail-eu"]);
  const all = ["billing.eu", "billing.us", "mail", "mail-eu", "sms"];
  assert.deepEqual(await names(PRODUCER), all);
  assert.deepEqual(await names(CONSUMER), all);
  assert.deepEqual(await names(ADMIN), all);
});

Deno.test("a queue-restricted token works fully on its own queues", async () => {
  await using server = await startAuthServer();
  const id = await enqueue(server, "billing.eu", { payload: { amount: 5 } }, bearer(BILLING));
  const jobs = await server.request("POST", "/v1/queues/billing.eu/leases", {}, bearer(BILLING));
  assert.equal(jobs.body.jobs[0].id, id);
  const ack = await server.request("POST", `/v1/jobs/${id}/ack`, {
    token: jobs.body.jobs[0].lease.token,
  }, bearer(BILLING));
  assert.equal(ack.status, 200);
  const stats = await server.request("GET", "/v1/queues/billing.eu", undefined, bearer(BILLING));
  assert.equal(stats.body.counts.done, 1);
});

Deno.test("without tokens every route is open", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  await leaseOne(server, "q");
  assert.equal((await server.request("GET", "/metrics")).status, 200);
  assert.equal((await server.request("DELETE", `/v1/jobs/${id}`)).status, 200);
  const withJunk = await server.request(
    "GET",
    "/v1/queues",
    undefined,
    bearer("anything-at-all-here"),
  );
  assert.equal(withJunk.status, 200, "a token is ignored when auth is off");
});
