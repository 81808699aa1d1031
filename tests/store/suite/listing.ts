/**
 * Reading jobs: get() and queueOf() by id, and listJobs() paging one queue's jobs of one state
 * by id, either way.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { JobState, NewJob } from "../../../lib/core/job.ts";
import { claimOne, enqueueOne, makeDead, type SuiteCases, T0 } from "./fixtures.ts";

/** Registers the cases of this area. */
export function listingCases({ test }: SuiteCases): void {
  test("get() answers null for an unknown id", async (store) => {
    assert.equal(await store.get(424242), null);
  });

  test("queueOf() answers a job's queue, leased or not, and null once it is gone", async (store) => {
    const waiting = await enqueueOne(store, "a.one");
    const leased = await enqueueOne(store, "b.two");
    await store.claim("b.two", 1, null, T0);
    assert.equal(await store.queueOf(waiting), "a.one");
    assert.equal(await store.queueOf(leased), "b.two");
    assert.equal(await store.queueOf(424242), null);
    await store.cancel(waiting, T0);
    await store.cancel(waiting, T0); // a cancelled job is removed by the second cancel
    assert.equal(await store.queueOf(waiting), null);
  });

  test("listJobs() of dead jobs answers them by id after the cursor, at most limit", async (store) => {
    const dead = await makeDead(store, "q", 4);
    await makeDead(store, "other", 1);
    await enqueueOne(store, "q"); // pending, not dead
    const listDead = (queue: string, limit: number, after: number) =>
      store.listJobs(queue, { state: "dead", order: "oldest", after, limit });
    const all = await listDead("q", 10, 0);
    assert.deepEqual(all.map((j) => j.id), dead);
    for (const job of all) {
      assert.equal(job.state, "dead");
      assert.equal(job.queue, "q");
      assert.equal(job.last_error, "boom");
    }
    assert.deepEqual((await listDead("q", 2, 0)).map((j) => j.id), dead.slice(0, 2));
    assert.deepEqual((await listDead("q", 2, dead[1])).map((j) => j.id), dead.slice(2));
    assert.deepEqual(await listDead("q", 10, dead[3]), []);
    assert.deepEqual(await listDead("nobody", 10, 0), []);
  });

  test("listJobs() answers one queue's jobs of one state, oldest or newest first", async (store) => {
    const dead = await makeDead(store, "q", 2);
    const pending = [await enqueueOne(store, "q"), await enqueueOne(store, "q")];
    const delayed = await enqueueOne(store, "q", { run_at: T0 + 60_000 });
    pending.push(await enqueueOne(store, "q", { priority: 9 }));
    await enqueueOne(store, "other");
    const page = (state: JobState, order: "oldest" | "newest" = "oldest") =>
      store.listJobs("q", { state, order, after: null, limit: 10 });
    const ids = async (state: JobState, order?: "oldest" | "newest") =>
      (await page(state, order)).map((j) => j.id);
    // Ordered by id, whatever the priority: a browser shows when jobs came, not who goes next.
    assert.deepEqual(await ids("pending"), pending);
    assert.deepEqual(await ids("pending", "newest"), [...pending].reverse());
    assert.deepEqual(await ids("delayed"), [delayed]);
    assert.deepEqual(await ids("dead", "newest"), [...dead].reverse());
    assert.deepEqual(await ids("leased"), []);
    for (const job of await page("pending")) {
      assert.equal(job.queue, "q");
      assert.equal(job.state, "pending");
    }
    assert.deepEqual(
      await store.listJobs("nobody", {
        state: "pending",
        order: "oldest",
        after: null,
        limit: 10,
      }),
      [],
    );
  });

  test("listJobs() pages with the cursor in either order", async (store) => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueueOne(store, "q"));
    const list = async (order: "oldest" | "newest", after: number | null) =>
      (await store.listJobs("q", { state: "pending", order, after, limit: 2 })).map((j) => j.id);
    assert.deepEqual(await list("oldest", null), ids.slice(0, 2));
    assert.deepEqual(await list("oldest", ids[1]), ids.slice(2, 4));
    assert.deepEqual(await list("oldest", ids[3]), ids.slice(4));
    assert.deepEqual(await list("oldest", ids[4]), []);
    assert.deepEqual(await list("newest", null), [ids[4], ids[3]]);
    assert.deepEqual(await list("newest", ids[3]), [ids[2], ids[1]]);
    assert.deepEqual(await list("newest", ids[1]), [ids[0]]);
    assert.deepEqual(await list("newest", ids[0]), []);
  });

  test("listJobs() pages pending jobs by id across priorities and groups, either way", async (store) => {
    // Priorities and groups interleaved, so that no one run of the claim order is the id order.
    const shapes: Partial<NewJob>[] = [
      { priority: 0 },
      { priority: 5, group: "a" },
      { priority: -3 },
      { priority: 5 },
      { priority: 0, group: "b" },
      { priority: 0, group: "a" },
      { priority: 9 },
      { priority: -3, group: "b" },
      { priority: 0 },
      { priority: 5, group: "b" },
      { priority: 7, group: "a" },
    ];
    const ids: number[] = [];
    for (const shape of shapes) ids.push(await enqueueOne(store, "q", shape));
    await enqueueOne(store, "other", { priority: 4 });
    await enqueueOne(store, "q", { run_at: T0 + 60_000 }); // delayed: not listed
    const [taken] = await store.claim("other", 1, null, T0); // leased elsewhere: not listed
    assert.ok(taken !== undefined);
    for (const order of ["oldest", "newest"] as const) {
      const expected = order === "oldest" ? ids : [...ids].reverse();
      for (const limit of [1, 2, 3, 4, 20]) {
        const seen: number[] = [];
        let after: number | null = null;
        for (let pages = 0; pages < 20; pages++) {
          const page = await store.listJobs("q", { state: "pending", order, after, limit });
          assert.ok(page.length <= limit);
          for (const job of page) assert.equal(job.state, "pending");
          seen.push(...page.map((j) => j.id));
          if (page.length < limit) break;
          after = page[page.length - 1].id;
        }
        assert.deepEqual(seen, expected, `${order}, limit ${limit}`);
      }
    }
    // From a cursor in the middle, both ways.
    const page = (order: "oldest" | "newest") =>
      store.listJobs("q", { state: "pending", order, after: ids[5], limit: 3 });
    assert.deepEqual((await page("oldest")).map((j) => j.id), ids.slice(6, 9));
    assert.deepEqual((await page("newest")).map((j) => j.id), ids.slice(2, 5).reverse());
  });

  test("listJobs() pages leased jobs by id, either way", async (store) => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueueOne(store, "q", { priority: i % 2 }));
    await enqueueOne(store, "other");
    await store.claim("other", 1, null, T0);
    assert.equal((await store.claim("q", 5, null, T0)).length, 5);
    const list = async (order: "oldest" | "newest", after: number | null) =>
      (await store.listJobs("q", { state: "leased", order, after, limit: 2 })).map((j) => j.id);
    assert.deepEqual(await list("oldest", null), ids.slice(0, 2));
    assert.deepEqual(await list("oldest", ids[1]), ids.slice(2, 4));
    assert.deepEqual(await list("oldest", ids[3]), ids.slice(4));
    assert.deepEqual(await list("newest", null), [ids[4], ids[3]]);
    assert.deepEqual(await list("newest", ids[1]), [ids[0]]);
  });

  test("listJobs() shows leased, done and cancelled jobs with their fields", async (store) => {
    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q");
    const c = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0 + 1);
    assert.equal(first.job.id, a);
    await store.ack(a, first.lease.token, '{"ok":true}', T0 + 2);
    const second = await claimOne(store, "q", T0 + 3);
    await store.checkpoint(b, second.lease.token, '"half"', T0 + 4);
    await store.cancel(c, T0 + 5);
    const one = async (state: JobState) => {
      const jobs = await store.listJobs("q", { state, order: "oldest", after: null, limit: 10 });
      assert.equal(jobs.length, 1, state);
      return jobs[0];
    };
    const done = await one("done");
    assert.equal(done.id, a);
    assert.equal(done.result, '{"ok":true}');
    assert.equal(done.finished_at, T0 + 2);
    const leased = await one("leased");
    assert.equal(leased.id, b);
    assert.equal(leased.checkpoint, '"half"');
    assert.equal(leased.lease_expires_at, second.lease.expires_at);
    assert.equal((await one("cancelled")).id, c);
  });
}
