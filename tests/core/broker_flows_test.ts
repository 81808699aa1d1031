/**
 * The broker over flows and watched jobs: a flow's released jobs reach a waiting consumer, a
 * wait for a job's end is answered from the ack (no polling), progress reaches watchers, and
 * a wait that runs out answers the job as it is.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Broker } from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import type { JobEvent } from "../../lib/core/job_watch.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import { newJob } from "../helpers/new_job.ts";

async function open() {
  const store = SqliteStore.open({
    path: ":memory:",
    sync: "normal",
    policy: { defaultLeaseMs: 30_000, retryDelayMs: () => 1000 },
  });
  // The broker's reads of single jobs, counted.
  const reads = { n: 0 };
  const counted = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (typeof value !== "function") return value;
      if (prop === "get") {
        return (id: number) => {
          reads.n++;
          return target.get(id);
        };
      }
      return value.bind(target);
    },
  });
  const clock = new ManualClock();
  const broker = new Broker({ store: counted, clock, retainDoneMs: 3_600_000 });
  await broker.start();
  return {
    broker,
    clock,
    reads,
    [Symbol.asyncDispose]: async () => {
      broker.close();
      await store.close();
    },
  };
}

function node(ref: string, depends_on: string[] = []) {
  return {
    ref,
    queue: "q",
    job: newJob(JSON.stringify(ref), 0),
    depends_on: depends_on.map((r) => ({ ref: r, on_failure: "cancel" as const })),
  };
}

Deno.test("a waiting consumer gets the job an ack released, with its outcomes", async () => {
  await using t = await open();
  const created = await t.broker.createFlow({ key: null, nodes: [node("a"), node("b", ["a"])] });
  const [a] = await t.broker.lease("q", 10, 0, null);
  assert.equal(a.job.id, created.nodes[0].id);
  const waiting = t.broker.lease("q", 10, 60_000, null);
  await t.broker.ack(a.job.id, a.lease.token, '"ok"');
  const [b] = await waiting;
  assert.equal(b.job.flow?.ref, "b");
  assert.deepEqual(b.prerequisites?.outcomes.map((o) => [o.ref, o.result]), [["a", '"ok"']]);
});

Deno.test("createFlow refuses a cycle before storing anything", async () => {
  await using t = await open();
  await assert.rejects(
    t.broker.createFlow({ key: null, nodes: [node("a", ["b"]), node("b", ["a"])] }),
    /is on a cycle/,
  );
  assert.deepEqual(await t.broker.listFlows(0, 10), []);
});

Deno.test("waitForEnd answers when the job ends, and its current state when time runs out", async () => {
  await using t = await open();
  const [{ id }] = await t.broker.enqueue("q", [newJob("{}", 0)]);
  const timedOut = t.broker.waitForEnd(id, 1_000);
  await new Promise((resolve) => setTimeout(resolve, 5));
  t.clock.advance(1_000);
  assert.equal((await timedOut)?.state, "pending");
  const waiting = t.broker.waitForEnd(id, 60_000);
  const events: JobEvent[] = [];
  const unwatch = t.broker.watchJob(id, (event) => events.push(event));
  const [d] = await t.broker.lease("q", 1, 0, null);
  await t.broker.progress(id, d.lease.token, '{"pct":50}');
  await t.broker.ack(id, d.lease.token, '"done"');
  const ended = await waiting;
  assert.equal(ended?.state, "done");
  assert.equal(ended?.result, '"done"');
  await new Promise((resolve) => setTimeout(resolve, 5));
  unwatch();
  assert.deepEqual(events.map((e) => e.kind), ["progress", "ended"]);
  // Already ended: answered at once; an unknown job: null.
  assert.equal((await t.broker.waitForEnd(id, 60_000))?.state, "done");
  assert.equal(await t.broker.waitForEnd(999_999, 60_000), null);
});

Deno.test("a wait hears a job cancelled because its prerequisite died", async () => {
  await using t = await open();
  const created = await t.broker.createFlow({ key: null, nodes: [node("a"), node("b", ["a"])] });
  const waiting = t.broker.waitForEnd(created.nodes[1].id, 60_000);
  const [a] = await t.broker.lease("q", 1, 0, null);
  await t.broker.nack(a.job.id, a.lease.token, { error: "no", delay_ms: null, dead: true });
  const b = await waiting;
  assert.equal(b?.state, "cancelled");
  assert.match(b?.last_error ?? "", /Prerequisite "a"/);
});

Deno.test("thousands of waiters cost one read per ended job, none while they wait", async () => {
  await using t = await open();
  const n = 3_000;
  const enqueued = await t.broker.enqueue(
    "q",
    Array.from({ length: n }, (_, i) => newJob(`${i}`, 0)),
  );
  const waits = enqueued.map((e) => t.broker.waitForEnd(e.id, 600_000));
  await new Promise((resolve) => setTimeout(resolve, 20));
  // Each waiter read its job once as it began; from here on, only ends are read.
  assert.equal(t.reads.n, n);
  const deliveries = await t.broker.lease("q", n, 0, null);
  assert.equal(deliveries.length, n);
  t.clock.advance(10_000); // time passing wakes no waiter and reads nothing
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(t.reads.n, n);
  for (const d of deliveries) await t.broker.ack(d.job.id, d.lease.token, null);
  const ended = await Promise.all(waits);
  assert.ok(ended.every((job) => job?.state === "done"));
  assert.equal(t.reads.n, 2 * n);
});
