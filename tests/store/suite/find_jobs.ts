/**
 * findJobs(): one window of ids per call, read by primary key, matched by the one rule of
 * core/job_filter.ts on every engine.
 *
 * @module
 */

import assert from "node:assert/strict";
import { everyJob, type JobFilter, parseJobFilter } from "../../../lib/core/job_filter.ts";
import type { Store } from "../../../lib/store/store.ts";
import { claimOne, enqueueOne, type SuiteCases, T0 } from "./fixtures.ts";

/** Every id `filter` takes, walking windows of `limit` ids from the start. */
async function findAll(store: Store, filter: JobFilter, limit: number) {
  const ids: number[] = [];
  let examined = 0;
  let calls = 0;
  for (let after: number | null = 0; after !== null; calls++) {
    const found = await store.findJobs(filter, after, limit);
    assert.ok(found.examined <= limit, `a window of ${limit} examined ${found.examined}`);
    ids.push(...found.ids);
    examined += found.examined;
    after = found.next;
  }
  return { ids, examined, calls };
}

/** Registers the cases of this area. */
export function findJobsCases({ test }: SuiteCases): void {
  test("findJobs() walks a queue's jobs in windows and skips other queues", async (store) => {
    const mine: number[] = [];
    for (let i = 0; i < 7; i++) {
      mine.push(await enqueueOne(store, "q"));
      await enqueueOne(store, "other");
    }
    const all = await findAll(store, everyJob("q"), 3);
    assert.deepEqual(all.ids, mine);
    assert.equal(all.examined, 7);
    // 14 ids in windows of 3 ids: 5 windows, then one call that finds nothing past the last.
    assert.equal(all.calls, 6);
    assert.deepEqual(await store.findJobs(everyJob("none"), 0, 100), {
      ids: [],
      examined: 0,
      next: mine[0] + 99,
    });
  });

  test("findJobs() answers nothing and no cursor past the last job", async (store) => {
    const id = await enqueueOne(store, "q");
    assert.deepEqual(await store.findJobs(everyJob("q"), id, 10), {
      ids: [],
      examined: 0,
      next: null,
    });
  });

  test("findJobs() skips a gap of ids in one call", async (store) => {
    const first = await enqueueOne(store, "q");
    const gone: number[] = [];
    for (let i = 0; i < 20; i++) gone.push(await enqueueOne(store, "q"));
    const last = await enqueueOne(store, "q");
    for (const id of gone) {
      await store.cancel(id, T0);
      await store.cancel(id, T0); // removes it
    }
    const found = await store.findJobs(everyJob("q"), first, 2);
    assert.deepEqual(found, { ids: [last], examined: 1, next: last + 1 });
  });

  test("findJobs() takes states, times, error text, group, key prefix and payload", async (store) => {
    const acme = await enqueueOne(store, "q", {
      payload: '{"tenant":{"id":"acme"},"items":[{"sku":"a1"}]}',
      key: "order:1",
      priority: 10,
    }, T0);
    const globex = await enqueueOne(store, "q", {
      payload: '{"tenant":{"id":"globex"}}',
      key: "invoice:1",
      group: "g1",
    }, T0 + 1000);
    const failed = await enqueueOne(store, "q", { payload: '{"tenant":{"id":"acme"}}' }, T0 + 2000);
    const delivery = await claimOne(store, "q", T0 + 3000);
    assert.equal(delivery.job.id, acme);
    await store.nack(acme, delivery.lease.token, {
      error: "timeout calling billing",
      delay_ms: null,
      dead: true,
    }, T0 + 4000);
    const find = async (filter: unknown) =>
      (await findAll(store, parseJobFilter("q", filter), 1000)).ids;

    assert.deepEqual(await find({ states: ["dead"] }), [acme]);
    assert.deepEqual(await find({ states: ["pending"] }), [globex, failed]);
    assert.deepEqual(await find({ created_from: T0 + 1000 }), [globex, failed]);
    assert.deepEqual(await find({ created_to: T0 + 1000 }), [acme]);
    assert.deepEqual(await find({ finished_from: T0 + 4000 }), [acme]);
    assert.deepEqual(await find({ finished_to: T0 + 4000 }), []);
    assert.deepEqual(await find({ error_contains: "billing" }), [acme]);
    assert.deepEqual(await find({ error_contains: "Billing" }), []);
    assert.deepEqual(await find({ group: "g1" }), [globex]);
    assert.deepEqual(await find({ key_prefix: "order:" }), [acme]);
    assert.deepEqual(await find({ key_prefix: "invoice" }), [globex]);
    assert.deepEqual(await find({ payload: { path: "tenant.id", equals: "acme" } }), [
      acme,
      failed,
    ]);
    assert.deepEqual(await find({ payload: { path: "items.0.sku", equals: "a1" } }), [acme]);
    assert.deepEqual(await find({ payload: { path: "tenant", equals: { id: "globex" } } }), [
      globex,
    ]);
    assert.deepEqual(
      await find({ states: ["pending"], payload: { path: "tenant.id", equals: "acme" } }),
      [failed],
    );
  });

  test("findJobs() changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const before = await store.get(id);
    await store.findJobs(everyJob("q"), 0, 10);
    assert.deepEqual(await store.get(id), before);
  });
}
