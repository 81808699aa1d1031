/**
 * Several servers on one database: two stores claiming and ending leases together, what one
 * store hears of the other's enqueues, cancels, lease ends and consumers, and the consumer
 * counts a store keeps. Every case that uses the stores' news and consumer counts (`listen`,
 * `announce`, `setConsumers`, `consumers`, `remotePrefetch`) is here, and only here.
 *
 * @module
 */

import assert from "node:assert/strict";
import { HANDOVER_GRACE_MS } from "../../../lib/core/lifecycle.ts";
import type { StoreEvent } from "../../../lib/store/store.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  eventually,
  HANDED_ALL,
  HANDED_NONE,
  newJob,
  queueSettings,
  rejectsWith,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/**
 * Jobs of the claim race (8 claimers on two stores), a multiple of 1,000: `TEGAMI_CLAIM_RACE_JOBS`,
 * else 20,000. A claim that reads its candidates without locking them leases some twice with far
 * fewer.
 */
const RACE_JOBS = Number(Deno.env.get("TEGAMI_CLAIM_RACE_JOBS") ?? 20_000);

/** Registers the cases of this area. */
export function crossServerCases({ test, sharedTest }: SuiteCases): void {
  test("consumers() answers what setConsumers() recorded on this store", async (store) => {
    assert.equal(store.peers.consumers("q"), 0);
    store.peers.setConsumers("q", 3, 96);
    assert.equal(store.peers.consumers("q"), 3);
    store.peers.setConsumers("q", 0, 0);
    assert.equal(store.peers.consumers("q"), 0);
    await Promise.resolve();
  });

  sharedTest(
    "a store hears the end and progress of a job it watches, ended elsewhere",
    async (a, b) => {
      const heard: StoreEvent[] = [];
      const stop = b.peers.listen((event) => {
        if (event.kind === "ended" || event.kind === "progress") heard.push(event);
      });
      try {
        const watched = await enqueueOne(a, "q");
        const unwatched = await enqueueOne(a, "q");
        b.peers.watch(watched);
        // The announcement reaches a before its claim (a's end would be told either way).
        await new Promise((resolve) => setTimeout(resolve, 200));
        const got = await a.claim("q", 2, null, T0);
        for (const d of got) await a.progress(d.job.id, d.lease.token, '{"pct":1}', T0);
        for (const d of got) await a.ack(d.job.id, d.lease.token, null, T0);
        await eventually("the end is heard", () => heard.some((e) => e.kind === "ended"));
        assert.deepEqual(heard, [
          { kind: "progress", id: watched, at: T0, progress: '{"pct":1}' },
          { kind: "ended", id: watched },
        ]);
        assert.ok(!heard.some((e) => "id" in e && e.id === unwatched));
        b.peers.unwatch(watched);
      } finally {
        stop();
      }
    },
  );

  sharedTest(
    "a watch announced after the job ended elsewhere still hears its end",
    async (a, b) => {
      const heard: number[] = [];
      const stop = b.peers.listen((event) => {
        if (event.kind === "ended") heard.push(event.id);
      });
      try {
        const id = await enqueueOne(a, "q");
        const d = await claimOne(a, "q");
        await a.ack(d.job.id, d.lease.token, null, T0);
        b.peers.watch(id);
        await eventually("the end is told", () => heard.includes(id));
        b.peers.unwatch(id);
      } finally {
        stop();
      }
    },
  );

  const race = RACE_JOBS.toLocaleString("en-US");
  sharedTest(`8 claimers on two stores lease each of ${race} jobs exactly once`, async (a, b) => {
    const claimers = 8;
    for (let i = 0; i < RACE_JOBS / 1000; i++) {
      const jobs = Array.from({ length: 1000 }, (_, j) => newJob({ payload: `${i * 1000 + j}` }));
      await (i % 2 === 0 ? a : b).enqueue("q", jobs, T0);
    }
    const seen = new Map<number, number>();
    await Promise.all(Array.from({ length: claimers }, async (_, c) => {
      const store = c % 2 === 0 ? a : b;
      for (;;) {
        const got = await store.claim("q", 100, null, T0);
        if (got.length === 0) return;
        for (const d of got) seen.set(d.job.id, (seen.get(d.job.id) ?? 0) + 1);
      }
    }));
    assert.equal(seen.size, RACE_JOBS);
    assert.ok([...seen.values()].every((n) => n === 1), "some job was leased twice");
    assert.deepEqual(await countsOf(b, "q"), counts({ leased: RACE_JOBS }));
  });

  sharedTest(
    "a job enqueued through one store is news of a ready queue on the other",
    async (a, b) => {
      const heard: StoreEvent[] = [];
      const stop = b.peers.listen((event) => heard.push(event));
      try {
        await enqueueOne(a, "q");
        await eventually(
          "the ready news",
          () => heard.some((e) => e.kind === "ready" && e.queue === "q"),
        );
        assert.equal((await claimOne(b, "q")).job.queue, "q");
      } finally {
        stop();
      }
    },
  );

  sharedTest("a cancel through one store reaches the other as its lease ending", async (a, b) => {
    const id = await enqueueOne(a, "q");
    const { lease } = await claimOne(a, "q");
    const heard: StoreEvent[] = [];
    const stop = a.peers.listen((event) => heard.push(event));
    try {
      await b.cancel(id, T0 + 1);
      await eventually(
        "the cancel news",
        () =>
          heard.some((e) =>
            e.kind === "lease_ended" && e.id === id && e.token === lease.token &&
            e.why === "cancelled"
          ),
      );
      await rejectsWith(a.ack(id, lease.token, null, T0 + 2), "lease_lost");
    } finally {
      stop();
    }
  });

  sharedTest(
    "a lease expiring through one store reaches the other as its lease ending",
    async (a, b) => {
      const id = await enqueueOne(a, "q");
      const { lease } = await claimOne(a, "q", T0, 1_000);
      const heard: StoreEvent[] = [];
      const stop = a.peers.listen((event) => heard.push(event));
      try {
        // b handed nothing over: the lease is a's to end until the grace has passed.
        assert.deepEqual((await b.tick(T0 + 1_000, HANDED_NONE)).expired, []);
        const result = await b.tick(T0 + 1_000 + HANDOVER_GRACE_MS, HANDED_NONE);
        assert.deepEqual(result.expired, [{
          id,
          queue: "q",
          token: lease.token,
          state: "pending",
        }]);
        await eventually(
          "the expiry news",
          () => heard.some((e) => e.kind === "lease_ended" && e.id === id && e.why === "expired"),
        );
      } finally {
        stop();
      }
    },
  );

  sharedTest(
    "a lease held through a store that is gone ends a grace after its expiry",
    async (a, b) => {
      const id = await enqueueOne(a, "q");
      await claimOne(a, "q", T0, 1_000);
      await a.close();
      assert.equal(await b.nextDeadline(T0), T0 + 1_000);
      assert.deepEqual(await b.tick(T0 + 1_000, HANDED_NONE), {
        woken: [],
        expired: [],
        more: false,
      });
      assert.equal(await b.nextDeadline(T0 + 1_000), T0 + 1_000 + HANDOVER_GRACE_MS);
      const end = T0 + 1_000 + HANDOVER_GRACE_MS;
      assert.deepEqual(await b.tick(end - 1, HANDED_NONE), { woken: [], expired: [], more: false });
      const result = await b.tick(end, HANDED_NONE);
      assert.deepEqual(result.woken, ["q"]);
      const again = await claimOne(b, "q", end);
      assert.equal(again.job.id, id);
      assert.equal(again.job.attempts, 2);
    },
  );

  sharedTest("two stores ending the same expired leases end each once", async (a, b) => {
    for (let i = 0; i < 200; i++) await enqueueOne(a, "q");
    await a.claim("q", 200, 1_000, T0);
    const [x, y] = await Promise.all([
      a.tick(T0 + 1_000, HANDED_ALL),
      b.tick(T0 + 1_000, HANDED_ALL),
    ]);
    assert.equal(x.expired.length + y.expired.length, 200);
    const ids = new Set([...x.expired, ...y.expired].map((e) => e.id));
    assert.equal(ids.size, 200);
    assert.deepEqual(await countsOf(a, "q"), counts({ pending: 200 }));
  });

  sharedTest("consumers() counts the consumers recorded on every store", async (a, b) => {
    a.peers.setConsumers("q", 2, 64);
    b.peers.setConsumers("q", 1, 32);
    await eventually(
      "both counts",
      () => a.peers.consumers("q") === 3 && b.peers.consumers("q") === 3,
    );
    // Each store also hears the others' summed prefetch (its own is the broker's to know).
    assert.equal(a.peers.remotePrefetch("q"), 32);
    assert.equal(b.peers.remotePrefetch("q"), 64);
    b.peers.setConsumers("q", 0, 0);
    await eventually(
      "the drop",
      () => a.peers.consumers("q") === 2 && b.peers.consumers("q") === 2,
    );
    assert.equal(a.peers.remotePrefetch("q"), 0);
  });

  sharedTest("an announced lease end reaches the other store", async (a, b) => {
    const heard: StoreEvent[] = [];
    const stop = a.peers.listen((event) => heard.push(event));
    try {
      b.peers.announce(7, "tok", "settled");
      await eventually(
        "the announcement",
        () => heard.some((e) => e.kind === "lease_ended" && e.id === 7 && e.token === "tok"),
      );
    } finally {
      stop();
    }
  });

  sharedTest(
    "settings put through one store are news of a ready queue on the other",
    async (a, b) => {
      const heard: StoreEvent[] = [];
      const stop = b.peers.listen((event) => heard.push(event));
      try {
        await a.putSettings("q", queueSettings({ concurrency: 4 }), T0);
        await eventually(
          "the ready news",
          () => heard.some((e) => e.kind === "ready" && e.queue === "q"),
        );
      } finally {
        stop();
      }
    },
  );
}
