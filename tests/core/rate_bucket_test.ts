import assert from "node:assert/strict";
import { bucketCapacity, claimCap, nextTokenAt, tokensAt } from "../../lib/core/rate_bucket.ts";

const RATE = { limit: 100, per_ms: 1000 }; // a token every 10 ms

Deno.test("bucketCapacity() is a tenth of an interval's tokens, at least one", () => {
  assert.equal(bucketCapacity(RATE), 10);
  assert.equal(bucketCapacity({ limit: 5, per_ms: 1000 }), 1);
  assert.equal(bucketCapacity({ limit: 1_000_000, per_ms: 1 }), 100_000);
});

Deno.test("tokensAt() starts full, refills evenly and never passes the capacity", () => {
  assert.equal(tokensAt(null, RATE, 0), 10);
  const spent = { tokens: 0, at: 1000 };
  assert.equal(tokensAt(spent, RATE, 1000), 0);
  assert.equal(tokensAt(spent, RATE, 1005), 0.5);
  assert.equal(tokensAt(spent, RATE, 1030), 3);
  assert.equal(tokensAt(spent, RATE, 9000), 10, "a quiet spell fills it to the capacity only");
  assert.equal(tokensAt(spent, RATE, 500), 0, "a clock that went back adds nothing");
});

Deno.test("nextTokenAt() is now with a whole token, else when the next one comes", () => {
  assert.equal(nextTokenAt(1, RATE, 50), 50);
  assert.equal(nextTokenAt(0, RATE, 50), 60);
  assert.equal(nextTokenAt(0.5, RATE, 50), 55);
  assert.equal(nextTokenAt(0.99, { limit: 3, per_ms: 1000 }, 0), 4, "rounded up to a whole ms");
});

Deno.test("over any interval, spending every token delivers at most the limit plus the capacity", () => {
  let bucket = { tokens: tokensAt(null, RATE, 0), at: 0 };
  let delivered = 0;
  for (let now = 0; now < 1000; now++) {
    const tokens = tokensAt(bucket, RATE, now);
    const taken = Math.floor(tokens);
    delivered += taken;
    bucket = { tokens: tokens - taken, at: now };
  }
  assert.ok(delivered <= RATE.limit + bucketCapacity(RATE), `${delivered} in one interval`);
  assert.ok(delivered >= RATE.limit, `${delivered} in one interval`);
});

Deno.test("claimCap() takes the fewer of the free slots and the whole tokens", () => {
  const open = { concurrency: null, rate: null };
  assert.deepEqual(claimCap(open, 32, 999, null, 0), { cap: 32, tokens: null, heldUntil: null });
  const slots = { concurrency: 5, rate: null };
  assert.deepEqual(claimCap(slots, 32, 2, null, 0), { cap: 3, tokens: null, heldUntil: null });
  assert.equal(claimCap(slots, 32, 7, null, 0).cap, -2, "over the limit: nothing");
  const rated = { concurrency: 5, rate: RATE };
  assert.deepEqual(
    claimCap(rated, 32, 0, null, 0),
    { cap: 5, tokens: 10, heldUntil: null },
    "the slots hold it back, not the rate: no timer",
  );
  assert.deepEqual(
    claimCap(rated, 32, 0, { tokens: 2.5, at: 0 }, 0),
    { cap: 2, tokens: 2.5, heldUntil: 5 },
    "the tokens hold it back: the next whole one comes in 5 ms",
  );
  assert.deepEqual(
    claimCap({ concurrency: null, rate: RATE }, 3, 0, { tokens: 0, at: 0 }, 40),
    { cap: 3, tokens: 4, heldUntil: null },
    "enough tokens for what it wants",
  );
});
