/** eventStreamResponse(): a reader that stops reading costs bounded memory and is dropped. */

import assert from "node:assert/strict";
import { eventStreamResponse } from "../../lib/http/event_stream.ts";
import type { FeedSink, LiveFeed } from "../../lib/observe/live_feed.ts";

function fakeFeed() {
  let sink: FeedSink | null = null;
  let unsubscribed = false;
  const feed = {
    subscribe(s: FeedSink) {
      sink = s;
      return () => {
        unsubscribed = true;
      };
    },
  } as unknown as LiveFeed;
  return { feed, sink: () => sink!, unsubscribed: () => unsubscribed };
}

Deno.test("eventStreamResponse() skips snapshots past 1 MiB unread, then drops the reader", async () => {
  const { feed, sink, unsubscribed } = fakeFeed();
  const response = eventStreamResponse(feed, () => true);
  const snapshot = "x".repeat(256 * 1024);
  let sent = 0;
  for (let i = 0; i < 100 && !unsubscribed(); i++) if (sink().send("snapshot", snapshot)) sent++;
  // About 1 MiB was queued (four snapshots, then skips), and 30 skips in a row dropped it.
  assert.ok(sent >= 4 && sent <= 6, `${sent} snapshots queued`);
  assert.ok(unsubscribed(), "the reader was dropped");
  const reader = response.body!.getReader();
  let read = 0;
  await assert.rejects(async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      read += value.byteLength;
    }
  }, /too slow/);
  assert.ok(read <= 2 * 1024 * 1024, `${read} bytes were held for it`);
});

Deno.test("eventStreamResponse() keeps a reader that reads, however many snapshots", async () => {
  const { feed, sink, unsubscribed } = fakeFeed();
  const response = eventStreamResponse(feed, () => true);
  const reader = response.body!.getReader();
  for (let i = 0; i < 100; i++) {
    assert.equal(sink().send("snapshot", "x".repeat(64 * 1024)), true);
    await reader.read();
  }
  assert.equal(unsubscribed(), false);
  await reader.cancel();
});

Deno.test({
  name: "ten event-stream readers that stop reading leave the server's RSS flat",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const { spawnServer } = await import("../helpers/process_server.ts");
    const dir = await Deno.makeTempDir({ prefix: "tegami-events-" });
    await using proc = await spawnServer([
      "--db",
      `${dir}/t.db`,
      "--sync",
      "normal",
      "--metrics-queues",
      "100000",
    ]);
    const rss = () =>
      Number(
        /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${proc.child.pid}/status`))![1],
      ) /
      1024;
    // 2,000 queues make each snapshot about 400 KB.
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < 2000) {
        const q = `queue-${next++}`;
        const r = await fetch(`${proc.url}/v1/queues/${q}/jobs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"payload":1}',
        });
        await r.body?.cancel();
      }
    }));
    const before = rss();
    const { hostname, port } = new URL(proc.url);
    const readers: Deno.Conn[] = [];
    for (let i = 0; i < 10; i++) {
      const conn = await Deno.connect({ hostname, port: Number(port) });
      await conn.write(new TextEncoder().encode(
        "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
      ));
      readers.push(conn); // and never read from again
    }
    let peak = before;
    for (let s = 0; s < 24; s++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      peak = Math.max(peak, rss());
    }
    console.log(
      `10 stopped event-stream readers, 2,000 queues: RSS ${before.toFixed(0)} MiB before, ` +
        `peak ${peak.toFixed(0)} MiB over 12 s`,
    );
    assert.ok(peak - before < 120, `RSS grew by ${(peak - before).toFixed(0)} MiB`);
    for (const conn of readers) conn.close();
    proc.kill("SIGTERM");
    assert.equal((await proc.exited()).code, 0);
    await Deno.remove(dir, { recursive: true });
  },
});
