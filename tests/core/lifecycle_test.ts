import assert from "node:assert/strict";
import fc from "fast-check";
import { TegamiError } from "../../lib/core/errors.ts";
import {
  afterLeaseEnd,
  afterNack,
  type AttemptedRow,
  attemptsExhausted,
  cancelRemoves,
  claimLeaseMs,
  claimTotal,
  dealRoundRobin,
  extendLeaseMs,
  HANDOVER_GRACE_MS,
  type HandOvers,
  holdsLease,
  initialState,
  leaseDeadline,
  leaseEndDue,
  type LifecyclePolicy,
  nextLeaseDeadline,
  runNowPromotes,
} from "../../lib/core/lifecycle.ts";

const POLICY: LifecyclePolicy = {
  defaultLeaseMs: 30_000,
  retryDelayMs: (attempt, backoff) => (backoff?.base_ms ?? 1000) * 2 ** (attempt - 1),
};

const NOW = 1_000_000;

function row(attempts: number, max_attempts: number, more: Partial<AttemptedRow> = {}) {
  return { attempts, max_attempts, last_error: null, backoff: null, ...more };
}

const NACK = { error: null, delay_ms: null, dead: false };

Deno.test("initialState() is pending for a job due now or earlier, delayed for a later one", () => {
  assert.equal(initialState(NOW, NOW), "pending");
  assert.equal(initialState(NOW - 1, NOW), "pending");
  assert.equal(initialState(NOW + 1, NOW), "delayed");
});

Deno.test("claimLeaseMs() takes the consumer's length, else the job's own, else the server's", () => {
  assert.equal(claimLeaseMs(5000, 7000, POLICY), 5000);
  assert.equal(claimLeaseMs(null, 7000, POLICY), 7000);
  assert.equal(claimLeaseMs(null, null, POLICY), 30_000);
});

Deno.test("extendLeaseMs() takes the length asked for, else the one in force, else the server's", () => {
  assert.equal(extendLeaseMs(2000, 9000, POLICY), 2000);
  assert.equal(extendLeaseMs(null, 9000, POLICY), 9000);
  assert.equal(extendLeaseMs(null, null, POLICY), 30_000);
});

Deno.test("holdsLease() needs the leased state, the same token and a lease that has not run out", () => {
  const leased = { state: "leased" as const, lease_token: "t", lease_expires_at: NOW + 1 };
  assert.equal(holdsLease(leased, "t", NOW), true);
  assert.equal(holdsLease(leased, "other", NOW), false);
  assert.equal(holdsLease(leased, "t", NOW + 1), false, "a lease ends at its expiry instant");
  assert.equal(holdsLease({ ...leased, state: "done" }, "t", NOW), false);
  assert.equal(holdsLease({ ...leased, lease_expires_at: null }, "t", NOW), false);
});

Deno.test("attemptsExhausted() is true once the attempts reach max_attempts", () => {
  assert.equal(attemptsExhausted(row(2, 3)), false);
  assert.equal(attemptsExhausted(row(3, 3)), true);
  assert.equal(attemptsExhausted(row(4, 3)), true);
});

Deno.test("afterNack() retries after the backoff for the failed attempt, keeping the last error", () => {
  const next = afterNack(row(2, 5, { last_error: "old" }), NACK, NOW, POLICY);
  assert.deepEqual(next, { state: "delayed", run_at: NOW + 2000, error: "old", attempts: 2 });
});

Deno.test("afterNack() uses the job's own backoff and records the new error", () => {
  const own = row(1, 5, { backoff: { base_ms: 300, max_ms: 1000 } });
  const next = afterNack(own, { ...NACK, error: "boom" }, NOW, POLICY);
  assert.deepEqual(next, { state: "delayed", run_at: NOW + 300, error: "boom", attempts: 1 });
});

Deno.test("afterNack() with delay_ms waits exactly that long; 0 or less is pending at once", () => {
  assert.equal(afterNack(row(1, 5), { ...NACK, delay_ms: 50 }, NOW, POLICY).run_at, NOW + 50);
  assert.deepEqual(afterNack(row(1, 5), { ...NACK, delay_ms: 0 }, NOW, POLICY), {
    state: "pending",
    run_at: NOW,
    error: null,
    attempts: 1,
  });
  assert.equal(afterNack(row(1, 5), { ...NACK, delay_ms: -5 }, NOW, POLICY).state, "pending");
});

Deno.test("afterNack() sends the job to dead when asked or on its last attempt", () => {
  assert.deepEqual(afterNack(row(1, 5), { ...NACK, dead: true, error: "bad" }, NOW, POLICY), {
    state: "dead",
    run_at: NOW,
    error: "bad",
    attempts: 1,
  });
  assert.equal(afterNack(row(5, 5), NACK, NOW, POLICY).state, "dead");
});

Deno.test("afterLeaseEnd() makes the job pending at once while attempts remain", () => {
  const next = afterLeaseEnd(row(1, 3, { last_error: "e" }), "expired", NOW);
  assert.deepEqual(next, { state: "pending", run_at: NOW, error: "e", attempts: 1 });
});

Deno.test("afterLeaseEnd() on the last attempt makes the job dead and says why", () => {
  assert.deepEqual(afterLeaseEnd(row(3, 3), "expired", NOW), {
    state: "dead",
    run_at: NOW,
    error: "Lease expired on attempt 3 of 3",
    attempts: 3,
  });
  assert.equal(
    afterLeaseEnd(row(3, 3), "released", NOW).error,
    "Consumer went away on attempt 3 of 3",
  );
});

Deno.test("afterLeaseEnd() of an undelivered lease does not count the attempt, even the last", () => {
  assert.deepEqual(afterLeaseEnd(row(3, 3), "undelivered", NOW), {
    state: "pending",
    run_at: NOW,
    error: null,
    attempts: 2,
  });
});

Deno.test("cancelRemoves() is true for finished jobs only", () => {
  assert.deepEqual(
    (["pending", "delayed", "leased", "done", "dead", "cancelled"] as const).filter(cancelRemoves),
    ["done", "dead", "cancelled"],
  );
});

Deno.test("dealRoundRobin() deals one job to each want in turn, skipping wants that are full", () => {
  assert.deepEqual(dealRoundRobin(3, [{ max: 5 }, { max: 5 }, { max: 5 }]), [0, 1, 2]);
  assert.deepEqual(dealRoundRobin(5, [{ max: 1 }, { max: 3 }, { max: 1 }]), [0, 1, 2, 1, 1]);
  assert.deepEqual(dealRoundRobin(0, [{ max: 2 }]), []);
  assert.equal(claimTotal([{ max: 1 }, { max: 3 }, { max: 1 }]), 5);
});

Deno.test("dealRoundRobin() refuses more jobs than the wants can take", () => {
  assert.throws(() => dealRoundRobin(3, [{ max: 1 }, { max: 1 }]), RangeError);
});

Deno.test("dealRoundRobin() never overfills a want and spreads a burst within one job", () => {
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 8 }),
    fc.nat(),
    (maxes, seed) => {
      const wants = maxes.map((max) => ({ max }));
      const jobs = seed % (claimTotal(wants) + 1);
      const taken = maxes.map(() => 0);
      for (const w of dealRoundRobin(jobs, wants)) taken[w]++;
      const counts = taken.filter((n, i) => n < maxes[i]); // wants left with room
      for (let i = 0; i < maxes.length; i++) assert.ok(taken[i] <= maxes[i]);
      // A want with room never has two jobs fewer than any other want.
      const least = Math.min(...counts);
      for (const n of taken) assert.ok(counts.length === 0 || n <= least + 1);
    },
  ));
});

Deno.test("runNowPromotes() promotes a delayed job, leaves a pending one and refuses the rest", () => {
  assert.equal(runNowPromotes(7, "delayed"), true);
  assert.equal(runNowPromotes(7, "pending"), false);
  for (const state of ["leased", "done", "dead", "cancelled"] as const) {
    assert.throws(
      () => runNowPromotes(7, state),
      (error: unknown) => error instanceof TegamiError && error.code === "conflict",
    );
  }
});

/** A lease of 1 s that began at NOW. */
const LEASE = { lease_token: "t", lease_expires_at: NOW + 1_000, lease_len_ms: 1_000 };

function handOvers(more: Partial<HandOvers> = {}): HandOvers {
  return { handedOver: () => false, claimingSince: null, ...more };
}

Deno.test("leaseEndDue() ends a lease handed over here at its end, and none before", () => {
  const mine = handOvers({ handedOver: (token) => token === "t" });
  for (const alone of [false, true]) {
    assert.equal(leaseEndDue(LEASE, NOW + 999, mine, alone), false);
    assert.equal(leaseEndDue(LEASE, NOW + 1_000, mine, alone), true);
  }
});

Deno.test("leaseEndDue() ends any other lease a grace after its end where servers share a database", () => {
  const end = NOW + 1_000;
  assert.equal(leaseEndDue(LEASE, end, handOvers(), false), false);
  assert.equal(leaseEndDue(LEASE, end + HANDOVER_GRACE_MS - 1, handOvers(), false), false);
  assert.equal(leaseEndDue(LEASE, end + HANDOVER_GRACE_MS, handOvers(), false), true);
  assert.equal(leaseEndDue(LEASE, end - 1, handOvers(), true), false, "alone: not before its end");
  assert.equal(leaseEndDue(LEASE, end, handOvers(), true), true, "alone: at its end");
});

Deno.test("leaseEndDue() never ends a lease a claim of this server may still carry", () => {
  const late = NOW + 1_000 + 10 * HANDOVER_GRACE_MS;
  for (const alone of [false, true]) {
    assert.equal(leaseEndDue(LEASE, late, handOvers({ claimingSince: NOW }), alone), false);
    assert.equal(leaseEndDue(LEASE, late, handOvers({ claimingSince: NOW - 5 }), alone), false);
    // A lease that began before the earliest claim on its way is not that claim's.
    assert.equal(leaseEndDue(LEASE, late, handOvers({ claimingSince: NOW + 1 }), alone), true);
  }
  const handed = handOvers({ handedOver: () => true, claimingSince: NOW });
  const ended = leaseEndDue(LEASE, NOW + 1_000, handed, false);
  assert.equal(ended, true, "handed over: the claim is done");
});

Deno.test("leaseDeadline() is a lease's end while it runs, and a grace later once it ran out", () => {
  assert.equal(leaseDeadline(NOW + 1_000, NOW), NOW + 1_000);
  assert.equal(leaseDeadline(NOW + 1_000, NOW + 1_000), NOW + 1_000 + HANDOVER_GRACE_MS);
  assert.equal(nextLeaseDeadline(null, null, NOW), null);
  assert.equal(nextLeaseDeadline(NOW + 5, NOW + 5, NOW), NOW + 5);
  assert.equal(nextLeaseDeadline(NOW - 5, NOW + 5, NOW), NOW + 5);
  assert.equal(nextLeaseDeadline(NOW - 5, null, NOW), NOW - 5 + HANDOVER_GRACE_MS);
  assert.equal(
    nextLeaseDeadline(NOW - 5, NOW + 1 + HANDOVER_GRACE_MS, NOW),
    NOW - 5 + HANDOVER_GRACE_MS,
  );
});
