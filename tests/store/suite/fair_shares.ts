/**
 * Fair shares: a group's weight (its share of turns), its own concurrency (overriding the
 * queue's group_limit) and its own rate, how a group away for a while comes back, what
 * getGroup(), listGroups() and stats() show, and that settings apply across servers.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { GroupSettings } from "../../../lib/core/group_settings.ts";
import type { Delivery, NewJob } from "../../../lib/core/job.ts";
import type { Store } from "../../../lib/store/store.ts";
import { newJob, queueSettings, type SuiteCases, T0 } from "./fixtures.ts";

const settings = (fields: Partial<GroupSettings>): GroupSettings => ({
  weight: 1,
  concurrency: null,
  rate: null,
  ...fields,
});

/** `n` jobs of each group, enqueued in one call, interleaved. */
async function backlog(store: Store, groups: string[], n: number): Promise<void> {
  const jobs: NewJob[] = [];
  for (let i = 0; i < n; i++) for (const group of groups) jobs.push(newJob({ group }));
  await store.enqueue("q", jobs, T0);
}

/** The groups of deliveries, counted. */
function byGroup(deliveries: Delivery[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const d of deliveries) out[d.job.group!] = (out[d.job.group!] ?? 0) + 1;
  return out;
}

/** Claims one job at a time `n` times, acking each at once; answers the deliveries. */
async function oneAtATime(store: Store, n: number): Promise<Delivery[]> {
  const out: Delivery[] = [];
  for (let i = 0; i < n; i++) {
    const [d] = await store.claim("q", 1, null, T0);
    assert.ok(d !== undefined, `claim ${i} found a job`);
    await store.ack(d.job.id, d.lease.token, null, T0);
    out.push(d);
  }
  return out;
}

/** Registers the cases of this area. */
export function fairShareCases({ test, sharedTest }: SuiteCases): void {
  test("a group of weight 3 is served three times for each time a group of weight 1 is", async (store) => {
    await store.putGroupSettings("q", "heavy", settings({ weight: 3 }), T0);
    await backlog(store, ["heavy", "light"], 40);
    // One job per claim: the turns alone decide.
    assert.deepEqual(byGroup(await oneAtATime(store, 20)), { heavy: 15, light: 5 });
    // Many jobs in one claim: the weights decide within it too (a group_limit that allows it).
    await store.putSettings("q", queueSettings({ group_limit: 100 }), T0);
    const many = await store.claim("q", 8, null, T0);
    assert.deepEqual(byGroup(many), { heavy: 6, light: 2 });
  });

  test("with every weight 1 groups take plain turns, and a weight of 1 is no setting", async (store) => {
    await store.putGroupSettings("q", "a", settings({ weight: 1 }), T0);
    assert.equal((await store.getGroup("q", "a", T0)).configured, false);
    await backlog(store, ["a", "b", "c"], 5);
    const groups = (await oneAtATime(store, 9)).map((d) => d.job.group);
    assert.deepEqual(groups, ["a", "b", "c", "a", "b", "c", "a", "b", "c"]);
  });

  test("a group away for a while comes back at the current round, not with credit", async (store) => {
    await store.putSettings("q", queueSettings({ group_limit: 10 }), T0);
    // c's only job is leased (c has nothing pending) while a and b are served 20 times.
    await store.enqueue("q", [newJob({ group: "c" })], T0);
    const [held] = await store.claim("q", 1, null, T0);
    await backlog(store, ["a", "b"], 20);
    await oneAtATime(store, 20);
    await store.ack(held.job.id, held.lease.token, null, T0);
    await backlog(store, ["c"], 10);
    // One claim of six: c gets its share of the round, not six for the turns it missed.
    assert.deepEqual(byGroup(await store.claim("q", 6, null, T0)), { a: 2, b: 2, c: 2 });
  });

  test("a group's own concurrency overrides the queue's group_limit, higher or lower", async (store) => {
    await store.putSettings("q", queueSettings({ group_limit: 2 }), T0);
    await store.putGroupSettings("q", "wide", settings({ concurrency: 4 }), T0);
    await store.putGroupSettings("q", "narrow", settings({ concurrency: 1 }), T0);
    await backlog(store, ["wide", "narrow", "plain"], 6);
    const leased = await store.claim("q", 50, null, T0);
    assert.deepEqual(byGroup(leased), { wide: 4, narrow: 1, plain: 2 });
    assert.deepEqual(await store.claim("q", 50, null, T0), [], "each group is at its limit");
    const wide = await store.getGroup("q", "wide", T0);
    assert.deepEqual(
      { limit: wide.limit, leased: wide.leased, pending: wide.pending, held: wide.held },
      { limit: 4, leased: 4, pending: 2, held: "concurrency" },
    );
    const [stats] = await store.stats("q", T0);
    assert.equal(stats.groups.full, 3);
    assert.deepEqual(stats.groups.top_held.map((h) => [h.group, h.limit, h.pending]), [
      ["narrow", 1, 5],
      ["plain", 2, 4],
      ["wide", 4, 2],
    ]);
    // Raising the limit frees slots at once.
    await store.putGroupSettings("q", "narrow", settings({ concurrency: 3 }), T0);
    assert.deepEqual(byGroup(await store.claim("q", 50, null, T0)), { narrow: 2 });
  });

  test("a group's own rate holds its jobs until its next token while other groups flow", async (store) => {
    // 10 per second: one token every 100 ms, at most one held (a tenth of 10).
    const rate = { limit: 10, per_ms: 1_000 };
    await store.putSettings("q", queueSettings({ group_limit: 10 }), T0);
    await store.putGroupSettings("q", "slow", settings({ rate }), T0);
    await backlog(store, ["slow", "fast"], 5);
    assert.deepEqual(byGroup(await store.claim("q", 20, null, T0)), { slow: 1, fast: 5 });
    assert.deepEqual(await store.claim("q", 20, null, T0 + 50), [], "no token before 100 ms");
    const slow = await store.getGroup("q", "slow", T0 + 50);
    assert.equal(slow.held, "rate");
    assert.equal(slow.held_until, T0 + 100);
    assert.equal(store.claimHeldUntil("q"), T0 + 100, "the queue is offered again then");
    const [stats] = await store.stats("q", T0 + 50);
    assert.equal(stats.groups.rate_held, 1);
    assert.deepEqual(stats.groups.top_held, [
      { group: "slow", held: "rate", pending: 4, leased: 1, limit: 10 },
    ]);
    assert.deepEqual(byGroup(await store.claim("q", 20, null, T0 + 100)), { slow: 1 });
    assert.deepEqual(byGroup(await store.claim("q", 20, null, T0 + 350)), { slow: 1 });
    assert.equal((await store.getGroup("q", "slow", T0 + 350)).held, "rate");
    // Without the rate, the rest go at once.
    await store.putGroupSettings("q", "slow", null, T0 + 350);
    assert.deepEqual(byGroup(await store.claim("q", 20, null, T0 + 350)), { slow: 2 });
  });

  test("getGroup(), listGroups() and putGroupSettings() show groups with settings or jobs", async (store) => {
    const none = await store.getGroup("q", "nobody", T0);
    assert.deepEqual(none, {
      group: "nobody",
      settings: { weight: 1, concurrency: null, rate: null },
      configured: false,
      pending: 0,
      leased: 0,
      limit: 1,
      held: null,
      held_until: null,
    });
    const put = await store.putGroupSettings(
      "q",
      "tenant b",
      settings({ weight: 2.5, concurrency: 3, rate: { limit: 5, per_ms: 60_000 } }),
      T0,
    );
    assert.deepEqual(put.settings, {
      weight: 2.5,
      concurrency: 3,
      rate: { limit: 5, per_ms: 60_000 },
    });
    assert.equal(put.configured, true);
    assert.equal(put.limit, 3);
    // Names in byte order: "Z" < "a" < "é" < "😀" (a code point beyond the BMP after é).
    await store.enqueue(
      "q",
      ["😀", "a", "é", "Z"].map((group) => newJob({ group })),
      T0,
    );
    await store.putGroupSettings("q", "a", settings({ weight: 4 }), T0);
    await store.putGroupSettings("other", "a", settings({ weight: 7 }), T0);
    const all = await store.listGroups("q", null, 100, T0);
    assert.deepEqual(all.map((g) => g.group), ["Z", "a", "tenant b", "é", "😀"]);
    assert.deepEqual(all.map((g) => [g.configured, g.pending]), [
      [false, 1],
      [true, 1],
      [true, 0],
      [false, 1],
      [false, 1],
    ]);
    assert.equal(all[1].settings.weight, 4);
    const page1 = await store.listGroups("q", null, 2, T0);
    const page2 = await store.listGroups("q", page1[1].group, 2, T0);
    const page3 = await store.listGroups("q", page2[1].group, 2, T0);
    assert.deepEqual([...page1, ...page2, ...page3].map((g) => g.group), all.map((g) => g.group));
    const reset = await store.putGroupSettings("q", "tenant b", null, T0);
    assert.equal(reset.configured, false);
    assert.deepEqual(
      (await store.listGroups("q", null, 100, T0)).map((g) => g.group),
      ["Z", "a", "é", "😀"],
    );
    assert.equal((await store.getGroup("other", "a", T0)).settings.weight, 7);
  });

  sharedTest("a group's settings apply on every server from their commit on", async (a, b) => {
    await a.putSettings("q", queueSettings({ group_limit: 1 }), T0);
    await a.enqueue("q", Array.from({ length: 4 }, () => newJob({ group: "g" })), T0);
    assert.equal((await b.claim("q", 10, null, T0)).length, 1);
    await a.putGroupSettings("q", "g", settings({ concurrency: 3 }), T0);
    assert.equal((await b.claim("q", 10, null, T0)).length, 2);
    assert.equal((await b.getGroup("q", "g", T0)).limit, 3);
  });
}
