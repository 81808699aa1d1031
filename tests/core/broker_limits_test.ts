/**
 * The broker over a store with ordering groups, a queue concurrency and a rate: slots freed by
 * any lease end are offered again, a rate-held queue is offered again when its next token
 * comes (a timer on the manual clock, never a spin), and a property test over random
 * sequences of enqueues, settles, expiries, cancels and reconnects.
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { setImmediate } from "node:timers";
import { Broker, type LeaseHolder, type Subscriber } from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import type { Delivery, Job } from "../../lib/core/job.ts";
import { defaultQueueSettings, type QueueSettings } from "../../lib/core/queue_settings.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import type { Store } from "../../lib/store/store.ts";
import { newJob } from "../helpers/new_job.ts";

const LEASE_MS = 30_000;

/** A subscriber with a prefetch that keeps what it holds and frees credit when told. */
class Holder implements Subscriber, LeaseHolder {
  readonly held = new Map<number, Delivery>();
  readonly received: Delivery[] = [];
  reserved = 0;
  onDelivered: (d: Delivery) => void = () => {};
  constructor(readonly queue: string, readonly prefetch: number, readonly broker: Broker) {}
  readonly leaseMs = null;
  get holder(): LeaseHolder {
    return this;
  }
  credit(): number {
    return Math.max(0, this.prefetch - this.held.size - this.reserved);
  }
  reserve(n: number): void {
    this.reserved += n;
  }
  deliver(deliveries: Delivery[], reserved: number): number {
    this.reserved -= reserved;
    for (const d of deliveries) {
      this.held.set(d.job.id, d);
      this.received.push(d);
      this.onDelivered(d);
    }
    return deliveries.length;
  }
  leaseEnded(id: number): void {
    this.held.delete(id);
    this.broker.wake(this.queue);
  }
  /** Settles a held job (ack or nack) as a connection would: frees the credit, wakes. */
  async settle(id: number, how: "ack" | "nack", delayMs = 0): Promise<void> {
    const d = this.held.get(id);
    if (d === undefined) return;
    this.held.delete(id);
    if (how === "ack") await this.broker.ack(id, d.lease.token, null);
    else await this.broker.nack(id, d.lease.token, { error: "x", delay_ms: delayMs, dead: false });
    this.broker.wake(this.queue);
  }
}

/** Lets commits and the wakes they cause finish (macrotasks, not time: the clock is manual). */
async function settle(): Promise<void> {
  for (let i = 0; i < 6; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Lets the commits, wakes and claims of one step finish, as {@linkcode settle} does, by turns of
 * the event loop (`setImmediate`) in place of zero timers, which Deno fires milliseconds later:
 * the SQLite store schedules its commits with microtasks and `setImmediate`, so these turns
 * reach the same state, at a step of a property that takes thousands of them.
 */
async function settleTurns(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A store whose claims are counted. */
function counting(store: Store): { store: Store; claims: () => number } {
  let n = 0;
  const claimFair = store.claimFair.bind(store);
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "claimFair") {
        return (...args: Parameters<Store["claimFair"]>) => {
          n++;
          return claimFair(...args);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: wrapped, claims: () => n };
}

async function open(settings: Partial<QueueSettings> = {}) {
  const inner = SqliteStore.open({
    path: ":memory:",
    policy: { defaultLeaseMs: LEASE_MS, retryDelayMs: () => 1000 },
  });
  const { store, claims } = counting(inner);
  const clock = new ManualClock();
  const broker = new Broker({ store, clock, retainDoneMs: 3600_000 });
  await broker.start();
  await broker.putSettings("q", { ...defaultQueueSettings(), ...settings });
  return {
    store: inner,
    broker,
    clock,
    claims,
    async [Symbol.asyncDispose]() {
      broker.close();
      await inner.close();
    },
  };
}

Deno.test("Broker pushes a group's next job once an ack frees its slot, to whoever has credit", async () => {
  await using h = await open();
  const a = new Holder("q", 5, h.broker);
  const b = new Holder("q", 5, h.broker);
  h.broker.subscribe(a);
  h.broker.subscribe(b);
  const ids = (await h.broker.enqueue(
    "q",
    [1, 2, 3].map(() =>
      newJob("1", h.clock.now(), {
        group: "g",
      })
    ),
  )).map((e) => e.id);
  await settle();
  assert.deepEqual([...a.held.keys(), ...b.held.keys()], [ids[0]]);
  // An ack that is not the holder's own (as over HTTP): the broker itself offers the queue.
  const holder = a.held.has(ids[0]) ? a : b;
  await h.broker.ack(ids[0], holder.held.get(ids[0])!.lease.token, null);
  await settle();
  assert.deepEqual([...a.held.keys(), ...b.held.keys()], [ids[1]]);
});

Deno.test("Broker offers a rate-held queue again when its next token comes, without spinning", async () => {
  await using h = await open({ rate: { limit: 10, per_ms: 1_000 } });
  const sub = new Holder("q", 10, h.broker);
  h.broker.subscribe(sub);
  await h.broker.enqueue("q", Array.from({ length: 5 }, () => newJob("1", h.clock.now())));
  await settle();
  assert.equal(sub.received.length, 1);
  const claims = h.claims();
  await settle();
  await settle();
  assert.equal(h.claims(), claims, "no claim while no token can come");
  h.clock.advance(99);
  await settle();
  assert.equal(sub.received.length, 1);
  h.clock.advance(1);
  await settle();
  assert.equal(sub.received.length, 2);
});

Deno.test("Broker.lease() long-polls obey the queue's concurrency", async () => {
  await using h = await open({ concurrency: 1 });
  await h.broker.enqueue("q", [newJob("1", h.clock.now()), newJob("2", h.clock.now())]);
  const [first] = await h.broker.lease("q", 5, 0, null);
  let second: Delivery[] | null = null;
  const waiting = h.broker.lease("q", 5, 10_000, null).then((d) => second = d);
  await settle();
  assert.equal(second, null);
  await h.broker.ack(first.job.id, first.lease.token, null);
  await waiting;
  assert.equal(second!.length, 1);
});

Deno.test("Broker: no group over its limit, no queue over its concurrency, groups in order (property)", async () => {
  const action = fc.oneof(
    fc.record({
      op: fc.constant("enqueue" as const),
      group: fc.constantFrom("a", "b", "c", null),
      priority: fc.integer({ min: 0, max: 2 }),
      n: fc.integer({ min: 1, max: 4 }),
    }),
    fc.record({ op: fc.constant("ack" as const), pick: fc.nat() }),
    fc.record({
      op: fc.constant("nack" as const),
      pick: fc.nat(),
      delay: fc.constantFrom(0, 500),
    }),
    fc.record({ op: fc.constant("advance" as const), ms: fc.constantFrom(100, 600, 31_000) }),
    fc.record({ op: fc.constant("cancel" as const), pick: fc.nat() }),
    fc.record({ op: fc.constant("reconnect" as const), which: fc.nat({ max: 1 }) }),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.array(action, { minLength: 5, maxLength: 40 }),
      fc.integer({ min: 1, max: 2 }),
      fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
      async (actions, groupLimit, concurrency) => {
        await using h = await open({ group_limit: groupLimit, concurrency });
        const failures: string[] = [];
        const all: number[] = [];
        /** Checks, at a delivery, that it was its group's first job and no limit is passed. */
        const check = (d: Delivery) => {
          // The SQLite store runs a read at the call: this sees the state the claim left.
          const page = { order: "oldest" as const, after: null, limit: 1000 };
          const pending = h.store.listJobs("q", { ...page, state: "pending" });
          const leased = h.store.listJobs("q", { ...page, state: "leased" });
          Promise.all([pending, leased]).then(([p, l]) => {
            const before = (x: Job, y: Job) =>
              x.priority > y.priority || (x.priority === y.priority && x.id < y.id);
            if (d.job.group !== null) {
              const ahead = p.find((j) => j.group === d.job.group && before(j, d.job));
              if (ahead) failures.push(`job ${d.job.id} delivered before ${ahead.id}`);
            }
            const per = new Map<string, number>();
            for (const j of l) if (j.group) per.set(j.group, (per.get(j.group) ?? 0) + 1);
            for (const [g, n] of per) if (n > groupLimit) failures.push(`${n} of ${g} leased`);
            if (concurrency !== null && l.length > concurrency) {
              failures.push(`${l.length} leased, concurrency ${concurrency}`);
            }
          });
        };
        const subs = [new Holder("q", 3, h.broker), new Holder("q", 2, h.broker)];
        for (const sub of subs) {
          sub.onDelivered = check;
          h.broker.subscribe(sub);
        }
        const heldAll = () => subs.flatMap((s) => [...s.held.keys()].map((id) => ({ s, id })));
        for (const a of actions) {
          if (a.op === "enqueue") {
            const jobs = Array.from(
              { length: a.n },
              () => newJob("1", h.clock.now(), { group: a.group, priority: a.priority }),
            );
            for (const e of await h.broker.enqueue("q", jobs)) all.push(e.id);
          } else if (a.op === "ack" || a.op === "nack") {
            const held = heldAll();
            if (held.length > 0) {
              const { s, id } = held[a.pick % held.length];
              await s.settle(id, a.op, a.op === "nack" ? a.delay : 0).catch(() => {});
            }
          } else if (a.op === "advance") {
            h.clock.advance(a.ms);
          } else if (a.op === "cancel") {
            if (all.length > 0) await h.broker.cancel(all[a.pick % all.length]).catch(() => {});
          } else {
            const old = subs[a.which];
            h.broker.unsubscribe(old);
            const leases = [...old.held.values()].map((d) => ({
              id: d.job.id,
              token: d.lease.token,
            }));
            h.broker.forgetHolder(leases.map((l) => l.token));
            old.held.clear();
            await h.broker.release(leases);
            const fresh = new Holder("q", old.prefetch, h.broker);
            fresh.onDelivered = check;
            subs[a.which] = fresh;
            h.broker.subscribe(fresh);
          }
          await settleTurns();
        }
        await settle();
        assert.deepEqual(failures, []);
      },
    ),
    { numRuns: 60 },
  );
});
