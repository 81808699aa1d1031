/**
 * Flows: a graph's jobs stored at once, dependents blocked until their prerequisites end and
 * released (or cancelled) in the commit that ends the last one, outcomes in deliveries, the
 * flow's reads, cancel and retention.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  checkFlowNodes,
  type FlowCreated,
  type NewFlow,
  type NewFlowNode,
  type OnFailure,
} from "../../../lib/core/flow.ts";
import type { Store } from "../../../lib/store/store.ts";
import type { Released } from "../../../lib/store/store.ts";
import {
  claimOne,
  counts,
  countsOf,
  HANDED_ALL,
  newJob,
  rejectsWith,
  stateOf,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** A node of queue `q` (or `queue`) depending on `deps` (`"ref"` or `"ref:rule"`). */
export function node(ref: string, deps: string[] = [], queue = "q", run_at = T0): NewFlowNode {
  return {
    ref,
    queue,
    job: newJob({ payload: JSON.stringify({ ref }), run_at }),
    depends_on: deps.map((dep) => {
      const [r, rule] = dep.split(":");
      return { ref: r, on_failure: (rule ?? "cancel") as OnFailure };
    }),
  };
}

/** Creates a flow the way the broker does (checked, in creation order). */
export function create(store: Store, nodes: NewFlowNode[], key: string | null = null, now = T0) {
  const flow: NewFlow = { key, nodes };
  return store.createFlow(flow, checkFlowNodes(nodes), now);
}

function idOf(created: FlowCreated, ref: string): number {
  const found = created.nodes.find((n) => n.ref === ref);
  assert.ok(found, `no node ${ref}`);
  return found.id;
}

/** Claims the one pending job of `queue` and acks it with `result`. */
async function runOne(store: Store, queue: string, result: string | null, now = T0) {
  const delivery = await claimOne(store, queue, now);
  await store.ack(delivery.job.id, delivery.lease.token, result, now);
  return delivery;
}

/** Registers the cases of this area. */
export function flowCases({ test }: SuiteCases): void {
  test("createFlow() stores nodes with prerequisites blocked, the others pending", async (store) => {
    const created = await create(store, [node("a"), node("b", ["a"]), node("c", ["a", "b"])]);
    assert.equal(created.deduplicated, false);
    assert.deepEqual(created.nodes.map((n) => [n.ref, n.state]), [
      ["a", "pending"],
      ["b", "blocked"],
      ["c", "blocked"],
    ]);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1, blocked: 2 }));
    const b = await store.get(idOf(created, "b"));
    assert.deepEqual(b?.flow, { id: created.id, ref: "b" });
    // Only the pending one is claimable.
    const got = await store.claim("q", 10, null, T0);
    assert.deepEqual(got.map((d) => d.job.id), [idOf(created, "a")]);
    assert.equal(got[0].prerequisites, undefined);
  });

  test("an ack releases the dependents in its commit, with outcomes", async (store) => {
    const told: Released[] = [];
    store.onReleased((released) => told.push(released));
    const created = await create(store, [node("a"), node("b", ["a"]), node("c", ["b"], "other")]);
    await runOne(store, "q", '{"n":1}');
    assert.equal(await stateOf(store, idOf(created, "b")), "pending");
    assert.equal(await stateOf(store, idOf(created, "c")), "blocked");
    assert.deepEqual(told, [{ ready: ["q"], due: null, ended: [] }]);
    const b = await claimOne(store, "q");
    assert.equal(b.job.id, idOf(created, "b"));
    assert.deepEqual(b.prerequisites, {
      outcomes: [
        {
          ref: "a",
          id: idOf(created, "a"),
          state: "done",
          result: '{"n":1}',
          last_error: null,
          result_omitted: false,
        },
      ],
      omitted: 0,
    });
    await store.ack(b.job.id, b.lease.token, null, T0 + 1);
    assert.deepEqual(told.at(-1), { ready: ["other"], due: null, ended: [] });
    const c = await claimOne(store, "other", T0 + 1);
    assert.deepEqual(c.prerequisites?.outcomes.map((o) => [o.ref, o.state, o.result]), [
      ["b", "done", null],
    ]);
  });

  test("a fan-in waits for every prerequisite", async (store) => {
    const created = await create(store, [node("a"), node("b"), node("all", ["a", "b"])]);
    await runOne(store, "q", null);
    assert.equal(await stateOf(store, idOf(created, "all")), "blocked");
    await runOne(store, "q", null);
    assert.equal(await stateOf(store, idOf(created, "all")), "pending");
    const all = await claimOne(store, "q");
    assert.deepEqual(all.prerequisites?.outcomes.map((o) => o.ref), ["a", "b"]);
  });

  test("a failed prerequisite: cancel cascades, ignore and run release", async (store) => {
    const told: Released[] = [];
    store.onReleased((released) => told.push(released));
    const created = await create(store, [
      node("a"),
      node("cancels", ["a"]),
      node("below", ["cancels"]),
      node("ignores", ["a:ignore"]),
      node("runs", ["a:run"]),
    ]);
    const a = await claimOne(store, "q");
    await store.nack(a.job.id, a.lease.token, { error: "boom", delay_ms: null, dead: true }, T0);
    const cancelled = await store.get(idOf(created, "cancels"));
    assert.equal(cancelled?.state, "cancelled");
    assert.equal(cancelled?.last_error, `Prerequisite "a" (job ${a.job.id}) ended dead`);
    assert.equal(cancelled?.finished_at, T0);
    const below = await store.get(idOf(created, "below"));
    assert.equal(below?.state, "cancelled");
    assert.match(below?.last_error ?? "", /Prerequisite "cancels" \(job \d+\) ended cancelled/);
    assert.deepEqual(
      told.flatMap((t) => t.ended).sort(),
      [idOf(created, "cancels"), idOf(created, "below")].sort(),
    );
    const deliveries = await store.claim("q", 10, null, T0);
    const byRef = new Map(deliveries.map((d) => [d.job.flow?.ref, d]));
    assert.deepEqual([...byRef.keys()].sort(), ["ignores", "runs"]);
    assert.deepEqual(byRef.get("ignores")?.prerequisites, { outcomes: [], omitted: 0 });
    assert.deepEqual(
      byRef.get("runs")?.prerequisites?.outcomes.map((o) => [o.ref, o.state, o.last_error]),
      [["a", "dead", "boom"]],
    );
    assert.deepEqual(await countsOf(store, "q"), counts({ leased: 2, dead: 1, cancelled: 2 }));
  });

  test("cancelling a prerequisite cancels its dependents", async (store) => {
    const created = await create(store, [node("a"), node("b", ["a"])]);
    await store.cancel(idOf(created, "a"), T0 + 1);
    assert.equal(await stateOf(store, idOf(created, "b")), "cancelled");
  });

  test("a released job whose run_at is later becomes delayed", async (store) => {
    const told: Released[] = [];
    store.onReleased((released) => told.push(released));
    const created = await create(store, [node("a"), node("b", ["a"], "q", T0 + 5_000)]);
    await runOne(store, "q", null, T0 + 10);
    assert.equal(await stateOf(store, idOf(created, "b")), "delayed");
    assert.deepEqual(told, [{ ready: [], due: T0 + 5_000, ended: [] }]);
    await store.tick(T0 + 5_000, HANDED_ALL);
    assert.equal(await stateOf(store, idOf(created, "b")), "pending");
  });

  test("a flow with a held key answers the holder", async (store) => {
    const first = await create(store, [node("a"), node("b", ["a"])], "order-1");
    const again = await create(store, [node("x")], "order-1");
    assert.equal(again.deduplicated, true);
    assert.equal(again.id, first.id);
    assert.deepEqual(again.nodes.map((n) => [n.ref, n.id]), first.nodes.map((n) => [n.ref, n.id]));
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1, blocked: 1 }));
  });

  test("a running node adds nodes to its flow", async (store) => {
    const created = await create(store, [node("before"), node("root")]);
    const before = await claimOne(store, "q");
    assert.equal(before.job.flow?.ref, "before");
    await store.ack(before.job.id, before.lease.token, '"early"', T0);
    const root = await claimOne(store, "q");
    assert.equal(root.job.flow?.ref, "root");
    const added = await store.addFlowNodes(root.job.id, root.lease.token, [
      node("child", ["before"]),
      node("after", ["root", "child"]),
    ], T0 + 1);
    assert.equal(added.id, created.id);
    assert.deepEqual(added.nodes.map((n) => [n.ref, n.state]), [
      ["child", "pending"],
      ["after", "blocked"],
    ]);
    await rejectsWith(
      store.addFlowNodes(root.job.id, "stale", [node("x")], T0 + 1),
      "lease_lost",
    );
    await rejectsWith(
      store.addFlowNodes(root.job.id, root.lease.token, [node("child")], T0 + 1),
      "validation_failed",
    );
    const child = await claimOne(store, "q", T0 + 2);
    assert.deepEqual(child.prerequisites?.outcomes.map((o) => [o.ref, o.result]), [[
      "before",
      '"early"',
    ]]);
    await store.ack(child.job.id, child.lease.token, null, T0 + 2);
    assert.equal(await stateOf(store, idOf(added, "after")), "blocked");
    await store.ack(root.job.id, root.lease.token, null, T0 + 3);
    assert.equal(await stateOf(store, idOf(added, "after")), "pending");
    const flow = await store.getFlow(created.id);
    assert.deepEqual(flow?.nodes.map((n) => n.ref), ["before", "root", "child", "after"]);
    assert.deepEqual(flow?.nodes.at(-1)?.depends_on, [
      { ref: "root", on_failure: "cancel" },
      { ref: "child", on_failure: "cancel" },
    ]);
  });

  test("a job outside any flow adds no nodes", async (store) => {
    const [plain] = await store.enqueue("q", [newJob()], T0);
    const got = await claimOne(store, "q");
    assert.equal(got.job.id, plain.id);
    await rejectsWith(
      store.addFlowNodes(plain.id, got.lease.token, [node("x")], T0),
      "validation_failed",
    );
  });

  test("getFlow() and listFlows() count the nodes; finished_at once all ended", async (store) => {
    const created = await create(store, [node("a"), node("b", ["a"])], "k", T0);
    let flow = await store.getFlow(created.id);
    assert.equal(flow?.key, "k");
    assert.equal(flow?.created_at, T0);
    assert.equal(flow?.finished_at, null);
    assert.deepEqual(flow?.counts, counts({ pending: 1, blocked: 1 }));
    await runOne(store, "q", null, T0 + 1);
    await runOne(store, "q", null, T0 + 2);
    flow = await store.getFlow(created.id);
    assert.deepEqual(flow?.counts, counts({ done: 2 }));
    assert.equal(flow?.finished_at, T0 + 2);
    const second = await create(store, [node("z")]);
    const listed = await store.listFlows(0, 10);
    assert.deepEqual(listed.map((f) => [f.id, f.finished_at]), [
      [created.id, T0 + 2],
      [second.id, null],
    ]);
    assert.deepEqual(await store.listFlows(created.id, 10).then((l) => l.map((f) => f.id)), [
      second.id,
    ]);
    // Newest first: from the top (0), then before a cursor.
    assert.deepEqual(await store.listFlows(0, 10, true).then((l) => l.map((f) => f.id)), [
      second.id,
      created.id,
    ]);
    assert.deepEqual(await store.listFlows(second.id, 10, true).then((l) => l.map((f) => f.id)), [
      created.id,
    ]);
    assert.equal(await store.getFlow(999_999), null);
  });

  test("cancelFlow() cancels what has not ended and revokes leases", async (store) => {
    const created = await create(store, [node("a"), node("b"), node("c", ["a"])]);
    await runOne(store, "q", null);
    const leased = await claimOne(store, "q");
    const out = await store.cancelFlow(created.id, T0 + 1);
    assert.deepEqual(out, {
      id: created.id,
      cancelled: 2,
      ids: [idOf(created, "b"), idOf(created, "c")],
      revoked: [[leased.job.id, leased.lease.token, "q"]],
    });
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 1, cancelled: 2 }));
    await rejectsWith(store.ack(leased.job.id, leased.lease.token, null, T0 + 2), "lease_lost");
    assert.equal(await store.cancelFlow(999_999, T0), null);
  });

  test("retention keeps a flow's jobs until its last node ends", async (store) => {
    const created = await create(store, [node("a"), node("b", ["a"])]);
    await runOne(store, "q", null, T0);
    assert.equal(await store.sweepFinished(T0 + 10_000, 1_000), 0);
    assert.equal(await stateOf(store, idOf(created, "a")), "done");
    await runOne(store, "q", null, T0 + 10_000);
    assert.equal(await store.sweepFinished(T0 + 20_000, 1_000), 2);
    assert.equal(await store.getFlow(created.id), null);
  });

  test("an edge is met once: a requeued prerequisite meets nothing again", async (store) => {
    const created = await create(store, [
      node("a"),
      node("b"),
      node("c", ["a:run", "b"]),
    ]);
    const a = await claimOne(store, "q");
    await store.nack(a.job.id, a.lease.token, { error: "x", delay_ms: null, dead: true }, T0);
    assert.equal(
      await store.requeueDead("q", { ids: [a.job.id] }, T0 + 1, 10).then((r) => r.requeued),
      1,
    );
    // a runs again and succeeds: c still waits for b.
    const again = await store.claim("q", 10, null, T0 + 2);
    for (const d of again) {
      if (d.job.id === a.job.id) await store.ack(d.job.id, d.lease.token, null, T0 + 2);
    }
    assert.equal(await stateOf(store, idOf(created, "c")), "blocked");
    const b = again.find((d) => d.job.id === idOf(created, "b"));
    assert.ok(b);
    await store.ack(b.job.id, b.lease.token, null, T0 + 3);
    assert.equal(await stateOf(store, idOf(created, "c")), "pending");
  });
}
