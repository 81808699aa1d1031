/**
 * Delivery before intake, on a real broker and SQLite store: an enqueue waits while its queue's
 * backlog is above its subscribers' prefetch and they have room, and goes on — never failing —
 * once delivery catches up, when nobody consumes, when consumers are busy, or after a moment.
 */

import assert from "node:assert/strict";
import { Broker, type Subscriber } from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import { MAX_HOLD_MS } from "../../lib/core/intake_gate.ts";
import type { Delivery, NewJob } from "../../lib/core/job.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import { hasSettled } from "../helpers/http_calls.ts";

function job(n: number): NewJob {
  return {
    payload: String(n),
    priority: 0,
    key: null,
    run_at: 0,
    max_attempts: 5,
    lease_ms: null,
    backoff: null,
  };
}

const jobs = (n: number) => Array.from({ length: n }, (_, i) => job(i));

/**
 * A subscriber whose appetite the test sets: it takes up to `allowance` more jobs, and reports
 * `room` (what it could hold) separately, as a consumer waiting on the server would.
 */
class TestSubscriber implements Subscriber {
  readonly leaseMs = null;
  readonly holder = null;
  allowance = 0;
  roomLeft: number;
  reserved = 0;
  received: Delivery[] = [];
  constructor(readonly queue: string, readonly prefetch: number) {
    this.roomLeft = prefetch;
  }
  credit(): number {
    return Math.max(0, this.allowance - this.reserved);
  }
  reserve(n: number): void {
    this.reserved += n;
  }
  deliver(deliveries: Delivery[], reserved: number): boolean {
    this.reserved -= reserved;
    this.allowance -= deliveries.length;
    this.received.push(...deliveries);
    return true;
  }
  room(): number {
    return this.roomLeft;
  }
}

async function harness(): Promise<{ broker: Broker; store: SqliteStore } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-gate-" });
  const store = SqliteStore.open({
    path: `${dir}/tegami.db`,
    sync: "normal",
    policy: { defaultLeaseMs: 30_000, retryDelayMs: () => 1000 },
  });
  const broker = new Broker({ store, clock: new ManualClock(), retainDoneMs: 3600_000 });
  await broker.start();
  return {
    broker,
    store,
    [Symbol.asyncDispose]: async () => {
      broker.close();
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("an enqueue waits while the backlog is above the subscribers' prefetch and they have room", async () => {
  await using h = await harness();
  const sub = new TestSubscriber("q", 4);
  h.broker.subscribe(sub);
  await h.broker.enqueue("q", jobs(10)); // nothing ready yet: admitted at once
  assert.equal(h.store.readyHint("q"), 10);
  const held = h.broker.enqueue("q", jobs(1));
  assert.equal(await hasSettled(held), false, "held while 10 are ready for a prefetch of 4");
  // Delivery catches up: the subscriber takes 7, leaving 3 ready, within its prefetch.
  sub.allowance = 7;
  h.broker.wake("q");
  const out = await held;
  assert.equal(out.length, 1);
  assert.equal(sub.received.length, 7);
});

Deno.test("held enqueues go on as jobs are delivered, as many jobs as were delivered", async () => {
  await using h = await harness();
  const sub = new TestSubscriber("q", 2);
  h.broker.subscribe(sub);
  await h.broker.enqueue("q", jobs(100)); // a deep backlog, already there
  const first = h.broker.enqueue("q", jobs(2));
  const second = h.broker.enqueue("q", jobs(1));
  assert.equal(await hasSettled(first), false);
  // Two jobs delivered let two jobs in: the first enqueue; the second still waits.
  sub.allowance = 2;
  h.broker.wake("q");
  assert.equal((await first).length, 2);
  assert.equal(await hasSettled(second), false);
  sub.allowance = 1;
  h.broker.wake("q");
  assert.equal((await second).length, 1);
  assert.equal(sub.received.length, 3);
});

Deno.test("an enqueue is not held when nobody subscribes: a burst goes at full speed", async () => {
  await using h = await harness();
  for (let i = 0; i < 5; i++) await h.broker.enqueue("q", jobs(100));
  assert.equal(await hasSettled(h.broker.enqueue("q", jobs(1))), true);
  assert.equal(h.store.readyHint("q"), 501);
});

Deno.test("an enqueue is not held when the subscribers have no room: the backlog is theirs", async () => {
  await using h = await harness();
  const sub = new TestSubscriber("q", 2);
  sub.roomLeft = 0; // every credit in use by slow handlers
  h.broker.subscribe(sub);
  await h.broker.enqueue("q", jobs(50));
  assert.equal(await hasSettled(h.broker.enqueue("q", jobs(1))), true);
});

Deno.test("an enqueue is not held while the queue is paused", async () => {
  await using h = await harness();
  await h.broker.setPaused("q", true);
  const sub = new TestSubscriber("q", 2);
  sub.allowance = 2;
  h.broker.subscribe(sub);
  await h.broker.enqueue("q", jobs(50)); // its wake finds nothing to claim: delivery stalled
  assert.equal(await hasSettled(h.broker.enqueue("q", jobs(1))), true);
  assert.equal(sub.received.length, 0);
});

Deno.test("a held enqueue goes on by itself after a moment, and on shutdown", async () => {
  await using h = await harness();
  const sub = new TestSubscriber("q", 1);
  h.broker.subscribe(sub);
  await h.broker.enqueue("q", jobs(10));
  const startedAt = performance.now();
  const held = h.broker.enqueue("q", jobs(1));
  assert.equal(await hasSettled(held), false);
  assert.equal((await held).length, 1);
  assert.ok(performance.now() - startedAt >= MAX_HOLD_MS - 5);
  const atClose = h.broker.enqueue("q", jobs(1));
  assert.equal(await hasSettled(atClose), false);
  h.broker.close();
  await assert.rejects(atClose, { code: "unavailable" });
});

Deno.test("a held enqueue goes on when the last subscriber leaves", async () => {
  await using h = await harness();
  const sub = new TestSubscriber("q", 1);
  h.broker.subscribe(sub);
  await h.broker.enqueue("q", jobs(10));
  const held = h.broker.enqueue("q", jobs(1));
  assert.equal(await hasSettled(held), false);
  h.broker.unsubscribe(sub);
  assert.equal((await held).length, 1);
});
