import assert from "node:assert/strict";
import { groupStateView, heldBy, statsView } from "../../lib/api/views.ts";
import type { GroupState } from "../../lib/core/group_settings.ts";
import { defaultQueueSettings, settingsView } from "../../lib/core/queue_settings.ts";
import type { QueueCounts } from "../../lib/store/store.ts";

/** A queue's stats: pending 3, leased 2, no limits, with `fields` set. */
function stats(fields: Partial<QueueCounts> = {}): QueueCounts {
  return {
    name: "emails",
    paused: false,
    counts: { blocked: 0, pending: 3, delayed: 1, leased: 2, done: 4, dead: 0, cancelled: 0 },
    oldest_pending_at: 1_000,
    settings: defaultQueueSettings(),
    groups: {
      waiting: 2,
      leased: 1,
      full: 1,
      rate_held: 1,
      top_held: [
        { group: "acme", held: "rate", pending: 7, leased: 0, limit: 2 },
        { group: "globex", held: "concurrency", pending: 3, leased: 1, limit: 1 },
      ],
    },
    rate_held: false,
    ...fields,
  };
}

const limited = (concurrency: number) => ({ ...defaultQueueSettings(), concurrency });

Deno.test("heldBy() names the concurrency when as many jobs are leased as it allows", () => {
  assert.equal(heldBy(stats({ settings: limited(2) }), 1), "concurrency");
  assert.equal(heldBy(stats({ settings: limited(1) }), 1), "concurrency");
  assert.equal(heldBy(stats({ settings: limited(3) }), 1), null);
  // Both hold it back: the concurrency is named.
  assert.equal(heldBy(stats({ settings: limited(2), rate_held: true }), 1), "concurrency");
});

Deno.test("heldBy() names the rate when the last claim found no token", () => {
  assert.equal(heldBy(stats({ rate_held: true }), 2), "rate");
  assert.equal(heldBy(stats({ rate_held: true, settings: limited(3) }), 2), "rate");
  assert.equal(heldBy(stats(), 2), null);
});

Deno.test("heldBy() names nothing while nothing is pending or nobody consumes", () => {
  const counts = { ...stats().counts, pending: 0 };
  assert.equal(heldBy(stats({ counts, settings: limited(1), rate_held: true }), 1), null);
  assert.equal(heldBy(stats({ settings: limited(1), rate_held: true }), 0), null);
});

Deno.test("statsView() shows a queue's stats with the age of its oldest pending job", () => {
  const settings = { ...limited(2), rate: { limit: 10, per_ms: 1_000 } };
  const s = stats({ settings, paused: true });
  assert.deepEqual(statsView(s, 5_000, 1), {
    name: "emails",
    paused: true,
    counts: s.counts,
    oldest_pending_age_ms: 4_000,
    consumers: 1,
    settings: settingsView(settings),
    groups: {
      waiting: 2,
      leased: 1,
      full: 1,
      rate_held: 1,
      top_held: [
        { group: "acme", held: "rate", pending: 7, leased: 0, limit: 2 },
        { group: "globex", held: "concurrency", pending: 3, leased: 1, limit: 1 },
      ],
    },
    held: "concurrency",
  });
});

Deno.test("groupStateView() shows a group's settings with its rate as canonical text", () => {
  const state: GroupState = {
    group: "tenant/eu 7",
    settings: { weight: 3, concurrency: 2, rate: { limit: 10, per_ms: 60_000 } },
    configured: true,
    pending: 4,
    leased: 1,
    limit: 2,
    held: "rate",
    held_until: 9_000,
  };
  const view = groupStateView(state);
  assert.deepEqual(view, {
    group: "tenant/eu 7",
    settings: { weight: 3, concurrency: 2, rate: "10/1m" },
    configured: true,
    pending: 4,
    leased: 1,
    limit: 2,
    held: "rate",
    held_until: 9_000,
  });
  // The members in the documented order, and nothing else.
  assert.deepEqual(Object.keys(view), [
    "group",
    "settings",
    "configured",
    "pending",
    "leased",
    "limit",
    "held",
    "held_until",
  ]);
});

Deno.test("statsView() shows age 0 without a pending job, and for a clock behind the store", () => {
  const view = (s: QueueCounts, now: number) =>
    (statsView(s, now, 0) as { oldest_pending_age_ms: number }).oldest_pending_age_ms;
  assert.equal(view(stats({ oldest_pending_at: null }), 5_000), 0);
  assert.equal(view(stats({ oldest_pending_at: 6_000 }), 5_000), 0);
  assert.equal(view(stats({ oldest_pending_at: 5_000 }), 5_000), 0);
});
