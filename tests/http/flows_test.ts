/**
 * Flows over HTTP (docs/api.md, "Flows"): `POST /v1/flows`, `GET /v1/flows/{id}`, `GET
 * /v1/flows`, `DELETE /v1/flows/{id}` and `POST /v1/jobs/{id}/flow`, on a real server with
 * SQLite and PostgreSQL: what is stored, the order jobs run in, what their deliveries carry, and
 * the errors that name a node. Every answer is also checked against lib/http/openapi.json.
 */

import assert from "node:assert/strict";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { type Answer, startTestServer, type TestServer } from "../helpers/test_server.ts";

const pg = await pgTestDatabase();

const STORES: { name: string; config: () => Partial<ServeConfig>; ignore: boolean }[] = [
  { name: "sqlite", config: () => ({}), ignore: false },
  { name: "postgres", config: () => pgServerConfig(pg!, pg!.schema()), ignore: pg === null },
];

// deno-lint-ignore no-explicit-any
type Json = any;

function ok(answer: Answer, status: number): Json {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  return answer.body;
}

/** Leases one job of `queue`; answers its delivery, or null when none is ready. */
async function leaseOne(server: TestServer, queue: string): Promise<Json | null> {
  const body = ok(await server.request("POST", `/v1/queues/${queue}/leases`, { max: 1 }), 200);
  return body.jobs[0] ?? null;
}

async function ack(server: TestServer, delivery: Json, result?: unknown): Promise<void> {
  const body = result === undefined
    ? { token: delivery.lease.token }
    : { token: delivery.lease.token, result };
  ok(await server.request("POST", `/v1/jobs/${delivery.id}/ack`, body), 200);
}

async function fail(server: TestServer, delivery: Json, error: string): Promise<void> {
  ok(
    await server.request("POST", `/v1/jobs/${delivery.id}/nack`, {
      token: delivery.lease.token,
      error,
      dead: true,
    }),
    200,
  );
}

async function stateOf(server: TestServer, id: number, headers?: HeadersInit): Promise<string> {
  return ok(await server.request("GET", `/v1/jobs/${id}`, undefined, headers), 200).state;
}

function node(ref: string, queue: string, depends_on?: unknown, extra: object = {}) {
  return {
    ref,
    queue,
    payload: { ref },
    ...(depends_on === undefined ? {} : { depends_on }),
    ...extra,
  };
}

for (const store of STORES) {
  const test = (name: string, fn: (server: TestServer) => Promise<void>) =>
    Deno.test({
      name: `${store.name}: ${name}`,
      ignore: store.ignore,
      fn: async () => {
        await using server = await startTestServer({ config: store.config() });
        await fn(server);
      },
    });

  test("POST /v1/flows stores every node, blocked behind its prerequisites", async (server) => {
    const created = ok(
      await server.request("POST", "/v1/flows", {
        nodes: [node("a", "chain"), node("b", "chain", ["a"]), node("c", "chain", ["b"])],
      }),
      201,
    );
    assert.equal(created.deduplicated, false);
    assert.deepEqual(Object.keys(created.jobs).sort(), ["a", "b", "c"]);
    const job = ok(await server.request("GET", `/v1/jobs/${created.jobs.b}`), 200);
    assert.equal(job.state, "blocked");
    assert.deepEqual(job.flow, { id: created.id, ref: "b" });
    assert.deepEqual(job.payload, { ref: "b" });
    assert.equal(await stateOf(server, created.jobs.a), "pending");
    const stats = ok(await server.request("GET", "/v1/queues/chain"), 200);
    assert.deepEqual([stats.counts.blocked, stats.counts.pending], [2, 1]);
  });

  test("a chain a → b → c runs in order, each delivery carrying its prerequisites' outcomes", async (server) => {
    const { jobs } = ok(
      await server.request("POST", "/v1/flows", {
        nodes: [node("c", "chain", ["b"]), node("b", "chain", ["a"]), node("a", "chain")],
      }),
      201,
    );
    const a = await leaseOne(server, "chain");
    assert.equal(a.id, jobs.a);
    assert.equal(a.prerequisites, undefined, "a node without prerequisites carries none");
    assert.equal(await leaseOne(server, "chain"), null, "b waits for a");
    await ack(server, a, { width: 512 });
    const b = await leaseOne(server, "chain");
    assert.equal(b.id, jobs.b);
    assert.deepEqual(b.prerequisites, [{
      ref: "a",
      id: jobs.a,
      state: "done",
      result: { width: 512 },
      last_error: null,
      result_omitted: false,
    }]);
    await ack(server, b, "resized");
    const c = await leaseOne(server, "chain");
    assert.equal(c.id, jobs.c);
    assert.deepEqual(c.prerequisites.map((o: Json) => [o.ref, o.state, o.result]), [
      ["b", "done", "resized"],
    ]);
    await ack(server, c);
    const flow = ok(await server.request("GET", `/v1/flows/${c.flow.id}`), 200);
    assert.equal(flow.counts.done, 3);
    assert.notEqual(flow.finished_at, null);
  });

  test("a failed prerequisite cancels, is ignored by, or runs its dependents by their edges", async (server) => {
    const { jobs } = ok(
      await server.request("POST", "/v1/flows", {
        nodes: [
          node("x", "work"),
          node("cancel", "after", [{ ref: "x" }]),
          node("ignore", "after", [{ ref: "x", on_failure: "ignore" }]),
          node("run", "after", [{ ref: "x", on_failure: "run" }]),
          node("beyond", "after", ["cancel"]),
        ],
      }),
      201,
    );
    await fail(server, await leaseOne(server, "work"), "disk full");
    assert.equal(await stateOf(server, jobs.cancel), "cancelled");
    assert.equal(await stateOf(server, jobs.beyond), "cancelled", "cancelled in turn");
    const cancelled = ok(await server.request("GET", `/v1/jobs/${jobs.cancel}`), 200);
    assert.match(cancelled.last_error, /"x".*dead/);
    const delivered = new Map<number, Json>();
    for (let d = await leaseOne(server, "after"); d !== null; d = await leaseOne(server, "after")) {
      delivered.set(d.id, d);
    }
    assert.deepEqual([...delivered.keys()].sort(), [jobs.ignore, jobs.run].sort());
    assert.deepEqual(
      delivered.get(jobs.ignore).prerequisites,
      [],
      "an ignored failure is left out",
    );
    assert.deepEqual(delivered.get(jobs.run).prerequisites, [{
      ref: "x",
      id: jobs.x,
      state: "dead",
      result: null,
      last_error: "disk full",
      result_omitted: false,
    }]);
  });

  test("a flow's key deduplicates it: the second answers the first, 200", async (server) => {
    const body = { key: "order-42", nodes: [node("a", "q"), node("b", "q", ["a"])] };
    const first = ok(await server.request("POST", "/v1/flows", body), 201);
    const again = ok(await server.request("POST", "/v1/flows", body), 200);
    assert.deepEqual(again, { ...first, deduplicated: true });
    const stats = ok(await server.request("GET", "/v1/queues/q"), 200);
    assert.equal(stats.counts.pending + stats.counts.blocked, 2, "nothing more stored");
  });

  test("GET /v1/flows/{id} shows each node; GET /v1/flows pages; DELETE cancels what has not ended", async (server) => {
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        ok(
          await server.request("POST", "/v1/flows", {
            key: `f${i}`,
            nodes: [node("a", "q"), node("b", "q", [{ ref: "a", on_failure: "run" }])],
          }),
          201,
        ).id,
      );
    }
    const flow = ok(await server.request("GET", `/v1/flows/${ids[0]}`), 200);
    assert.equal(flow.key, "f0");
    assert.equal(flow.finished_at, null);
    assert.deepEqual(flow.nodes.map((n: Json) => [n.ref, n.queue, n.state, n.depends_on]), [
      ["a", "q", "pending", []],
      ["b", "q", "blocked", [{ ref: "a", on_failure: "run" }]],
    ]);
    assert.deepEqual([flow.counts.pending, flow.counts.blocked], [1, 1]);

    const first = ok(await server.request("GET", "/v1/flows?limit=2"), 200);
    assert.deepEqual(first.flows.map((f: Json) => f.id), ids.slice(0, 2));
    assert.equal(first.next_after, ids[1]);
    assert.equal(first.flows[0].nodes, undefined, "a listing leaves the nodes out");
    const rest = ok(await server.request("GET", `/v1/flows?limit=2&after=${ids[1]}`), 200);
    assert.deepEqual([rest.flows.map((f: Json) => f.id), rest.next_after], [[ids[2]], null]);
    const newest = ok(await server.request("GET", "/v1/flows?order=newest&limit=2"), 200);
    assert.deepEqual([newest.flows.map((f: Json) => f.id), newest.next_after], [
      [ids[2], ids[1]],
      ids[1],
    ]);
    const older = ok(await server.request("GET", `/v1/flows?order=newest&after=${ids[1]}`), 200);
    assert.deepEqual([older.flows.map((f: Json) => f.id), older.next_after], [[ids[0]], null]);
    const wrong = await server.request("GET", "/v1/flows?order=latest");
    assert.equal(ok(wrong, 400).error.message, 'Invalid "order": expected oldest or newest');

    const a = await leaseOne(server, "q");
    assert.equal(a.flow.id, ids[0]);
    const cancelled = ok(await server.request("DELETE", `/v1/flows/${ids[0]}`), 200);
    assert.deepEqual(cancelled, { id: ids[0], cancelled: 2 });
    const after = ok(await server.request("GET", `/v1/flows/${ids[0]}`), 200);
    assert.deepEqual(after.nodes.map((n: Json) => n.state), ["cancelled", "cancelled"]);
    assert.notEqual(after.finished_at, null);
    const lost = await server.request("POST", `/v1/jobs/${a.id}/ack`, { token: a.lease.token });
    assert.equal(ok(lost, 409).error.code, "lease_lost", "the lease was revoked");
    assert.deepEqual(ok(await server.request("DELETE", `/v1/flows/${ids[0]}`), 200), {
      id: ids[0],
      cancelled: 0,
    });

    for (const method of ["GET", "DELETE"]) {
      const missing = await server.request(method, "/v1/flows/999999");
      assert.equal(ok(missing, 404).error.message, "Cannot find flow 999999: no such flow");
    }
  });

  test("a running node adds nodes to its flow with its lease token", async (server) => {
    const { id, jobs } = ok(
      await server.request("POST", "/v1/flows", {
        nodes: [node("crawl", "crawl"), node("report", "report", ["crawl"])],
      }),
      201,
    );
    const crawl = await leaseOne(server, "crawl");
    const added = ok(
      await server.request("POST", `/v1/jobs/${crawl.id}/flow`, {
        token: crawl.lease.token,
        nodes: [
          node("page-1", "pages"),
          node("page-2", "pages"),
          node("merge", "report", ["page-1", "page-2", "crawl"]),
        ],
      }),
      201,
    );
    assert.equal(added.id, id);
    assert.deepEqual(Object.keys(added.jobs).sort(), ["merge", "page-1", "page-2"]);
    const flow = ok(await server.request("GET", `/v1/flows/${id}`), 200);
    assert.deepEqual(flow.nodes.map((n: Json) => n.ref).sort(), [
      "crawl",
      "merge",
      "page-1",
      "page-2",
      "report",
    ]);
    await ack(server, crawl);
    assert.equal(await stateOf(server, jobs.report), "pending");
    assert.equal(await stateOf(server, added.jobs.merge), "blocked", "merge waits for its pages");
    for (let i = 0; i < 2; i++) await ack(server, await leaseOne(server, "pages"));
    assert.equal(await stateOf(server, added.jobs.merge), "pending");

    const stale = await server.request("POST", `/v1/jobs/${crawl.id}/flow`, {
      token: crawl.lease.token,
      nodes: [node("late", "pages")],
    });
    assert.equal(ok(stale, 409).error.code, "lease_lost");
    const next = await leaseOne(server, "report");
    const dup = await server.request("POST", `/v1/jobs/${next.id}/flow`, {
      token: next.lease.token,
      nodes: [node("page-1", "pages")],
    });
    assert.equal(ok(dup, 400).error.code, "validation_failed", "refs stay unique in the flow");
  });

  test("a join's outcomes stay within 256 KiB: results left out first, then whole outcomes", async (server) => {
    const big = "r".repeat(100 * 1024);
    const prereqs = Array.from({ length: 43 }, (_, i) => node(`p${i}`, "parts"));
    const join = node("join", "join", prereqs.map((p) => ({ ref: p.ref, on_failure: "run" })));
    ok(await server.request("POST", "/v1/flows", { nodes: [...prereqs, join] }), 201);
    for (let i = 0; i < 43; i++) {
      const part = await leaseOne(server, "parts");
      const n = Number(part.flow.ref.slice(1));
      if (n < 3) await ack(server, part, big);
      else await fail(server, part, `${n}:`.padEnd(8000, "e"));
    }
    const delivered = await leaseOne(server, "join");
    const outcomes = delivered.prerequisites;
    assert.deepEqual(outcomes.slice(0, 3).map((o: Json) => [o.ref, o.result_omitted]), [
      ["p0", false],
      ["p1", false],
      ["p2", true],
    ]);
    assert.equal(outcomes[2].result, null);
    assert.ok(delivered.prerequisites_omitted > 0);
    assert.equal(outcomes.length + delivered.prerequisites_omitted, 43);
    assert.deepEqual(
      outcomes.map((o: Json) => o.ref),
      prereqs.slice(0, outcomes.length).map((p) => p.ref),
    );
    assert.ok(JSON.stringify(outcomes).length <= 256 * 1024);
  });

  test("a flow of 10,000 nodes fans in to one join, within the default --max-body", async (server) => {
    const leaves = Array.from({ length: 9_999 }, (_, i) => node(`leaf-${i}`, "leaves"));
    const join = node("join", "join", leaves.map((leaf) => leaf.ref));
    const body = JSON.stringify({ key: "big", nodes: [...leaves, join] });
    assert.ok(body.length < 16 * 1024 * 1024);
    const created = ok(await server.request("POST", "/v1/flows", body), 201);
    assert.equal(Object.keys(created.jobs).length, 10_000);
    const flow = ok(await server.request("GET", `/v1/flows/${created.id}`), 200);
    assert.deepEqual([flow.counts.pending, flow.counts.blocked], [9_999, 1]);
    assert.equal(flow.nodes.at(-1).depends_on.length, 9_999);
  });

  test("a job in no flow cannot add nodes", async (server) => {
    ok(await server.request("POST", "/v1/queues/plain/jobs", { payload: 1 }), 201);
    const job = await leaseOne(server, "plain");
    const answer = await server.request("POST", `/v1/jobs/${job.id}/flow`, {
      token: job.lease.token,
      nodes: [node("x", "plain")],
    });
    assert.equal(ok(answer, 400).error.code, "validation_failed");
  });
}

Deno.test("a flow that breaks a rule is refused naming the node, and nothing is stored", async () => {
  await using server = await startTestServer();
  const cases: [string, unknown, string][] = [
    [
      "a cycle",
      [node("a", "q", ["c"]), node("b", "q", ["a"]), node("c", "q", ["b"])],
      'Invalid "nodes[0].depends_on": node "a" is on a cycle: its prerequisites depend on it',
    ],
    [
      "an unknown ref",
      [node("a", "q"), node("b", "q", ["a", "zz"])],
      'Invalid "nodes[1].depends_on[1]": no node of the flow has ref "zz"',
    ],
    [
      "a duplicate ref",
      [node("a", "q"), node("b", "q"), node("a", "q")],
      'Invalid "nodes[2].ref": "a" is used by another node of the flow',
    ],
    [
      "a self edge",
      [node("a", "q"), node("b", "q", [{ ref: "b", on_failure: "run" }])],
      'Invalid "nodes[1].depends_on[0]": node "b" cannot depend on itself',
    ],
    [
      "an edge listed twice",
      [node("a", "q"), node("b", "q", ["a", { ref: "a" }])],
      'Invalid "nodes[1].depends_on[1]": "a" is listed twice',
    ],
    [
      "a key on a node",
      [node("a", "q"), node("b", "q", [], { key: "k" })],
      `Invalid "nodes[1].key": a flow's jobs carry no key: give the flow one`,
    ],
    [
      "an unknown on_failure",
      [node("a", "q"), node("b", "q", [{ ref: "a", on_failure: "retry" }])],
      'Invalid "nodes[1].depends_on[0].on_failure": expected one of cancel, ignore, run',
    ],
    [
      "a job option the single enqueue refuses",
      [node("a", "q"), node("b", "q", [], { priority: "high" })],
      'Invalid "nodes[1].priority": expected an integer',
    ],
    [
      "an unknown field",
      [node("a", "q", [], { prio: 1 })],
      'Invalid "nodes[0].prio": unknown field',
    ],
    [
      "a missing payload",
      [{ ref: "a", queue: "q" }],
      'Invalid "nodes[0].payload": is required',
    ],
    [
      "a bad queue name",
      [node("a", "no spaces")],
      'Invalid "nodes[0].queue": expected 1–128 characters of [A-Za-z0-9_.:-], starting with a letter or digit',
    ],
    [
      "a ref too long",
      [node("a".repeat(201), "q")],
      'Invalid "nodes[0].ref": expected a ref: a string of 1 to 200 characters',
    ],
    ["no nodes", [], 'Invalid "nodes": expected at least one node'],
  ];
  for (const [what, nodes, message] of cases) {
    const answer = await server.request("POST", "/v1/flows", { nodes });
    assert.equal(answer.status, 400, what);
    assert.deepEqual(answer.body.error, { code: "validation_failed", message }, what);
  }
  const queues = ok(await server.request("GET", "/v1/queues"), 200);
  assert.deepEqual(queues.queues, [], "nothing was stored");
  const over = await server.request("POST", "/v1/flows", {
    nodes: Array.from({ length: 20_001 }, (_, i) => ({ ref: `n${i}`, queue: "q", payload: 0 })),
  });
  assert.equal(
    ok(over, 400).error.message,
    'Invalid "nodes": at most 20000 nodes per request, got 20001',
  );
});

Deno.test("a node's payload is stored as the very text sent", async () => {
  await using server = await startTestServer();
  const text = '{"nodes":[{"ref":"a","queue":"q","payload":{"n":12345678901234567890,"x":1.0}}]}';
  const { jobs } = ok(await server.request("POST", "/v1/flows", text), 201);
  const response = await fetch(`${server.url}/v1/jobs/${jobs.a}`);
  assert.match(await response.text(), /"payload":\{"n":12345678901234567890,"x":1\.0\}/);
});

Deno.test("a token limited to some queues creates, reads and cancels only flows wholly within them", async () => {
  const ADMIN = "flows-admin-token-0123456789";
  const TEAM = "flows-team-token-0123456789ab";
  await using server = await startTestServer({
    tokens: [
      { name: "ops", token: ADMIN, scopes: ["admin"] },
      { name: "team", token: TEAM, scopes: ["admin"], queues: ["team.*"] },
    ],
  });
  const admin = { authorization: `Bearer ${ADMIN}` };
  const team = { authorization: `Bearer ${TEAM}` };
  const mixed = { nodes: [node("a", "team.a"), node("b", "other", ["a"])] };
  const refused = await server.request("POST", "/v1/flows", mixed, team);
  assert.equal(
    ok(refused, 403).error.message,
    'Cannot use queue "other" with token "team": not among its queues',
  );
  assert.deepEqual(ok(await server.request("GET", "/v1/queues", undefined, admin), 200).queues, []);
  const theirs = ok(await server.request("POST", "/v1/flows", mixed, admin), 201);
  const own = ok(
    await server.request("POST", "/v1/flows", { nodes: [node("a", "team.a")] }, team),
    201,
  );
  ok(await server.request("GET", `/v1/flows/${own.id}`, undefined, team), 200);
  ok(await server.request("GET", `/v1/flows/${theirs.id}`, undefined, team), 403);
  ok(await server.request("DELETE", `/v1/flows/${theirs.id}`, undefined, team), 403);
  ok(await server.request("GET", "/v1/flows", undefined, team), 403);
  assert.equal(
    await stateOf(server, theirs.jobs.a, admin),
    "pending",
    "the refused cancel changed nothing",
  );
  ok(await server.request("DELETE", `/v1/flows/${own.id}`, undefined, team), 200);
});

dropPgTestDatabaseAfterwards(pg);
