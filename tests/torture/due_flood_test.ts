/**
 * The small due flood in `deno task test` (the million-job one is `deno task soak:due`): 50,000
 * delayed jobs due at once leave /healthz fast and start delivery at once.
 */

import assert from "node:assert/strict";
import { formatDueFlood, runDueFlood } from "./due_flood.ts";

Deno.test({
  name: "50,000 delayed jobs due at once: /healthz p99 under 100 ms, first delivery within 1 s",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const figures = await runDueFlood({ jobs: 50_000, deadlineMs: 120_000 });
    console.log(formatDueFlood(figures));
    assert.ok(figures.healthP99 < 100, `/healthz p99 ${figures.healthP99.toFixed(1)} ms`);
    assert.ok(figures.firstDeliveryMs < 1000, `first delivery after ${figures.firstDeliveryMs} ms`);
  },
});
