/**
 * eventStreamResponse(): a reader that falls behind or stops reading costs at most one snapshot,
 * and one that stops reading is dropped. The last case runs a real server in this process and
 * measures what its JavaScript holds alive after a full garbage collection (through
 * `node:inspector`): garbage not yet collected, which RSS counts, neither hides nor fakes what the
 * readers hold.
 */

import assert from "node:assert/strict";
import { Session } from "node:inspector";
import { DROP_AFTER_IDLE, eventStreamResponse } from "../../lib/http/event_stream.ts";
import { type FeedSink, LiveFeed } from "../../lib/observe/live_feed.ts";
import { newJob } from "../helpers/new_job.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { eventually } from "../helpers/ws_client.ts";

/**
 * What a reader's connection may hold beyond the event being sent: the relay's buffer and the
 * slices the server's socket layer took.
 */
const IN_FLIGHT = 512 * 1024;

function fakeFeed() {
  let sink: FeedSink | null = null;
  let unsubscribed = false;
  const feed = {
    subscribe(s: FeedSink) {
      sink = s;
      s.send("hello", '{"history":[]}');
      return () => {
        unsubscribed = true;
      };
    },
  } as unknown as LiveFeed;
  return { feed, sink: () => sink!, unsubscribed: () => unsubscribed };
}

/** Reads a response body as the server would, a chunk at a time, never more than asked. */
class BodyReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  /** True once the stream ended. */
  ended = false;

  constructor(response: Response) {
    this.#reader = response.body!.getReader();
  }

  /**
   * One chunk if one is there now, else null (the read stays pending for the next call, or the
   * stream {@linkcode ended}).
   */
  async chunk(): Promise<string | null> {
    if (this.ended) return null;
    this.#pending ??= this.#reader.read();
    const now = await Promise.race([
      this.#pending,
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 0)),
    ]);
    if (now === null) return null;
    this.#pending = null;
    this.ended = now.done;
    return now.done ? null : this.#decoder.decode(now.value, { stream: true });
  }

  /** Every chunk there is now. */
  async available(): Promise<string> {
    let text = "";
    for (let chunk = await this.chunk(); chunk !== null; chunk = await this.chunk()) text += chunk;
    return text;
  }
}

/** The names of the events in `text`, with each snapshot's data (a tag here). */
function events(text: string): string[] {
  return [...text.matchAll(/event: (\w+)\ndata: (\S*)\n\n/g)].map(([, event, data]) =>
    event === "hello" ? "hello" : data.slice(0, data.indexOf("|"))
  );
}

const snapshot = (tag: string, bytes = 256 * 1024) => `${tag}|${"x".repeat(bytes)}`;

Deno.test("eventStreamResponse() holds only the newest snapshot for a reader that takes nothing", async () => {
  const { feed, sink } = fakeFeed();
  const reader = new BodyReader(eventStreamResponse(feed, () => true));
  // Nothing asked for yet: each snapshot replaces the one before, which nobody began.
  for (let i = 0; i < 5; i++) assert.equal(sink().send("snapshot", snapshot(`s${i}`)), true);
  assert.deepEqual(events(await reader.available()), ["hello", "s4"]);
});

Deno.test("eventStreamResponse() skips the snapshots that come while one is being sent", async () => {
  const { feed, sink } = fakeFeed();
  const reader = new BodyReader(eventStreamResponse(feed, () => true));
  assert.deepEqual(events(await reader.available()), ["hello"]);
  assert.equal(sink().send("snapshot", snapshot("s0")), true);
  let text = (await reader.chunk())!; // a slice of s0: the rest waits for the reader
  assert.ok(text.length < 256 * 1024, `${text.length} bytes in one chunk`);
  assert.equal(sink().send("snapshot", snapshot("s1")), false);
  assert.equal(sink().send("snapshot", snapshot("s2")), false);
  text += await reader.available();
  assert.deepEqual(events(text), ["s0"], "s1 and s2 were missed, not held");
  assert.equal(sink().send("snapshot", snapshot("s3")), true);
  assert.deepEqual(events(await reader.available()), ["s3"]);
});

Deno.test("eventStreamResponse() drops a reader that takes no byte for 30 snapshots", async () => {
  const { feed, sink, unsubscribed } = fakeFeed();
  const reader = new BodyReader(eventStreamResponse(feed, () => true));
  await reader.available();
  assert.equal(sink().send("snapshot", snapshot("s0")), true);
  await reader.chunk(); // then it stops reading, a slice into s0
  for (let i = 1; i <= DROP_AFTER_IDLE; i++) {
    assert.equal(sink().send("snapshot", snapshot(`s${i}`)), false);
    assert.equal(unsubscribed(), i === DROP_AFTER_IDLE, `after ${i} snapshots`);
  }
  // The stream ends, with nothing more of s0 or later.
  assert.equal(await reader.chunk(), null);
  assert.equal(reader.ended, true, "the stream ended");
});

Deno.test("eventStreamResponse() keeps a reader that takes a little at each snapshot", async () => {
  const { feed, sink, unsubscribed } = fakeFeed();
  const reader = new BodyReader(eventStreamResponse(feed, () => true));
  await reader.available();
  sink().send("snapshot", snapshot("s0", 4 << 20));
  let text = "";
  for (let i = 1; i <= 3 * DROP_AFTER_IDLE; i++) {
    sink().send("snapshot", snapshot(`s${i}`));
    text += (await reader.chunk()) ?? "";
  }
  assert.equal(unsubscribed(), false);
  assert.ok(text.startsWith("event: snapshot\ndata: s0|"));
});

Deno.test("eventStreamResponse() keeps a reader that reads, however many snapshots", async () => {
  const { feed, sink, unsubscribed } = fakeFeed();
  const reader = new BodyReader(eventStreamResponse(feed, () => true));
  await reader.available();
  for (let i = 0; i < 100; i++) {
    assert.equal(sink().send("snapshot", snapshot(`s${i}`, 64 * 1024)), true);
    assert.deepEqual(events(await reader.available()), [`s${i}`]);
  }
  assert.equal(unsubscribed(), false);
});

Deno.test("eventStreamResponse() ends the stream after the event being sent when the feed ends", async () => {
  const { feed, sink, unsubscribed } = fakeFeed();
  const response = eventStreamResponse(feed, () => true);
  const reader = new BodyReader(response);
  await reader.available();
  sink().send("snapshot", snapshot("s0"));
  let text = (await reader.chunk())!;
  sink().end();
  assert.equal(sink().send("snapshot", snapshot("s1")), false);
  text += await reader.available();
  assert.deepEqual(events(text), ["s0"]);
  assert.equal(reader.ended, true);
  assert.equal(unsubscribed(), true);
});

/** Bytes the process's JavaScript holds alive (its heap and its buffers) after a full GC. */
class LiveBytes implements Disposable {
  readonly #session = new Session();

  constructor() {
    this.#session.connect();
  }

  async measure(): Promise<number> {
    await new Promise<void>((resolve, reject) =>
      this.#session.post(
        "HeapProfiler.collectGarbage",
        (error) => error ? reject(error) : resolve(),
      )
    );
    const { heapUsed, external } = Deno.memoryUsage();
    return heapUsed + external;
  }

  [Symbol.dispose](): void {
    this.#session.disconnect();
  }
}

/** The live feeds that get subscribers from now on (the server's own), until disposed. */
function watchFeeds(): Set<LiveFeed> & Disposable {
  const feeds = new Set<LiveFeed>() as Set<LiveFeed> & Disposable;
  const subscribe = LiveFeed.prototype.subscribe;
  LiveFeed.prototype.subscribe = function (this: LiveFeed, sink: FeedSink) {
    feeds.add(this);
    return subscribe.call(this, sink);
  };
  feeds[Symbol.dispose] = () => LiveFeed.prototype.subscribe = subscribe;
  return feeds;
}

Deno.test("ten event-stream readers that stop reading hold a snapshot each at most, none once dropped", async () => {
  using feeds = watchFeeds();
  await using server = await startTestServer({
    config: { metricsQueues: 100_000, sync: "normal" },
  });
  using live = new LiveBytes();
  // 2,000 queues make each snapshot about a megabyte.
  await Promise.all(
    Array.from(
      { length: 2000 },
      (_, i) => server.server.broker.enqueue(`queue-${i}`, [newJob("1", server.clock.now())]),
    ),
  );

  // How large a snapshot is, read by a reader that reads.
  const probe = (await fetch(`${server.url}/v1/events`)).body!.pipeThrough(new TextDecoderStream())
    .getReader();
  let text = "";
  while (!/event: snapshot\n[^\n]*\n\n/.test(text)) text += (await probe.read()).value ?? "";
  await probe.cancel();
  const snapshotBytes = /event: snapshot\n[^\n]*\n\n/.exec(text)![0].length;
  const [feed] = feeds;
  await eventually(() => feed.subscribers === 0, "the probe unsubscribed");

  const before = await live.measure();
  const { hostname, port } = new URL(server.url);
  const readers: Deno.Conn[] = [];
  for (let i = 0; i < 10; i++) {
    const conn = await Deno.connect({ hostname, port: Number(port) });
    await conn.write(new TextEncoder().encode(
      "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    ));
    readers.push(conn); // and never read from again
  }
  await eventually(() => feed.subscribers === 10, "ten subscribers");
  // A snapshot a tick. The sockets between the readers and the server take a few megabytes each
  // before the readers fall behind; then DROP_AFTER_IDLE snapshots come with nothing taken.
  let peak = 0;
  let ticks = 0;
  while (feed.subscribers > 0) {
    assert.ok(++ticks <= 200, "the readers were never dropped");
    await server.advance(1000);
    await new Promise((resolve) => setTimeout(resolve, 25)); // the snapshot is sent, bytes move
    // What stalled readers hold changes only as they stall: a look every few ticks sees it.
    if (ticks % 4 === 0) peak = Math.max(peak, await live.measure() - before);
  }
  const after = await live.measure() - before;
  const mib = (n: number) => (n / 2 ** 20).toFixed(2);
  console.log(
    `10 stopped event-stream readers, snapshots of ${mib(snapshotBytes)} MiB: live heap and ` +
      `buffers grew by ${mib(peak)} MiB at most (${(peak / snapshotBytes).toFixed(1)} ` +
      `snapshots), ${mib(after)} MiB left once they were dropped after ${ticks} snapshots`,
  );
  assert.ok(peak <= 10 * (snapshotBytes + IN_FLIGHT), `10 readers held ${mib(peak)} MiB`);
  assert.ok(after <= 10 * IN_FLIGHT, `10 dropped readers hold ${mib(after)} MiB`);
  for (const conn of readers) conn.close();
});
