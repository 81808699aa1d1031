/**
 * The broker on its own: dispatch, credit and deadlines, driven through its two consumer-side
 * interfaces (`Subscriber`, `LeaseHolder`) by fake subscribers, over a real SQLite store, with
 * the manual clock. No network, no sleeping for time to pass: `clock.advance()` moves it.
 */

import assert from "node:assert/strict";
import {
  Broker,
  type BrokerObserver,
  type LeaseHolder,
  type LeaseNotice,
  type LeaseOutcome,
  type Subscriber,
} from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import type { Delivery, NewJob } from "../../lib/core/job.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import { eventually } from "../helpers/ws_client.ts";

const LEASE_MS = 30_000;

/**
 * A subscriber with a fixed prefetch that records what it is handed and told. Like a WebSocket
 * subscription, it offers its queue again (`wake`) when a lease ends and frees credit.
 */
class FakeSubscriber implements Subscriber, LeaseHolder {
  readonly received: Delivery[] = [];
  /** Deliveries it refused at hand-over (while not present). */
  readonly refused: Delivery[] = [];
  readonly notices: { id: number; why: LeaseNotice }[] = [];
  inflight = 0;
  reserved = 0;
  /** When false, the next hand-over is refused, as by a consumer that just left. */
  present = true;
  /** Called when a lease ends and frees credit (the harness wakes the queue). */
  onFreed: (queue: string) => void = () => {};
  constructor(
    readonly queue: string,
    public prefetch: number,
    readonly leaseMs: number | null = null,
  ) {}
  get holder(): LeaseHolder {
    return this;
  }
  credit(): number {
    return Math.max(0, this.prefetch - this.inflight - this.reserved);
  }
  reserve(n: number): void {
    this.reserved += n;
  }
  deliver(deliveries: Delivery[], reserved: number): number {
    this.reserved -= reserved;
    if (!this.present) {
      this.refused.push(...deliveries);
      return 0;
    }
    this.received.push(...deliveries);
    this.inflight += deliveries.length;
    return deliveries.length;
  }
  leaseEnded(id: number, _token: string, why: LeaseNotice): void {
    this.notices.push({ id, why });
    this.inflight--;
    this.onFreed(this.queue);
  }
  /** The ids received, in order. */
  get ids(): number[] {
    return this.received.map((d) => d.job.id);
  }
}

/** Settlements the observer saw, in order. */
class Outcomes implements BrokerObserver {
  readonly outcomes: LeaseOutcome[] = [];
  enqueued(): void {}
  delivered(): void {}
  settled(_queue: string, outcome: LeaseOutcome): void {
    this.outcomes.push(outcome);
  }
  intakeHeld(): void {}
}

interface Harness extends AsyncDisposable {
  broker: Broker;
  clock: ManualClock;
  observer: Outcomes;
  /** Enqueues jobs due now (or `delayMs` later); answers their ids. */
  enqueue(queue: string, n: number, more?: Partial<NewJob>): Promise<number[]>;
  /** A job's state and attempts. */
  job(id: number): Promise<{ state: string; attempts: number }>;
  /** A subscriber to `queue` that wakes the broker when its credit frees, subscribed. */
  subscribe(queue: string, prefetch: number, leaseMs?: number | null): FakeSubscriber;
  /** Moves fake time and lets the broker's timer work finish. */
  advance(ms: number): Promise<void>;
}

async function startBroker(): Promise<Harness> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-broker-" });
  const store = SqliteStore.open({
    path: `${dir}/tegami.db`,
    sync: "normal",
    policy: { defaultLeaseMs: LEASE_MS, retryDelayMs: () => 1000 },
  });
  const clock = new ManualClock();
  const observer = new Outcomes();
  const broker = new Broker({ store, clock, retainDoneMs: 24 * 3600_000, observer });
  await broker.start();
  return {
    broker,
    clock,
    observer,
    async enqueue(queue, n, more = {}) {
      const jobs = Array.from({ length: n }, (_, i): NewJob => ({
        payload: String(i),
        priority: 0,
        key: null,
        run_at: clock.now(),
        max_attempts: 3,
        lease_ms: null,
        backoff: null,
        ...more,
      }));
      return (await broker.enqueue(queue, jobs)).map((e) => e.id);
    },
    async job(id) {
      const job = await broker.get(id);
      assert.ok(job !== null, `job ${id} exists`);
      return { state: job.state, attempts: job.attempts };
    },
    subscribe(queue, prefetch, leaseMs = null) {
      const sub = new FakeSubscriber(queue, prefetch, leaseMs);
      sub.onFreed = (q) => broker.wake(q);
      broker.subscribe(sub);
      return sub;
    },
    async advance(ms) {
      clock.advance(ms);
      // The timer's tick is a store write: let it commit and its wakes dispatch.
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    },
    async [Symbol.asyncDispose]() {
      broker.close();
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("Broker.subscribe() offers jobs already waiting, up to the subscriber's credit", async () => {
  await using h = await startBroker();
  const ids = await h.enqueue("q", 5);
  const sub = h.subscribe("q", 2);
  await eventually(() => sub.received.length === 2, "two deliveries");
  assert.deepEqual(sub.ids, ids.slice(0, 2), "oldest first");
  assert.equal(sub.reserved, 0, "the reservation is given back with the hand-over");
  assert.equal((await h.job(ids[2])).state, "pending", "beyond the credit, jobs wait");
});

Deno.test("Broker tells the holder of an acked lease, whose wake refills the freed credit", async () => {
  await using h = await startBroker();
  const ids = await h.enqueue("q", 3);
  const sub = h.subscribe("q", 1);
  await eventually(() => sub.received.length === 1, "the first delivery");
  const first = sub.received[0];
  await h.broker.ack(first.job.id, first.lease.token, null);
  assert.deepEqual(sub.notices, [{ id: ids[0], why: "settled" }], "the holder hears of its ack");
  await eventually(() => sub.received.length === 2, "the refill");
  assert.equal(sub.received[1].job.id, ids[1]);
  assert.deepEqual(h.observer.outcomes, ["acked"]);
});

Deno.test("Broker deals jobs arriving one at a time to each subscriber in turn", async () => {
  await using h = await startBroker();
  const a = new FakeSubscriber("q", 10);
  const b = new FakeSubscriber("q", 10);
  const c = new FakeSubscriber("q", 10);
  for (const sub of [a, b, c]) h.broker.subscribe(sub);
  for (let i = 0; i < 6; i++) {
    await h.enqueue("q", 1);
    await eventually(() => a.inflight + b.inflight + c.inflight === i + 1, `delivery ${i}`);
  }
  assert.deepEqual([a.inflight, b.inflight, c.inflight], [2, 2, 2]);
});

Deno.test("Broker spreads a burst smaller than the total credit evenly", async () => {
  await using h = await startBroker();
  const subs = [new FakeSubscriber("q", 10), new FakeSubscriber("q", 10)];
  for (const sub of subs) h.broker.subscribe(sub);
  await h.enqueue("q", 6);
  await eventually(() => subs[0].inflight + subs[1].inflight === 6, "six deliveries");
  assert.deepEqual(subs.map((s) => s.inflight), [3, 3]);
});

Deno.test("Broker gives jobs refused at hand-over back uncounted, to the next subscriber", async () => {
  await using h = await startBroker();
  const [id] = await h.enqueue("q", 1);
  const gone = new FakeSubscriber("q", 1);
  gone.present = false;
  h.broker.subscribe(gone);
  await eventually(() => gone.refused.length > 0, "a hand-over refused");
  // One read for state and attempts: the refusing subscriber is offered the job again and again,
  // so a second read could find it leased anew.
  let attempts = -1;
  await eventually(async () => {
    const job = await h.job(id);
    attempts = job.attempts;
    return job.state === "pending";
  }, "the job given back");
  assert.equal(attempts, 0, "a delivery nobody received is no attempt");
  h.broker.unsubscribe(gone);
  const next = h.subscribe("q", 1);
  await eventually(() => next.received.length === 1, "redelivery");
  assert.equal(next.received[0].job.attempts, 1);
});

Deno.test("Broker expires a lease at its deadline, tells the holder and redelivers", async () => {
  await using h = await startBroker();
  const [id] = await h.enqueue("q", 1);
  const sub = h.subscribe("q", 1, 1000);
  await eventually(() => sub.received.length === 1, "the delivery");
  await h.advance(999);
  assert.deepEqual(sub.notices, [], "not before the deadline");
  assert.equal((await h.job(id)).state, "leased");
  await h.advance(1);
  await eventually(() => sub.notices.length === 1, "the expiry notice");
  assert.deepEqual(sub.notices, [{ id, why: "expired" }]);
  await eventually(() => sub.received.length === 2, "the redelivery");
  assert.equal(sub.received[1].job.attempts, 2);
  assert.deepEqual(h.observer.outcomes, ["expired"]);
});

Deno.test("Broker moves the expiry deadline when a lease is extended shorter", async () => {
  await using h = await startBroker();
  const [id] = await h.enqueue("q", 1);
  const sub = h.subscribe("q", 1);
  await eventually(() => sub.received.length === 1, "the delivery");
  const { token } = sub.received[0].lease;
  const extended = await h.broker.extend(id, token, 200);
  assert.equal(extended.expires_at, h.clock.now() + 200);
  await h.advance(200);
  await eventually(() => sub.notices.length === 1, "the expiry at the new deadline");
  assert.equal(sub.notices[0].why, "expired");
});

Deno.test("Broker makes a delayed job available at its run_at and no sooner", async () => {
  await using h = await startBroker();
  const sub = h.subscribe("q", 5);
  const [id] = await h.enqueue("q", 1, { run_at: h.clock.now() + 5000 });
  await h.advance(4999);
  assert.equal(sub.received.length, 0);
  assert.equal((await h.job(id)).state, "delayed");
  await h.advance(1);
  await eventually(() => sub.received.length === 1, "the delivery at run_at");
});

Deno.test("Broker retries a nacked job after its delay, and dead-letters the last attempt", async () => {
  await using h = await startBroker();
  const [id] = await h.enqueue("q", 1, { max_attempts: 2 });
  const sub = h.subscribe("q", 1);
  await eventually(() => sub.received.length === 1, "the first attempt");
  const nack = { error: "boom", delay_ms: 500, dead: false };
  const first = await h.broker.nack(id, sub.received[0].lease.token, nack);
  assert.equal(first.state, "delayed");
  await h.advance(500);
  await eventually(() => sub.received.length === 2, "the retry");
  const last = await h.broker.nack(id, sub.received[1].lease.token, nack);
  assert.equal(last.state, "dead");
  assert.deepEqual(h.observer.outcomes, ["nacked", "dead"]);
  assert.deepEqual(sub.notices.map((n) => n.why), ["settled", "settled"]);
});

Deno.test("Broker.cancel() of a leased job tells its holder, which frees the credit", async () => {
  await using h = await startBroker();
  const ids = await h.enqueue("q", 2);
  const sub = h.subscribe("q", 1);
  await eventually(() => sub.received.length === 1, "the delivery");
  const result = await h.broker.cancel(ids[0]);
  assert.equal(result.state, "cancelled");
  assert.deepEqual(sub.notices, [{ id: ids[0], why: "cancelled" }]);
  await eventually(() => sub.received.length === 2, "the next job in the freed credit");
});

Deno.test("Broker.lease() long-polls: answers the first job to arrive, or nothing after the wait", async () => {
  await using h = await startBroker();
  const waiting = h.broker.lease("q", 5, 10_000, null);
  await eventually(() => h.broker.consumerCount("q") === 1, "the waiter joining the queue");
  const [id] = await h.enqueue("q", 1);
  const got = await waiting;
  assert.deepEqual(got.map((d) => d.job.id), [id]);
  assert.equal(h.broker.consumerCount("q"), 0, "the waiter leaves once answered");

  const empty = h.broker.lease("q", 1, 3000, null);
  await eventually(() => h.broker.consumerCount("q") === 1, "the second waiter");
  await h.advance(3000);
  assert.deepEqual(await empty, []);
});

Deno.test("Broker.close() answers long-polls with nothing and refuses new work", async () => {
  await using h = await startBroker();
  const waiting = h.broker.lease("q", 1, 60_000, null);
  await eventually(() => h.broker.consumerCount("q") === 1, "the waiter");
  h.broker.close();
  assert.deepEqual(await waiting, []);
  await assert.rejects(h.enqueue("q", 1), /shutting down/i);
});
