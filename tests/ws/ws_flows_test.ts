/**
 * Flows over the WebSocket, on a real server and real sockets: the `flow` frame creates a graph
 * whose jobs are delivered only once their prerequisites have ended, each delivery carrying the
 * prerequisites' outcomes; `add_nodes` lets a leased job grow its flow. Every frame received is
 * checked against the AsyncAPI document by `WsClient`.
 */

import assert from "node:assert/strict";
import { getJob } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { type Frame, WsClient, wsUrl } from "../helpers/ws_client.ts";

/** How long "nothing more arrives" is watched, ms of real time. */
const QUIET_MS = 100;

function connect(server: TestServer): Promise<WsClient> {
  return WsClient.connect(wsUrl(server.url));
}

/** The state of job `id`. */
async function stateOf(server: TestServer, id: number): Promise<string> {
  return (await getJob(server, id)).state;
}

const chain = {
  op: "flow",
  nodes: [
    { ref: "fetch", queue: "f", payload: { url: "a.png" } },
    { ref: "resize", queue: "f", payload: { width: 640 }, depends_on: ["fetch"] },
    { ref: "notify", queue: "f", payload: "done?", depends_on: [{ ref: "resize" }] },
  ],
};

Deno.test("flow creates every node at once and answers the flow's id and each ref's job", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const reply = await ws.request({ ...chain, ref: 20 });
  assert.equal(reply.op, "ok", JSON.stringify(reply));
  assert.equal(reply.ref, 20);
  assert.equal(reply.deduplicated, false);
  assert.deepEqual(Object.keys(reply.jobs), ["fetch", "resize", "notify"]);
  const { fetch, resize, notify } = reply.jobs;
  assert.ok(fetch < resize && resize < notify, "prerequisites are stored first");
  assert.equal(await stateOf(server, fetch), "pending");
  assert.equal(await stateOf(server, resize), "blocked");
  assert.equal(await stateOf(server, notify), "blocked");
});

Deno.test("a chain is delivered one node at a time, each with its prerequisite's outcome", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const { id: flow, jobs } = await ws.ok(chain);
  await ws.subscribe("f", 10);

  const first = await ws.nextJob("f");
  assert.equal(first.id, jobs.fetch);
  assert.deepEqual(first.flow, { id: flow, ref: "fetch" });
  assert.equal("prerequisites" in first, false, "a node without prerequisites carries none");
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "job"), [], "resize is blocked");
  await ws.ok({ op: "ack", id: first.id, token: first.lease.token, result: { path: "/a" } });

  const second = await ws.nextJob("f");
  assert.equal(second.id, jobs.resize);
  assert.deepEqual(second.payload, { width: 640 });
  assert.deepEqual(second.flow, { id: flow, ref: "resize" });
  assert.deepEqual(second.prerequisites, [
    {
      ref: "fetch",
      id: jobs.fetch,
      state: "done",
      result: { path: "/a" },
      last_error: null,
      result_omitted: false,
    },
  ]);
  await ws.ok({ op: "ack", id: second.id, token: second.lease.token, result: [640, 480] });

  const third = await ws.nextJob("f");
  assert.equal(third.id, jobs.notify);
  assert.deepEqual(third.prerequisites.map((o: Frame) => [o.ref, o.state, o.result]), [
    ["resize", "done", [640, 480]],
  ]);
  await ws.ok({ op: "ack", id: third.id, token: third.lease.token });
});

Deno.test("a failed prerequisite cancels, runs or is ignored by each dependent as its edge says", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const { jobs } = await ws.ok({
    op: "flow",
    nodes: [
      { ref: "a", queue: "f", payload: 1, max_attempts: 1 },
      { ref: "cancels", queue: "f", payload: 2, depends_on: ["a"] },
      { ref: "runs", queue: "f", payload: 3, depends_on: [{ ref: "a", on_failure: "run" }] },
      { ref: "ignores", queue: "f", payload: 4, depends_on: [{ ref: "a", on_failure: "ignore" }] },
      { ref: "after", queue: "f", payload: 5, depends_on: ["cancels"] },
    ],
  });
  await ws.subscribe("f", 10);
  const a = await ws.nextJob("f");
  const nack = await ws.ok({ op: "nack", id: a.id, token: a.lease.token, error: "boom" });
  assert.equal(nack.state, "dead");

  const released = [await ws.nextJob("f"), await ws.nextJob("f")];
  released.sort((x, y) => x.id - y.id);
  assert.deepEqual(released.map((j) => j.flow.ref), ["runs", "ignores"]);
  assert.deepEqual(released[0].prerequisites, [
    {
      ref: "a",
      id: jobs.a,
      state: "dead",
      result: null,
      last_error: "boom",
      result_omitted: false,
    },
  ]);
  assert.deepEqual(released[1].prerequisites, [], "an ignored failure is left out");
  assert.equal(await stateOf(server, jobs.cancels), "cancelled");
  assert.equal(
    await stateOf(server, jobs.after),
    "cancelled",
    "the cancel carries on down the graph",
  );
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "job"), []);
});

Deno.test("flow with a key answers the flow holding it, deduplicated, and stores nothing", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const first = await ws.ok({ ...chain, key: "order-42" });
  const again = await ws.ok({
    op: "flow",
    key: "order-42",
    nodes: [{ ref: "other", queue: "f", payload: null }],
  });
  assert.equal(again.deduplicated, true);
  assert.equal(again.id, first.id);
  assert.deepEqual(again.jobs, first.jobs);
});

Deno.test("flow refuses a cycle, naming the node, and creates nothing", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const reply = await ws.request({
    op: "flow",
    ref: "cyc",
    nodes: [
      { ref: "a", queue: "f", payload: 1, depends_on: ["b"] },
      { ref: "b", queue: "f", payload: 2, depends_on: ["a"] },
    ],
  });
  assert.equal(reply.op, "error");
  assert.equal(reply.ref, "cyc");
  assert.equal(reply.code, "validation_failed");
  assert.match(reply.message, /nodes\[\d\]\.depends_on/);
  assert.match(reply.message, /cycle/);
  await ws.subscribe("f", 1);
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "job"), []);
});

Deno.test("flow refuses malformed bodies with validation_failed naming the field", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ op: "flow" }, /"nodes"/],
    [{ op: "flow", nodes: [] }, /"nodes"/],
    [{ op: "flow", nodes: [{ ref: "a", payload: 1 }] }, /"nodes\[0\]\.queue"/],
    [{ op: "flow", nodes: [{ ref: "a", queue: "f" }] }, /"nodes\[0\]\.payload"/],
    [{ op: "flow", nodes: [{ ref: "a", queue: "f", payload: 1, key: "k" }] }, /"nodes\[0\]\.key"/],
    [{ op: "flow", nodes: [{ ref: "a", queue: "f", payload: 1, depends_on: ["zz"] }] }, /zz/],
    [
      {
        op: "flow",
        nodes: [
          { ref: "a", queue: "f", payload: 1 },
          { ref: "b", queue: "f", payload: 1, depends_on: [{ ref: "a", on_failure: "retry" }] },
        ],
      },
      /"nodes\[1\]\.depends_on\[0\]\.on_failure"/,
    ],
    [{ op: "flow", nodes: [{ ref: "a", queue: "f", payload: 1 }], colour: "red" }, /"colour"/],
    [{ op: "flow", id: 3, nodes: [{ ref: "a", queue: "f", payload: 1 }] }, /"id"/],
  ];
  for (const [frame, field] of cases) {
    const reply = await ws.request(frame);
    assert.equal(reply.code, "validation_failed", JSON.stringify(frame));
    assert.match(reply.message, field, JSON.stringify(frame));
  }
});

Deno.test("flow stores each node's payload as the very text sent", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const text = '{"op":"flow","ref":1,"nodes":[{"ref":"a","queue":"f",' +
    '"payload":{"big":12345678901234567890,"x":1.0}}]}';
  ws.send(text);
  const reply = await ws.next((f) => f.ref === 1);
  assert.equal(reply.op, "ok", JSON.stringify(reply));
  const raw = new WebSocket(wsUrl(server.url));
  const delivered = await new Promise<string>((resolve, reject) => {
    raw.onopen = () => raw.send(JSON.stringify({ op: "subscribe", queue: "f" }));
    raw.onmessage = (event) => {
      if (String(event.data).startsWith('{"op":"job"')) resolve(String(event.data));
    };
    raw.onerror = () => reject(new Error("socket failed"));
  });
  raw.close();
  await new Promise((resolve) => raw.onclose = resolve);
  assert.ok(delivered.includes('"payload":{"big":12345678901234567890,"x":1.0}'), delivered);
});

Deno.test("add_nodes lets a running job fan out; the join runs after every piece", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const { id: flow, jobs } = await ws.ok({
    op: "flow",
    nodes: [{ ref: "split", queue: "f", payload: "doc" }],
  });
  await ws.subscribe("f", 10);
  const split = await ws.nextJob("f");
  const added = await ws.ok({
    op: "add_nodes",
    ref: "fan",
    id: split.id,
    token: split.lease.token,
    nodes: [
      { ref: "page-1", queue: "f", payload: 1 },
      { ref: "page-2", queue: "f", payload: 2 },
      { ref: "merge", queue: "f", payload: "m", depends_on: ["page-1", "page-2", "split"] },
    ],
  });
  assert.equal(added.id, flow);
  assert.equal(added.deduplicated, false);
  assert.deepEqual(Object.keys(added.jobs), ["page-1", "page-2", "merge"]);
  assert.equal(await stateOf(server, added.jobs.merge), "blocked");

  const pages = [await ws.nextJob("f"), await ws.nextJob("f")];
  for (const page of pages) {
    assert.equal(page.flow.id, flow);
    await ws.ok({ op: "ack", id: page.id, token: page.lease.token, result: page.payload * 10 });
  }
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "job"), [], "split still runs");
  await ws.ok({ op: "ack", id: split.id, token: split.lease.token, result: "split" });

  const merge = await ws.nextJob("f");
  assert.equal(merge.id, added.jobs.merge);
  assert.deepEqual(merge.prerequisites.map((o: Frame) => [o.ref, o.id, o.result]), [
    ["page-1", added.jobs["page-1"], 10],
    ["page-2", added.jobs["page-2"], 20],
    ["split", jobs.split, "split"],
  ]);
});

Deno.test("add_nodes with a token that no longer holds the lease gets lease_lost", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.ok({ op: "flow", nodes: [{ ref: "root", queue: "f", payload: 0 }] });
  await ws.subscribe("f", 1);
  const root = await ws.nextJob("f");
  await ws.ok({ op: "ack", id: root.id, token: root.lease.token });
  const reply = await ws.request({
    op: "add_nodes",
    id: root.id,
    token: root.lease.token,
    nodes: [{ ref: "late", queue: "f", payload: 1 }],
  });
  assert.equal(reply.code, "lease_lost", JSON.stringify(reply));
  assert.equal(reply.id, root.id);
});

Deno.test("add_nodes from a job of no flow is refused with validation_failed", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.ok({ op: "enqueue", queue: "f", payload: 1 });
  await ws.subscribe("f", 1);
  const job = await ws.nextJob("f");
  const reply = await ws.request({
    op: "add_nodes",
    id: job.id,
    token: job.lease.token,
    nodes: [{ ref: "x", queue: "f", payload: 1 }],
  });
  assert.equal(reply.code, "validation_failed", JSON.stringify(reply));
});

Deno.test("flow and add_nodes work inside a batch, each answered in its slot", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const reply = await ws.ok({
    op: "batch",
    frames: [
      { op: "flow", ref: 1, nodes: [{ ref: "a", queue: "f", payload: 1 }] },
      { op: "flow", ref: 2, nodes: [{ ref: "a", queue: "f", payload: 1, depends_on: ["a"] }] },
    ],
  });
  assert.equal(reply.replies[0].op, "ok");
  assert.equal(typeof reply.replies[0].jobs.a, "number");
  assert.equal(reply.replies[1].code, "validation_failed");
});

Deno.test("flow needs produce and every node's queue; add_nodes needs consume and produce", async () => {
  const admin = "flow-admin-token-0123456789";
  const shop = "flow-shop-token-0123456789";
  const worker = "flow-worker-token-0123456789";
  await using server = await startTestServer({
    tokens: [
      { name: "ops", token: admin, scopes: ["admin"] },
      { name: "shop", token: shop, scopes: ["produce"], queues: ["shop.*"] },
      { name: "worker", token: worker, scopes: ["consume"], queues: ["shop.*"] },
    ],
  });
  const as = (token: string) =>
    WsClient.connect(wsUrl(server.url), { headers: { authorization: `Bearer ${token}` } });
  await using producer = await as(shop);
  const mixed = await producer.request({
    op: "flow",
    nodes: [
      { ref: "a", queue: "shop.eu", payload: 1 },
      { ref: "b", queue: "billing", payload: 2, depends_on: ["a"] },
    ],
  });
  assert.equal(mixed.code, "forbidden", JSON.stringify(mixed));
  assert.match(mixed.message, /billing/);
  const { jobs } = await producer.ok({
    op: "flow",
    nodes: [{ ref: "a", queue: "shop.eu", payload: 1 }],
  });

  await using consumer = await as(worker);
  const refused = await consumer.request({
    op: "flow",
    nodes: [{ ref: "x", queue: "shop.eu", payload: 1 }],
  });
  assert.equal(refused.code, "forbidden", JSON.stringify(refused));
  await consumer.subscribe("shop.eu", 1);
  const job = await consumer.nextJob("shop.eu");
  assert.equal(job.id, jobs.a);
  const add = await consumer.request({
    op: "add_nodes",
    id: job.id,
    token: job.lease.token,
    nodes: [{ ref: "more", queue: "shop.eu", payload: 2 }],
  });
  assert.equal(add.code, "forbidden", "consume alone cannot add jobs");
  await consumer.ok({ op: "ack", id: job.id, token: job.lease.token });
});

Deno.test("a delivery carries at most 256 KiB of outcomes: results, then whole outcomes, left out", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const big = "x".repeat(100 * 1024);
  const { jobs } = await ws.ok({
    op: "flow",
    nodes: [
      ...["a", "b", "c"].map((ref) => ({ ref, queue: "p", payload: ref })),
      { ref: "join", queue: "j", payload: 0, depends_on: ["a", "b", "c"] },
    ],
  });
  await ws.subscribe("p", 3);
  for (const job of await ws.jobs(3, "p")) {
    await ws.ok({ op: "ack", id: job.id, token: job.lease.token, result: big });
  }
  await ws.subscribe("j", 1);
  const join = await ws.nextJob("j");
  assert.deepEqual(join.prerequisites.map((o: Frame) => [o.ref, o.result_omitted]), [
    ["a", false],
    ["b", false],
    ["c", true],
  ]);
  assert.equal(join.prerequisites[0].result, big);
  assert.equal(join.prerequisites[2].result, null);
  assert.equal("prerequisites_omitted" in join, false);
  assert.equal(jobs.join, join.id);

  // Forty failed prerequisites whose errors pass the cap between them: the last are counted.
  const error = "e".repeat(8000);
  const refs = Array.from({ length: 40 }, (_, i) => `f${i}`);
  await ws.ok({
    op: "flow",
    nodes: [
      ...refs.map((ref) => ({ ref, queue: "d", payload: ref, max_attempts: 1 })),
      {
        ref: "after",
        queue: "j",
        payload: 1,
        depends_on: refs.map((ref) => ({ ref, on_failure: "run" })),
      },
    ],
  });
  await ws.subscribe("d", 40);
  const failed = await ws.jobs(40, "d");
  const nacks = await ws.ok({
    op: "batch",
    frames: failed.map((job) => ({ op: "nack", id: job.id, token: job.lease.token, error })),
  });
  assert.ok(nacks.replies.every((r: Frame) => r.state === "dead"));
  await ws.ok({ op: "ack", id: join.id, token: join.lease.token });
  const after = await ws.nextJob("j");
  const carried = after.prerequisites.length;
  assert.ok(carried > 0 && carried < 40, `${carried} outcomes carried`);
  assert.equal(after.prerequisites_omitted, 40 - carried);
  assert.ok(JSON.stringify(after.prerequisites).length <= 256 * 1024);
});
