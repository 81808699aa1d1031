import assert from "node:assert/strict";
import fc from "fast-check";
import { retryDelayMs } from "../../lib/core/backoff.ts";

const BACKOFF = { base_ms: 1000, max_ms: 60_000 };

Deno.test("retryDelayMs() doubles from base_ms with each attempt, up to max_ms", () => {
  const top = () => 0.999999999;
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => retryDelayMs(attempt, BACKOFF, top)),
    [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000],
  );
});

Deno.test("retryDelayMs() scales the delay by a random factor from a half to one", () => {
  assert.equal(retryDelayMs(3, BACKOFF, () => 0), 2000);
  assert.equal(retryDelayMs(3, BACKOFF, () => 0.5), 3000);
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 100 }),
      fc.double({ min: 0, max: 0.9999, noNaN: true }),
      (n, r) => {
        const full = Math.min(BACKOFF.max_ms, BACKOFF.base_ms * 2 ** (n - 1));
        const delay = retryDelayMs(n, BACKOFF, () => r);
        return delay >= Math.round(full / 2) && delay <= full;
      },
    ),
  );
});

Deno.test("retryDelayMs() takes attempt 0 or less as the first, and huge attempts as max_ms", () => {
  const top = () => 0.999999999;
  assert.equal(retryDelayMs(0, BACKOFF, top), 1000);
  assert.equal(retryDelayMs(-5, BACKOFF, top), 1000);
  assert.equal(retryDelayMs(10_000, BACKOFF, top), 60_000);
  assert.ok(Number.isFinite(retryDelayMs(Number.MAX_SAFE_INTEGER, BACKOFF)));
});
