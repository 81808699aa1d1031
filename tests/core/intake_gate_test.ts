/**
 * Delivery before intake, on a real broker and each real store: an enqueue waits while its
 * queue's backlog is above its subscribers' prefetch and they have room, and goes on — never
 * failing — once delivery catches up, when nobody consumes, when consumers are busy, or after a
 * moment. SQLite knows its ready counts exactly; PostgreSQL estimates them (its claims count the
 * pending jobs while this server enqueues into the queue, see PgStore.backlogHint).
 */

import assert from "node:assert/strict";
import { Broker, type BrokerObserver, type Subscriber } from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import { MAX_HOLD_MS } from "../../lib/core/intake_gate.ts";
import type { Delivery, Enqueued, NewJob } from "../../lib/core/job.ts";
import type { Store } from "../../lib/store/store.ts";
import { DEFAULT_QUEUE_SETTINGS } from "../../lib/core/queue_settings.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import { PgStore } from "../../lib/store/postgres/pg_store.ts";
import { hasSettled } from "../helpers/http_calls.ts";
import { eventually } from "../helpers/ws_client.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";

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
  /** What it does once it has taken jobs (before the broker claims again). */
  onDeliver: () => void = () => {};
  constructor(readonly queue: string, readonly prefetch: number) {
    this.roomLeft = prefetch;
  }
  credit(): number {
    return Math.max(0, this.allowance - this.reserved);
  }
  reserve(n: number): void {
    this.reserved += n;
  }
  deliver(deliveries: Delivery[], reserved: number): number {
    this.reserved -= reserved;
    this.allowance -= deliveries.length;
    this.received.push(...deliveries);
    this.onDeliver();
    return deliveries.length;
  }
  room(): number {
    return this.roomLeft;
  }
}

const POLICY = { defaultLeaseMs: 30_000, retryDelayMs: () => 1000 };

/** A broker on a fresh store, and what the cases ask of it. */
interface Harness extends AsyncDisposable {
  broker: Broker;
  /** The enqueues the gate held, as the broker reported them. */
  holds: HoldLog["holds"];
  /** Has each hold, as it ends, note how many jobs `sub` had been delivered by then. */
  tally(sub: TestSubscriber): void;
  /** The backlog the gate sees for `queue`. */
  ready(queue: string): number | undefined;
  /**
   * True when `enqueue` was not held: it settles at once (SQLite's commits take no time to
   * speak of; a PostgreSQL one takes a few round trips, far less than a quarter of a hold).
   */
  admitted(enqueue: Promise<unknown>): Promise<boolean>;
}

/** What the gate reads of a store: its exact ready count, else its estimate. */
function readyOf(store: Store, queue: string): number | undefined {
  return store.readyHint(queue) ?? store.peers.backlogHint(queue);
}

/**
 * Enqueues the gate held, as the broker reports them to its observer (for metrics) once they go
 * on, each with how many jobs the tallied subscriber had been delivered at that moment.
 */
class HoldLog implements BrokerObserver {
  readonly holds: { queue: string; ms: number; delivered: number }[] = [];
  tallied: TestSubscriber | null = null;
  enqueued(): void {}
  delivered(): void {}
  settled(): void {}
  intakeHeld(queue: string, ms: number): void {
    this.holds.push({ queue, ms, delivered: this.tallied?.received.length ?? 0 });
  }
}

async function withBroker(
  store: Store,
  cleanup: () => Promise<void>,
  observer?: BrokerObserver,
): Promise<Broker> {
  const broker = new Broker({ store, clock: new ManualClock(), retainDoneMs: 3600_000, observer });
  await broker.start().catch(async (error) => {
    await cleanup();
    throw error;
  });
  return broker;
}

async function sqliteHarness(): Promise<Harness> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-gate-" });
  const store = SqliteStore.open({ path: `${dir}/tegami.db`, sync: "normal", policy: POLICY });
  const cleanup = async () => {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  };
  const log = new HoldLog();
  const broker = await withBroker(store, cleanup, log);
  return {
    broker,
    holds: log.holds,
    tally: (sub) => log.tallied = sub,
    ready: (queue) => readyOf(store, queue),
    admitted: hasSettled,
    [Symbol.asyncDispose]: async () => {
      broker.close();
      await cleanup();
    },
  };
}

const db = await pgTestDatabase();

async function pgHarness(): Promise<Harness> {
  const schema = db!.schema();
  const store = await PgStore.open({
    url: db!.url,
    schema,
    policy: POLICY,
    poolSize: 4,
    pollMs: 60_000,
  });
  const cleanup = async () => {
    await store.close();
    await db!.dropSchema(schema);
  };
  const log = new HoldLog();
  const broker = await withBroker(store, cleanup, log);
  return {
    broker,
    holds: log.holds,
    tally: (sub) => log.tallied = sub,
    ready: (queue) => readyOf(store, queue),
    admitted: (enqueue) => settlesWithin(enqueue, MAX_HOLD_MS / 4),
    [Symbol.asyncDispose]: async () => {
      broker.close();
      await cleanup();
    },
  };
}

/**
 * True when `enqueue` went on without being held: the broker reports every hold as it ends, and
 * none ended while it was on its way (nothing else is held meanwhile where this is asked).
 */
async function unheld(holds: HoldLog["holds"], enqueue: Promise<unknown>): Promise<boolean> {
  const before = holds.length;
  await enqueue;
  return holds.length === before;
}

/** True when `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms)),
  ]);
  clearTimeout(timer);
  return settled;
}

for (
  const [label, harness, ignore] of [
    ["sqlite", sqliteHarness, false],
    ["postgres", pgHarness, db === null],
  ] as const
) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test({ name: `${label}: ${name}`, ignore, fn });

  test("an enqueue waits while the backlog is above the subscribers' prefetch and they have room", async () => {
    await using h = await harness();
    const sub = new TestSubscriber("q", 4);
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(10)); // nothing ready yet: admitted at once
    assert.equal(h.ready("q"), 10);
    assert.equal(h.holds.length, 0);
    const startedAt = performance.now();
    const held = h.broker.enqueue("q", jobs(1));
    assert.equal(await h.admitted(held), false, "held while 10 are ready for a prefetch of 4");
    // Delivery catches up: the subscriber takes 7, leaving 3 ready, within its prefetch.
    sub.allowance = 7;
    h.broker.wake("q");
    const out = await held;
    assert.equal(out.length, 1);
    assert.equal(sub.received.length, 7);
    // The hold is reported for metrics (tegami_intake_hold_seconds), with how long it lasted.
    assert.equal(h.holds.length, 1);
    assert.equal(h.holds[0].queue, "q");
    assert.ok(h.holds[0].ms > 0 && h.holds[0].ms <= performance.now() - startedAt);
  });

  test("a backlog that stands above the bound holds enqueues too, until delivery drains it", async () => {
    await using h = await harness();
    // Whatever happens, the gate lets a held enqueue go once it has waited MAX_HOLD_MS of real
    // time; on a loaded machine that may come before the claims below. A hold that lasted that
    // long says nothing about what ended it, so the case is run again, on a queue of its own.
    for (let attempt = 1;; attempt++) {
      const queue = `q${attempt}`;
      const sub = new TestSubscriber(queue, 2); // a bound of half a job: any backlog is over it
      h.broker.subscribe(sub);
      h.tally(sub);
      await h.broker.enqueue(queue, jobs(10)); // a backlog a burst left: not growing, still deep
      // Four delivered leave 6 ready, 5.5 over the bound: what they let in is eaten by the
      // excess, so the backlog shrinks instead of staying where it was. Once it has them the
      // subscriber takes three more, which the broker claims at once: they leave 3 ready, 2.5
      // over, and three delivered less 2.5 of excess let the enqueue in.
      sub.onDeliver = () => {
        if (sub.received.length === 4) sub.allowance = 3;
      };
      sub.allowance = 4;
      h.broker.wake(queue); // the first claim is on its way
      const held = h.broker.enqueue(queue, jobs(1));
      assert.equal((await held).length, 1);
      await eventually(() => sub.received.length === 7, "both claims");
      h.broker.unsubscribe(sub);
      assert.equal(h.holds.length, attempt, "the enqueue was held");
      const hold = h.holds[attempt - 1];
      if (hold.ms >= MAX_HOLD_MS - 1) {
        assert.ok(attempt < 10, `every hold ran out (the last after ${hold.ms.toFixed(0)} ms)`);
        continue;
      }
      // It went on as the claim that brought the backlog down committed, not at the first one.
      assert.equal(hold.delivered, 7, "let in once 7 were delivered");
      return;
    }
  });

  test("held enqueues go on as jobs are delivered: as many jobs as delivered beyond the excess", async () => {
    await using h = await harness();
    const sub = new TestSubscriber("q", 2); // a bound of half a job: any backlog is over it
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(5));
    const first = h.broker.enqueue("q", jobs(2));
    const second = h.broker.enqueue("q", jobs(1));
    // Three delivered leave 2 ready, 1.5 over the bound: the 1.5 jobs' worth left lets the first
    // in (an enqueue goes whole); the second still waits.
    sub.allowance = 3;
    h.broker.wake("q");
    assert.equal((await first).length, 2);
    assert.equal(await h.admitted(second), false);
    // The first's two jobs make 4 ready; four delivered bring it to the bound: all go.
    sub.allowance = 4;
    h.broker.wake("q");
    assert.equal((await second).length, 1);
    assert.equal(sub.received.length, 7);
  });

  test("a deep backlog lets held enqueues in at the pace of delivery, not once worked down", async () => {
    await using h = await harness();
    const sub = new TestSubscriber("q", 2); // deep from 16 rounds of credit: 32 jobs
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(100));
    sub.allowance = 2;
    h.broker.wake("q");
    await eventually(() => sub.received.length === 2, "the first two deliveries");
    const startedAt = performance.now();
    const held = h.broker.enqueue("q", jobs(8));
    assert.equal(await h.admitted(held), false, "held: 98 ready for a prefetch of 2");
    // Two more delivered leave 96 ready, far over the bound, yet they let the enqueue in: new
    // jobs (which may well go first, at a higher priority) do not wait for the old to be worked
    // down, which could take as long as the backlog is deep.
    sub.allowance = 2;
    h.broker.wake("q");
    assert.equal((await held).length, 8);
    assert.ok(performance.now() - startedAt < MAX_HOLD_MS, "let in by delivery, not by the timer");
  });

  test("an enqueue is not held while the queue's concurrency holds delivery back", async () => {
    await using h = await harness();
    await h.broker.putSettings("q", { ...DEFAULT_QUEUE_SETTINGS, concurrency: 2 });
    const sub = new TestSubscriber("q", 4);
    sub.allowance = 4;
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(50));
    assert.equal(sub.received.length, 2);
    // An ack frees one slot: the next claim asks for 2 and gets 1 of the 47 ready. The
    // concurrency, not the server, keeps the backlog: producers are not slowed down to it.
    const [done] = sub.received;
    await h.broker.ack(done.job.id, done.lease.token, null);
    await eventually(() => sub.received.length === 3, "the delivery the ack allowed");
    assert.ok(await unheld(h.holds, h.broker.enqueue("q", jobs(1))), "not held");
  });

  test("an enqueue is not held when nobody subscribes: a burst goes at full speed", async () => {
    await using h = await harness();
    for (let i = 0; i < 5; i++) await h.broker.enqueue("q", jobs(100));
    assert.ok(await unheld(h.holds, h.broker.enqueue("q", jobs(1))), "not held");
    assert.equal(h.ready("q"), 501);
  });

  test("an enqueue is not held when the subscribers have no room: the backlog is theirs", async () => {
    await using h = await harness();
    const sub = new TestSubscriber("q", 2);
    sub.roomLeft = 0; // every credit in use by slow handlers
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(50));
    assert.ok(await unheld(h.holds, h.broker.enqueue("q", jobs(1))), "not held");
  });

  test("an enqueue is not held while the queue is paused", async () => {
    await using h = await harness();
    await h.broker.setPaused("q", true);
    const sub = new TestSubscriber("q", 2);
    sub.allowance = 2;
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(50)); // its wake finds nothing to claim: delivery stalled
    // Not unheld(): on PostgreSQL the gate may hold this one for the few ms until a claim that
    // counts the jobs sees the pause.
    assert.equal(await h.admitted(h.broker.enqueue("q", jobs(1))), true);
    assert.equal(sub.received.length, 0);
  });

  test("a held enqueue goes on by itself after a moment, and on shutdown", async () => {
    await using h = await harness();
    const sub = new TestSubscriber("q", 1);
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(10));
    const startedAt = performance.now();
    const held = h.broker.enqueue("q", jobs(1));
    assert.equal(await h.admitted(held), false);
    assert.equal((await held).length, 1);
    assert.ok(performance.now() - startedAt >= MAX_HOLD_MS - 5);
    const atClose = h.broker.enqueue("q", jobs(1));
    assert.equal(await h.admitted(atClose), false);
    h.broker.close();
    await assert.rejects(atClose, { code: "unavailable" });
  });

  test("a held enqueue goes on when the last subscriber leaves", async () => {
    await using h = await harness();
    const sub = new TestSubscriber("q", 1);
    h.broker.subscribe(sub);
    await h.broker.enqueue("q", jobs(10));
    const held = h.broker.enqueue("q", jobs(1));
    assert.equal(await h.admitted(held), false);
    h.broker.unsubscribe(sub);
    assert.equal((await held).length, 1);
  });
}

/**
 * Two servers on one PostgreSQL schema: `feeder` has no subscribers of "q", `consumer` has `sub`,
 * and the feeder has heard of it (a change of consumers is told at once, not at the next poll).
 */
interface PgPair extends AsyncDisposable {
  feeder: Broker;
  feederStore: PgStore;
  /** The enqueues the feeder's gate held. */
  holds: HoldLog["holds"];
  consumer: Broker;
  sub: TestSubscriber;
}

/** Resolves once the feeder's backlog watch has counted `ready` jobs. */
function counted(p: PgPair, ready: number): Promise<void> {
  return eventually(
    () => p.feederStore.peers.backlogSeen("q") === ready,
    `a count of the backlog that saw ${ready}`,
  );
}

/**
 * Has the feeder enqueue 10 jobs (no backlog known yet: admitted at once), waits for a count that
 * sees them, then enqueues one more and checks that it is still held after `checkMs`.
 */
async function holdOne(
  p: PgPair,
  checkMs: number,
): Promise<{ held: Promise<Enqueued[]>; startedAt: number }> {
  await p.feeder.enqueue("q", jobs(10));
  await counted(p, 10);
  const startedAt = performance.now();
  const held = p.feeder.enqueue("q", jobs(1));
  assert.equal(await settlesWithin(held, checkMs), false, "held: 10 ready, over the bound");
  return { held, startedAt };
}

async function pgPair(prefetch: number, stallMs: number, watchMs?: number): Promise<PgPair> {
  const schema = db!.schema();
  const open = () =>
    PgStore.open({
      url: db!.url,
      schema,
      policy: POLICY,
      poolSize: 4,
      pollMs: 60_000,
      stallMs,
      watchMs,
    });
  const feederStore = await open();
  const consumerStore = await open();
  const cleanup = async () => {
    await feederStore.close();
    await consumerStore.close();
    await db!.dropSchema(schema);
  };
  const log = new HoldLog();
  const feeder = await withBroker(feederStore, cleanup, log);
  const consumer = await withBroker(consumerStore, cleanup);
  const sub = new TestSubscriber("q", prefetch);
  consumer.subscribe(sub);
  await eventually(
    () => feederStore.peers.remotePrefetch("q") === prefetch,
    "the feeder hearing of the other server's subscriber",
  );
  return {
    feeder,
    feederStore,
    holds: log.holds,
    consumer,
    sub,
    [Symbol.asyncDispose]: async () => {
      feeder.close();
      consumer.close();
      await cleanup();
    },
  };
}

const pgTest = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name: `postgres: ${name}`, ignore: db === null, fn });

pgTest(
  "a server without subscribers holds enqueues while another server's lag behind, until they deliver",
  async () => {
    await using p = await pgPair(4, 10_000);
    // 10 ready for the other server's prefetch of 4.
    const { held, startedAt } = await holdOne(p, MAX_HOLD_MS / 4);
    // The other server delivers 7, leaving 3 ready: the feeder's next count of the backlog sees
    // it and lets the enqueue in.
    p.sub.allowance = 7;
    p.consumer.wake("q");
    assert.equal((await held).length, 1);
    assert.ok(performance.now() - startedAt < MAX_HOLD_MS, "let in by the delivery, not the timer");
    assert.equal(p.sub.received.length, 7);
  },
);

pgTest(
  "a server without subscribers holds nothing once the other servers' delivery stalls",
  async () => {
    await using p = await pgPair(4, 60);
    // The subscriber takes nothing (as when the queue is paused or its consumers are busy).
    const { held, startedAt } = await holdOne(p, 15);
    await held;
    assert.ok(performance.now() - startedAt < MAX_HOLD_MS, "let in once delivery stalled");
    assert.ok(await unheld(p.holds, p.feeder.enqueue("q", jobs(1))), "not held");
    assert.equal(p.sub.received.length, 0);
  },
);

pgTest(
  "a server's own busy subscribers keep its enqueues from being held, other servers' or not",
  async () => {
    await using p = await pgPair(4, 10_000);
    const own = new TestSubscriber("q", 2);
    own.roomLeft = 0; // every credit in use by slow handlers
    p.feeder.subscribe(own);
    await p.feeder.enqueue("q", jobs(50));
    // The backlog is measured against both servers' credit, but with its own subscribers busy the
    // backlog is theirs to work through, as on a server alone.
    for (let i = 0; i < 3; i++) {
      assert.ok(await unheld(p.holds, p.feeder.enqueue("q", jobs(1))), "not held");
    }
  },
);

pgTest(
  "a server without subscribers lets its held enqueues in once the other servers' subscribers leave",
  async () => {
    await using p = await pgPair(4, 10_000);
    const { held, startedAt } = await holdOne(p, 10);
    // Nobody consumes the queue any more: nothing is to be held, and the feeder hears of it
    // (about 20 ms after the change) before the hold would have run out.
    p.consumer.unsubscribe(p.sub);
    assert.equal((await held).length, 1);
    assert.ok(performance.now() - startedAt < MAX_HOLD_MS, "let in by the change, not the timer");
    assert.equal(p.feederStore.peers.remotePrefetch("q"), 0);
  },
);

pgTest(
  "a server without subscribers holds nothing before a count has seen the backlog over the bound",
  async () => {
    // No count of the backlog comes during this test: what the feeder knows is what it enqueued.
    await using p = await pgPair(1, 10_000, 60_000);
    p.sub.allowance = 100;
    // One job at a time, each delivered on the other server before the next is sent, as on an
    // idle queue: the feeder's estimate grows by one at each (nothing tells it of the
    // deliveries), over the other server's prefetch of 1 from the third.
    for (let n = 1; n <= 4; n++) {
      await p.feeder.enqueue("q", jobs(1));
      p.consumer.wake("q");
      await eventually(() => p.sub.received.length === n, `delivery ${n}`);
    }
    assert.equal(p.feederStore.peers.backlogHint("q"), 4);
    assert.deepEqual(p.holds, [], "nothing held: no count saw a backlog");
  },
);

pgTest(
  "once a count saw the backlog over the bound, the jobs accepted since count until the next",
  async () => {
    await using p = await pgPair(4, 10_000, 60); // counts 60 ms apart
    await p.feeder.enqueue("q", jobs(10));
    await counted(p, 10); // over the other server's prefetch of 4
    p.sub.allowance = 10;
    p.consumer.wake("q");
    await counted(p, 0); // all delivered
    await p.feeder.enqueue("q", jobs(5)); // none ready as counted: admitted
    // 5 accepted since the last count, over the bound: held, though no count has seen them yet.
    assert.equal(await settlesWithin(p.feeder.enqueue("q", jobs(1)), MAX_HOLD_MS / 4), false);
  },
);

pgTest("a count of the backlog older than 100 ms is no reason to hold", async () => {
  // Counts 150 ms apart: the one that saw 10 ready is stale before the next.
  await using p = await pgPair(4, 10_000, 150);
  await p.feeder.enqueue("q", jobs(10));
  await counted(p, 10);
  await new Promise((resolve) => setTimeout(resolve, 110));
  assert.ok(await unheld(p.holds, p.feeder.enqueue("q", jobs(1))), "not held");
  assert.deepEqual(p.holds, []);
});

pgTest("a backlog too deep for the count to read is not held", async () => {
  await using p = await pgPair(200, 10_000); // deep from 3 200 jobs; a count reads 2 000
  for (let i = 0; i < 5; i++) await p.feeder.enqueue("q", jobs(420));
  await eventually(
    () => p.feederStore.peers.backlogHint("q") === Infinity,
    "a count that reached its limit",
  );
  // 2 100 ready: fewer than 16 rounds, but the count cannot tell how many more there are, nor
  // whether the other server still delivers any: nothing is held.
  assert.ok(await unheld(p.holds, p.feeder.enqueue("q", jobs(1))), "not held");
});

pgTest("a deep backlog that only other servers consume is not held", async () => {
  await using p = await pgPair(1, 10_000); // deep from 16 rounds of credit: 16 jobs
  await p.feeder.enqueue("q", jobs(50));
  await counted(p, 50);
  // Whether the other server's consumers are busy with it cannot be seen from here.
  assert.ok(await unheld(p.holds, p.feeder.enqueue("q", jobs(1))), "not held");
});

dropPgTestDatabaseAfterwards(db);
