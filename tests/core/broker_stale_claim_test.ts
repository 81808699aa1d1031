/**
 * An attempt is used by a delivery: a claim answered after its leases' whole length (a server
 * stalled, or waited for its database, between asking and being answered) is not pushed, and no
 * tick ends the leases it carries meanwhile. The broker gives those jobs back as undelivered, so
 * no consumer gets a lease it cannot ack and no attempt is spent on one nobody saw. The manual
 * clock stands in for the stall; every case runs on SQLite and on PostgreSQL.
 */

import assert from "node:assert/strict";
import {
  Broker,
  type LeaseHolder,
  type LeaseNotice,
  type Subscriber,
} from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import type { Delivery, NewJob } from "../../lib/core/job.ts";
import { HANDOVER_GRACE_MS } from "../../lib/core/lifecycle.ts";
import { PgStore } from "../../lib/store/postgres/pg_store.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import type { Store } from "../../lib/store/store.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { eventually } from "../helpers/ws_client.ts";

const LEASE_MS = 30_000;
const POLICY = { defaultLeaseMs: LEASE_MS, retryDelayMs: () => 1000 };

function job(now: number, more: Partial<NewJob> = {}): NewJob {
  return {
    payload: "1",
    priority: 0,
    key: null,
    run_at: now,
    max_attempts: 1,
    lease_ms: null,
    backoff: null,
    ...more,
  };
}

/** A subscriber of `queue` with room for `prefetch` jobs that records what it gets and hears. */
class Taker implements Subscriber, LeaseHolder {
  readonly received: Delivery[] = [];
  readonly heard: { id: number; why: LeaseNotice }[] = [];
  constructor(
    readonly queue: string,
    readonly prefetch: number,
    readonly leaseMs: number | null = null,
  ) {}
  get holder(): LeaseHolder {
    return this;
  }
  credit(): number {
    return this.prefetch - this.received.length;
  }
  reserve(): void {}
  deliver(deliveries: Delivery[]): number {
    this.received.push(...deliveries);
    return deliveries.length;
  }
  leaseEnded(id: number, _token: string, why: LeaseNotice): void {
    this.heard.push({ id, why });
  }
}

/**
 * How the store answers claims of queue "q": `stalls` of them a lease length late (the clock
 * moves while they are answered), or, while `held` is set, only once it resolves.
 */
interface Control {
  stalls: number;
  held: Promise<void> | null;
  /** Resolves once a claim is being held. */
  holding: PromiseWithResolvers<void>;
}

/** Wraps `store`'s claims of queue "q" as `control` says. */
function controlClaims(store: Store, clock: ManualClock, control: Control): void {
  const late = async <T>(queue: string, got: T, leased: boolean): Promise<T> => {
    if (queue !== "q" || !leased) return got;
    if (control.stalls > 0) {
      control.stalls--;
      clock.advance(LEASE_MS);
    }
    if (control.held !== null) {
      control.holding.resolve();
      await control.held;
    }
    return got;
  };
  const claimFair = store.claimFair.bind(store);
  store.claimFair = async (queue, wants, now) => {
    const lists = await claimFair(queue, wants, now);
    return late(queue, lists, lists.some((l) => l.length > 0));
  };
  const claim = store.claim.bind(store);
  store.claim = async (queue, max, leaseMs, now) => {
    const got = await claim(queue, max, leaseMs, now);
    return late(queue, got, got.length > 0);
  };
}

interface Harness extends AsyncDisposable {
  broker: Broker;
  clock: ManualClock;
  control: Control;
}

async function withBroker(store: Store, cleanup: () => Promise<void>): Promise<Harness> {
  const clock = new ManualClock();
  const control: Control = { stalls: 0, held: null, holding: Promise.withResolvers() };
  controlClaims(store, clock, control);
  const broker = new Broker({ store, clock, retainDoneMs: 3600_000 });
  await broker.start();
  return {
    broker,
    clock,
    control,
    async [Symbol.asyncDispose]() {
      broker.close();
      await cleanup();
    },
  };
}

async function sqliteHarness(): Promise<Harness> {
  const dir = await tempDir();
  const store = SqliteStore.open({ path: `${dir.path}/tegami.db`, sync: "normal", policy: POLICY });
  return await withBroker(store, async () => {
    await store.close();
    await dir[Symbol.asyncDispose]();
  });
}

const db = await pgTestDatabase();

async function pgHarness(): Promise<Harness> {
  const schema = db!.schema();
  const store = await PgStore.open({ url: db!.url, schema, policy: POLICY, pollMs: 60_000 });
  return await withBroker(store, async () => {
    await store.close();
    await db!.dropSchema(schema);
  });
}

/**
 * Makes the broker's timer tick while a claim of "q" is held: a job of queue "t" is pushed with
 * a 100 ms lease that nobody acks, and the clock moves past its end and the grace. Answers once
 * that tick has ended it.
 */
async function tickPastTheGrace(h: Harness): Promise<void> {
  const ticker = new Taker("t", 1, 100);
  h.broker.subscribe(ticker);
  await h.broker.enqueue("t", [job(h.clock.now(), { max_attempts: 5 })]);
  await eventually(() => ticker.received.length === 1, "the other queue's delivery");
  h.clock.advance(100 + HANDOVER_GRACE_MS + 1);
  await eventually(() => ticker.heard.length === 1, "the timer's tick");
  h.broker.unsubscribe(ticker);
}

for (
  const [label, harness, ignore] of [
    ["sqlite", sqliteHarness, false],
    ["postgres", pgHarness, db === null],
  ] as const
) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${label}: ${name}`, ignore, fn });

  test("a pushed claim whose leases ended while it was answered goes back, attempt uncounted", async () => {
    await using h = await harness();
    const [{ id }] = await h.broker.enqueue("q", [job(h.clock.now())]);
    const sub = new Taker("q", 1);
    h.control.stalls = 1;
    h.broker.subscribe(sub);
    // The stalled claim is given back with its attempt unspent (the job allows one), and the
    // claim its release wakes pushes the job with a lease that runs.
    await eventually(() => sub.received.length === 1, "the delivery");
    assert.equal(h.control.stalls, 0, "the first claim stalled");
    assert.equal(sub.received[0].job.attempts, 1, "the stalled attempt was not counted");
    assert.ok(sub.received[0].lease.expires_at > h.clock.now());
    await h.broker.ack(id, sub.received[0].lease.token, null);
  });

  test("a lease call answered after its leases ended answers nothing and gives the jobs back", async () => {
    await using h = await harness();
    const [{ id }] = await h.broker.enqueue("q", [job(h.clock.now())]);
    h.control.stalls = 1;
    assert.deepEqual(await h.broker.lease("q", 1, 0, null), []);
    await eventually(async () => (await h.broker.get(id))?.state === "pending", "the job back");
    assert.equal((await h.broker.get(id))?.attempts, 0);
    const [got] = await h.broker.lease("q", 1, 0, null);
    assert.equal(got.job.id, id);
    assert.ok(got.lease.expires_at > h.clock.now());
  });

  test("a tick while a pushed claim is on its way leaves its leases, even past the grace", async () => {
    await using h = await harness();
    const [{ id }] = await h.broker.enqueue("q", [job(h.clock.now())]);
    const held = Promise.withResolvers<void>();
    h.control.held = held.promise;
    const sub = new Taker("q", 1, 100);
    h.broker.subscribe(sub);
    await h.control.holding.promise;
    await tickPastTheGrace(h);
    assert.equal((await h.broker.get(id))?.state, "leased", "the tick left the claim's lease");
    h.control.held = null;
    held.resolve();
    // The claim finds its lease over, gives the job back uncounted, and the next claim pushes it.
    await eventually(() => sub.received.length === 1, "the delivery after the hold");
    assert.equal(sub.received[0].job.id, id);
    assert.equal(sub.received[0].job.attempts, 1, "only the delivery that arrived counted");
    assert.deepEqual(sub.heard, []);
  });

  test("a tick while a lease call is on its way leaves its leases, even past the grace", async () => {
    await using h = await harness();
    const [{ id }] = await h.broker.enqueue("q", [job(h.clock.now())]);
    const held = Promise.withResolvers<void>();
    h.control.held = held.promise;
    const call = h.broker.lease("q", 1, 0, 100);
    await h.control.holding.promise;
    await tickPastTheGrace(h);
    assert.equal((await h.broker.get(id))?.state, "leased", "the tick left the claim's lease");
    h.control.held = null;
    held.resolve();
    assert.deepEqual(await call, [], "a lease that ran out on its way is not answered");
    await eventually(async () => (await h.broker.get(id))?.state === "pending", "the job back");
    const [got] = await h.broker.lease("q", 1, 0, 100);
    assert.equal(got.job.id, id);
    assert.equal(got.job.attempts, 1);
  });
}

dropPgTestDatabaseAfterwards(db);
