/**
 * The live feed on its own, with fake sources and a manual clock: one sample per second,
 * stamped on whole seconds even when timers fire early or late, five minutes kept, and sinks
 * ended on close.
 */

import assert from "node:assert/strict";
import { type Clock, ManualClock } from "../../lib/core/clock.ts";
import { type FeedSink, LiveFeed } from "../../lib/observe/live_feed.ts";
import type { QueueTotals } from "../../lib/observe/server_metrics.ts";
import type { QueueCounts } from "../../lib/store/store.ts";
import { zeroCounts } from "../../lib/store/job_row.ts";
import { DEFAULT_QUEUE_SETTINGS } from "../../lib/core/queue_settings.ts";

/** Fake sources: `email` enqueues `perTick` jobs between samples. */
function sources(perTick: number) {
  const totals: QueueTotals = { queue: "email", enqueued: 0, delivered: 0, acked: 0, failed: 0 };
  return {
    bump: () => totals.enqueued += perTick,
    sources: {
      stats: () => Promise.resolve([]),
      consumers: () => 0,
      totals: () => [{ ...totals }],
      connections: () => 0,
    },
  };
}

/** A sink that records events. */
function recorder(): FeedSink & { events: [string, unknown][]; ended: boolean } {
  const events: [string, unknown][] = [];
  return {
    events,
    ended: false,
    allows: () => true,
    send(event, data) {
      events.push([event, JSON.parse(data)]);
      return true;
    },
    end() {
      this.ended = true;
    },
  };
}

Deno.test("LiveFeed stamps one sample per whole second even when its timer fires early or late", () => {
  const manual = new ManualClock(1_700_000_000_250);
  let skew = -3; // fires 3 ms early, then 40 ms late, alternately
  const clock: Clock = {
    now: () => manual.now(),
    setTimer: (fn, ms) => {
      skew = skew === -3 ? 40 : -3;
      return manual.setTimer(fn, Math.max(0, ms + skew));
    },
    clearTimer: (handle) => manual.clearTimer(handle),
  };
  const fake = sources(2);
  const feed = new LiveFeed({ clock, sources: fake.sources });
  feed.start();
  for (let i = 0; i < 10; i++) {
    fake.bump();
    manual.advance(1000);
  }
  const sink = recorder();
  feed.subscribe(sink);
  feed.close();
  const [event, hello] = sink.events[0] as [string, { history: { at: number; queues: object }[] }];
  assert.equal(event, "hello");
  const ats = hello.history.map((s) => s.at);
  assert.ok(ats.length >= 9, `samples: ${ats}`);
  for (let i = 0; i < ats.length; i++) {
    assert.equal(ats[i] % 1000, 0, `on a whole second: ${ats[i]}`);
    if (i > 0) assert.equal(ats[i] - ats[i - 1], 1000, `one per second: ${ats}`);
  }
  const moved = hello.history.reduce(
    (n, s) => n + ((s.queues as Record<string, { enqueued: number }>).email?.enqueued ?? 0),
    0,
  );
  assert.equal(moved, 20, "every enqueue is counted once");
  assert.equal(sink.ended, true);
});

Deno.test("LiveFeed keeps the last historySize samples and refuses subscribers once closed", () => {
  const clock = new ManualClock(1_700_000_000_000);
  const fake = sources(1);
  const feed = new LiveFeed({ clock, sources: fake.sources, historySize: 5, version: "1.2.3" });
  feed.start();
  for (let i = 0; i < 8; i++) {
    fake.bump();
    clock.advance(1000);
  }
  const sink = recorder();
  const unsubscribe = feed.subscribe(sink);
  const hello = sink.events[0][1] as { version: string; history: { at: number }[] };
  assert.equal(hello.version, "1.2.3");
  assert.deepEqual(
    hello.history.map((s) => s.at),
    [4, 5, 6, 7, 8].map((n) => 1_700_000_000_000 + n * 1000),
  );
  assert.equal(feed.subscribers, 1);
  unsubscribe();
  assert.equal(feed.subscribers, 0);
  feed.close();
  const late = recorder();
  feed.subscribe(late);
  assert.equal(late.ended, true);
  assert.deepEqual(late.events, []);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("LiveFeed shows a subscriber the busiest of the queues it may see, and counts only those", async () => {
  const clock = new ManualClock(1_700_000_000_000);
  const queue = (name: string, pending: number): QueueCounts => ({
    name,
    paused: false,
    counts: { ...zeroCounts(), pending },
    oldest_pending_at: null,
    settings: DEFAULT_QUEUE_SETTINGS,
    groups: { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] },
    rate_held: false,
  });
  const stats = [queue("a1", 5), queue("a2", 1), queue("b1", 100), queue("b2", 50)];
  const feed = new LiveFeed({
    clock,
    sources: { ...sources(0).sources, stats: () => Promise.resolve(stats) },
    topQueues: 1,
  });
  feed.start();
  const limited = { ...recorder(), allows: (name: string) => name.startsWith("a") };
  const everyone = recorder();
  feed.subscribe(limited);
  feed.subscribe(everyone);
  clock.advance(1000);
  await new Promise((resolve) => setTimeout(resolve, 0));
  const snapshot = (sink: ReturnType<typeof recorder>) =>
    sink.events.find(([event]) => event === "snapshot")![1] as {
      queue_count: number;
      queues: { name: string }[];
    };
  assert.equal(snapshot(limited).queue_count, 2, "the other token's queues are not counted");
  assert.deepEqual(snapshot(limited).queues.map((q) => q.name), ["a1"]);
  assert.equal(snapshot(everyone).queue_count, 4);
  assert.deepEqual(snapshot(everyone).queues.map((q) => q.name), ["b1"]);
  feed.close();
});
