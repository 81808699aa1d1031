/**
 * `GET /v1/events`: the {@linkcode LiveFeed} as a `text/event-stream` (server-sent events:
 * `event: NAME`, `data: JSON`, blank line). The dashboard reads it with `fetch()` and a stream
 * reader rather than `EventSource`, because `EventSource` cannot send an `Authorization`
 * header and tokens never travel in URLs.
 *
 * A reader that falls behind (its socket is not draining) misses snapshots instead of making
 * the server buffer them: every snapshot is complete, so the next one catches it up. A reader
 * that has stopped reading (30 snapshots skipped in a row, or 8 MiB queued) is dropped, so no
 * reader holds more than about 1 MiB of the server's memory for long. The stream
 * ends when the client goes away or the server shuts down ({@linkcode LiveFeed.close}).
 *
 * @module
 */

import type { LiveFeed } from "../observe/live_feed.ts";

/** Bytes queued for one reader beyond which snapshots are skipped (it catches up later). */
const SKIP_ABOVE = 1 << 20;

/** Bytes queued for one reader beyond which it is dropped at once: it has stopped reading. */
const DROP_ABOVE = 8 << 20;

/** Snapshots skipped in a row (about seconds behind) after which a reader is dropped. */
const DROP_AFTER_SKIPS = 30;

/** Makes the streaming response of one subscriber who may see the queues `allows` accepts. */
export function eventStreamResponse(feed: LiveFeed, allows: (queue: string) => boolean): Response {
  const encoder = new TextEncoder();
  let unsubscribe = () => {};
  let queued = 0;
  let skipped = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      unsubscribe = feed.subscribe({
        allows,
        send(event, data) {
          // desiredSize counts bytes (the strategy below): what the socket has not taken yet.
          queued = -(controller.desiredSize ?? 0);
          if (queued > DROP_ABOVE || skipped >= DROP_AFTER_SKIPS) {
            // A reader this far behind has stopped reading; holding more for it would let one
            // stalled client grow the server's memory without bound.
            unsubscribe();
            controller.error(new Error("event stream reader too slow"));
            return false;
          }
          if (event === "snapshot" && queued > SKIP_ABOVE) {
            skipped++;
            return false;
          }
          skipped = 0;
          controller.enqueue(encoder.encode(`event: ${event}\ndata: ${data}\n\n`));
          return true;
        },
        end: () => controller.close(),
      });
    },
    cancel() {
      unsubscribe();
    },
  }, { highWaterMark: 0, size: (chunk) => chunk.byteLength });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      // Proxies (nginx) must pass each event on as it comes instead of buffering the answer.
      "x-accel-buffering": "no",
    },
  });
}
