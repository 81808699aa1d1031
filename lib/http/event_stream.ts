/**
 * `GET /v1/events`: the {@linkcode LiveFeed} as a `text/event-stream` (server-sent events:
 * `event: NAME`, `data: JSON`, blank line). The dashboard reads it with `fetch()` and a stream
 * reader rather than `EventSource`, because `EventSource` cannot send an `Authorization`
 * header and tokens never travel in URLs.
 *
 * The stream is pulled: an event is kept as the feed's text and encoded a slice at a time, each
 * slice when the server asks for the next (it asks as its socket drains). A snapshot that comes
 * while another event is being sent is skipped, unless nothing but `hello` goes before it; a
 * newer snapshot replaces one not begun yet. So a reader holds at most one snapshot (and `hello`
 * until it is sent), whether it reads slowly or not at all: a reader that falls behind misses
 * snapshots instead of making the server buffer them (every snapshot is complete, so the next
 * one catches it up). A reader that takes no byte for {@linkcode DROP_AFTER_IDLE} snapshots in
 * a row has stopped reading: it is unsubscribed, the event it held is let go and its stream
 * fails. The connection itself is not this module's to close: while its socket does not drain,
 * the server's HTTP layer holds it, with the few slices it took, until the client goes away.
 * The stream ends when the client goes away or the server shuts down
 * ({@linkcode LiveFeed.close}).
 *
 * @module
 */

import type { LiveFeed } from "../observe/live_feed.ts";

/**
 * Bytes handed to the server per read. Small, so a stalled reader's socket pins only slices of
 * an event (the event itself is let go when the reader is dropped), not the whole of it.
 */
const SLICE_BYTES = 16 * 1024;

/** Snapshots in a row (about seconds) during which a reader took no byte before it is dropped. */
export const DROP_AFTER_IDLE = 30;

const encoder = new TextEncoder();

/** Makes the streaming response of one subscriber who may see the queues `allows` accepts. */
export function eventStreamResponse(feed: LiveFeed, allows: (queue: string) => boolean): Response {
  let unsubscribe = () => {};
  /** The event being sent, how many of its UTF-16 units are sent, and whether it is `hello`. */
  let current: string | null = null;
  let sent = 0;
  let greeting = false;
  /** `hello`, until it is begun: nothing goes before it. */
  let hello: string | null = null;
  /** The newest snapshot not begun yet. */
  let waiting: string | null = null;
  /** Whether the reader asked for bytes since the last snapshot came. */
  let took = true;
  /** Snapshots in a row that came while the reader took nothing. */
  let idle = 0;
  let ended = false;
  let done = false;
  /** Set while the server waits for bytes that have not come yet. */
  let parked: (() => void) | null = null;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const wake = () => {
    const resume = parked;
    parked = null;
    resume?.();
  };
  const release = () => {
    done = true;
    current = hello = waiting = null;
    unsubscribe();
  };
  /** Hands the server the next slice, or ends the stream; false when there is nothing yet. */
  const supply = (): boolean => {
    if (current === null) {
      greeting = hello !== null;
      current = hello ?? waiting;
      if (greeting) hello = null;
      else waiting = null;
      sent = 0;
    }
    if (current === null) {
      if (!ended) return false;
      release();
      controller.close();
      return true;
    }
    const slice = new Uint8Array(SLICE_BYTES);
    const { read, written } = encoder.encodeInto(
      sent === 0 ? current : current.slice(sent),
      slice,
    );
    sent += read;
    if (sent >= current.length) current = null;
    controller.enqueue(slice.subarray(0, written));
    return true;
  };

  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      unsubscribe = feed.subscribe({
        allows,
        send(event, data) {
          if (done || ended) return false;
          const text = `event: ${event}\ndata: ${data}\n\n`;
          if (event === "hello") {
            hello = text;
          } else {
            idle = took ? 0 : idle + 1;
            took = false;
            if (idle >= DROP_AFTER_IDLE) {
              // It has stopped reading: holding anything more for it would let stalled clients
              // grow the server's memory, one event each, for as long as they stay connected.
              // The stream ends (an event cut short is dropped by the client's parser, which
              // reconnects); an error would only print a stack outside the server's log.
              release();
              controller.close();
              wake();
              return false;
            }
            // One being sent: this one is missed (the next will do), so that no reader, slow or
            // stalled, holds more than one snapshot.
            if (current !== null && !greeting) return false;
            waiting = text;
          }
          wake();
          return true;
        },
        end: () => {
          ended = true;
          hello = waiting = null;
          wake();
        },
      });
    },
    pull() {
      if (done) return;
      took = true;
      if (supply()) return;
      return new Promise<void>((resolve) => {
        parked = () => {
          if (!done) supply();
          resolve();
        };
      });
    },
    cancel() {
      release();
      wake();
    },
  }, { highWaterMark: 0 });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      // Proxies (nginx) must pass each event on as it comes instead of buffering the answer.
      "x-accel-buffering": "no",
    },
  });
}
