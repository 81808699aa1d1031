/**
 * A job as the broker and the stores take it, for tests that make jobs without going through the
 * API (no auth, no parsing): `broker.enqueue(queue, [newJob('"x"', clock.now())])`.
 *
 * @module
 */

import type { NewJob } from "../../lib/core/job.ts";

/** A job of `payload` (JSON text, as stored) due at `runAt`, with the defaults or `more`. */
export function newJob(payload: string, runAt: number, more: Partial<NewJob> = {}): NewJob {
  return {
    payload,
    priority: 0,
    key: null,
    run_at: runAt,
    max_attempts: 5,
    lease_ms: null,
    backoff: null,
    ...more,
  };
}
