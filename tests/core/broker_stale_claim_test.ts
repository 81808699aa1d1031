/**
 * A claim answered after its leases' whole length (a server stalled between asking and being
 * answered) is not pushed: the broker gives those jobs back as undelivered, so no consumer gets a
 * lease it cannot ack and no attempt is spent on it. The manual clock stands in for the stall.
 */

import assert from "node:assert/strict";
import { Broker, type LeaseHolder, type Subscriber } from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import type { Delivery, NewJob } from "../../lib/core/job.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { eventually } from "../helpers/ws_client.ts";

const LEASE_MS = 30_000;

function job(now: number): NewJob {
  return {
    payload: "1",
    priority: 0,
    key: null,
    run_at: now,
    max_attempts: 1,
    lease_ms: null,
    backoff: null,
  };
}

/** A store whose next `stalls` claims that lease anything are answered a lease length late. */
async function stallingBroker(dir: string) {
  const store = SqliteStore.open({
    path: `${dir}/tegami.db`,
    sync: "normal",
    policy: { defaultLeaseMs: LEASE_MS, retryDelayMs: () => 1000 },
  });
  const clock = new ManualClock();
  const control = { stalls: 0 };
  const claimFair = store.claimFair.bind(store);
  store.claimFair = async (queue, wants, now) => {
    const lists = await claimFair(queue, wants, now);
    if (control.stalls > 0 && lists.some((l) => l.length > 0)) {
      control.stalls--;
      clock.advance(LEASE_MS);
    }
    return lists;
  };
  const claim = store.claim.bind(store);
  store.claim = async (queue, max, leaseMs, now) => {
    const got = await claim(queue, max, leaseMs, now);
    if (control.stalls > 0 && got.length > 0) {
      control.stalls--;
      clock.advance(LEASE_MS);
    }
    return got;
  };
  const broker = new Broker({ store, clock, retainDoneMs: 3600_000 });
  await broker.start();
  return {
    broker,
    clock,
    control,
    async [Symbol.asyncDispose]() {
      broker.close();
      await store.close();
    },
  };
}

Deno.test("a pushed claim whose leases ended while it was answered goes back, attempt uncounted", async () => {
  await using dir = await tempDir();
  await using h = await stallingBroker(dir.path);
  const [{ id }] = await h.broker.enqueue("q", [job(h.clock.now())]);
  const received: Delivery[] = [];
  const holder: LeaseHolder = { leaseEnded: () => {} };
  const sub: Subscriber = {
    queue: "q",
    leaseMs: null,
    holder,
    credit: () => 1 - received.length,
    reserve: () => {},
    deliver: (deliveries) => {
      received.push(...deliveries);
      return deliveries.length;
    },
  };
  h.control.stalls = 1;
  h.broker.subscribe(sub);
  // The stalled claim is given back with its attempt unspent (the job allows one), and the
  // claim its release wakes pushes the job with a lease that runs.
  await eventually(() => received.length === 1, "the delivery");
  assert.equal(h.control.stalls, 0, "the first claim stalled");
  assert.equal(received[0].job.attempts, 1, "the stalled attempt was not counted");
  assert.ok(received[0].lease.expires_at > h.clock.now());
  await h.broker.ack(id, received[0].lease.token, null);
});

Deno.test("a lease call answered after its leases ended answers nothing and gives the jobs back", async () => {
  await using dir = await tempDir();
  await using h = await stallingBroker(dir.path);
  const [{ id }] = await h.broker.enqueue("q", [job(h.clock.now())]);
  h.control.stalls = 1;
  assert.deepEqual(await h.broker.lease("q", 1, 0, null), []);
  await eventually(async () => (await h.broker.get(id))?.state === "pending", "the job back");
  assert.equal((await h.broker.get(id))?.attempts, 0);
  const [got] = await h.broker.lease("q", 1, 0, null);
  assert.equal(got.job.id, id);
  assert.ok(got.lease.expires_at > h.clock.now());
});
