import assert from "node:assert/strict";
import { holdsKey, keyExpiresAt, onDuplicate } from "../../lib/core/dedup.ts";
import type { NewJob } from "../../lib/core/job.ts";

const NOW = 1_000_000;

function job(fields: Partial<NewJob> = {}): NewJob {
  return {
    payload: "1",
    priority: 0,
    key: "k",
    run_at: NOW,
    max_attempts: 5,
    lease_ms: null,
    backoff: null,
    ...fields,
  };
}

Deno.test("keyExpiresAt() is the enqueue time plus key_ttl_ms, or null without a window or key", () => {
  assert.equal(keyExpiresAt(job({ key_ttl_ms: 500 }), NOW), NOW + 500);
  assert.equal(keyExpiresAt(job(), NOW), null);
  assert.equal(keyExpiresAt(job({ key: null, key_ttl_ms: 500 }), NOW), null);
});

Deno.test("holdsKey() holds until the window's end, exclusive, and for ever without one", () => {
  const holder = { state: "pending" as const, run_at: NOW, key_expires_at: NOW + 10 };
  assert.equal(holdsKey(holder, NOW + 9), true);
  assert.equal(holdsKey(holder, NOW + 10), false);
  assert.equal(holdsKey({ ...holder, key_expires_at: null }, Number.MAX_SAFE_INTEGER), true);
});

Deno.test("onDuplicate() releases a passed window, whatever the holder's state", () => {
  for (const state of ["pending", "leased", "done", "dead"] as const) {
    const holder = { state, run_at: NOW - 5, key_expires_at: NOW };
    assert.deepEqual(onDuplicate(holder, job({ on_duplicate: "replace" }), NOW), {
      action: "release",
    });
  }
});

Deno.test("onDuplicate() ignores by default, and for a holder that is not waiting", () => {
  const pending = { state: "pending" as const, run_at: NOW - 5, key_expires_at: null };
  assert.deepEqual(onDuplicate(pending, job(), NOW), { action: "ignored" });
  for (const state of ["leased", "done", "dead", "cancelled"] as const) {
    for (const mode of ["replace", "extend"] as const) {
      const holder = { state, run_at: NOW - 5, key_expires_at: null };
      assert.deepEqual(onDuplicate(holder, job({ on_duplicate: mode }), NOW), {
        action: "ignored",
      });
    }
  }
});

Deno.test("onDuplicate() replace takes the new run_at; a pending job staying pending keeps its own", () => {
  const delayed = { state: "delayed" as const, run_at: NOW + 1_000, key_expires_at: null };
  const replace = (run_at: number) => job({ on_duplicate: "replace", run_at });
  assert.deepEqual(onDuplicate(delayed, replace(NOW + 50), NOW), {
    action: "replaced",
    state: "delayed",
    run_at: NOW + 50,
  });
  assert.deepEqual(onDuplicate(delayed, replace(NOW), NOW), {
    action: "replaced",
    state: "pending",
    run_at: NOW,
  });
  const pending = { state: "pending" as const, run_at: NOW - 7, key_expires_at: null };
  assert.deepEqual(onDuplicate(pending, replace(NOW), NOW), {
    action: "replaced",
    state: "pending",
    run_at: NOW - 7,
  });
});

Deno.test("onDuplicate() extend moves run_at later, never earlier", () => {
  const delayed = { state: "delayed" as const, run_at: NOW + 1_000, key_expires_at: null };
  const extend = (run_at: number) => job({ on_duplicate: "extend", run_at });
  assert.deepEqual(onDuplicate(delayed, extend(NOW + 2_000), NOW), {
    action: "extended",
    state: "delayed",
    run_at: NOW + 2_000,
  });
  assert.deepEqual(onDuplicate(delayed, extend(NOW), NOW), {
    action: "extended",
    state: "delayed",
    run_at: NOW + 1_000,
  });
  const pending = { state: "pending" as const, run_at: NOW - 7, key_expires_at: null };
  assert.deepEqual(onDuplicate(pending, extend(NOW + 5), NOW), {
    action: "extended",
    state: "delayed",
    run_at: NOW + 5,
  });
});
