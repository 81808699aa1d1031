/**
 * `GET /v1/events`: the {@linkcode LiveFeed} as a `text/event-stream` (server-sent events:
 * `event: NAME`, `data: JSON`, blank line). The dashboard reads it with `fetch()` and a stream
 * reader rather than `EventSource`, because `EventSource` cannot send an `Authorization`
 * header and tokens never travel in URLs.
 *
 * A reader that falls behind (its socket is not draining) misses snapshots instead of making
 * the server buffer them: every snapshot is complete, so the next one catches it up. The stream
 * ends when the client goes away or the server shuts down ({@linkcode LiveFeed.close}).
 *
 * @module
 */

import type { LiveFeed } from "../observe/live_feed.ts";

/** Chunks queued for one reader beyond which snapshots are dropped. */
const MAX_QUEUED = 16;

/** Makes the streaming response of one subscriber who may see the queues `allows` accepts. */
export function eventStreamResponse(feed: LiveFeed, allows: (queue: string) => boolean): Response {
  const encoder = new TextEncoder();
  let unsubscribe = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      unsubscribe = feed.subscribe({
        allows,
        send(event, data) {
          if (event === "snapshot" && (controller.desiredSize ?? 0) < 1 - MAX_QUEUED) return false;
          controller.enqueue(encoder.encode(`event: ${event}\ndata: ${data}\n\n`));
          return true;
        },
        end: () => controller.close(),
      });
    },
    cancel() {
      unsubscribe();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      // Proxies (nginx) must pass each event on as it comes instead of buffering the answer.
      "x-accel-buffering": "no",
    },
  });
}
