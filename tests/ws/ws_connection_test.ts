/**
 * Protocol-level tests of `Connection` with a fake socket, over a real broker and SQLite store in
 * a temp dir: what happens when sends fail, when the socket backs up, before authentication, and
 * when too many frames are in progress. No network; the fake socket records what was sent.
 */

import assert from "node:assert/strict";
import { largestDeliveryBytes } from "../../lib/core/limits.ts";
import { OPEN_ACCESS, type Principal, TokenSet } from "../../lib/auth/tokens.ts";
import { Broker } from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import type { NewJob } from "../../lib/core/job.ts";
import { silentLogger } from "../../lib/observe/log.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import {
  Connection,
  type ConnectionOptions,
  MAX_PENDING_FRAMES,
  type SocketLike,
} from "../../lib/ws/connection.ts";
import { MAX_SUBSCRIPTIONS } from "../../lib/core/limits.ts";
import { eventually, type Frame } from "../helpers/ws_client.ts";

const TOKEN = "fake-socket-token-0123456789";

/** A socket that records what it is given; it can refuse sends and pretend to back up. */
class FakeSocket implements SocketLike {
  /** Text frames sent, in order. */
  readonly sent: string[] = [];
  /** Close calls, in order. */
  readonly closes: { code: number; reason: string }[] = [];
  /** Sends that will succeed before every further send throws. */
  sendsLeft = Infinity;
  /** Whether each send adds its length to `bufferedAmount` (a reader that never reads). */
  accumulate = false;
  bufferedAmount = 0;
  unauthenticated?: boolean;

  send(text: string): void {
    if (this.sendsLeft <= 0) throw new Error("fake socket: connection reset");
    this.sendsLeft--;
    this.sent.push(text);
    if (this.accumulate) this.bufferedAmount += text.length;
  }

  close(code: number, reason: string): void {
    this.closes.push({ code, reason });
  }

  /** Every frame sent, parsed. */
  frames(predicate: (frame: Frame) => boolean = () => true): Frame[] {
    return this.sent.map((text) => JSON.parse(text) as Frame).filter(predicate);
  }

  /** The reply to the frame with `ref`, if sent. */
  reply(ref: string | number): Frame | undefined {
    return this.frames((f) => (f.op === "ok" || f.op === "error") && f.ref === ref)[0];
  }
}

/** A broker over a SQLite store in a temp dir, and a way to attach connections to it. */
interface Harness extends AsyncDisposable {
  broker: Broker;
  clock: ManualClock;
  /** Attaches a connection to `socket` (open access unless options say otherwise). */
  connect(socket: SocketLike, options?: Partial<ConnectionOptions>): Connection;
  /** Enqueues jobs with the given payloads; answers their ids. */
  enqueue(queue: string, payloads: unknown[]): Promise<number[]>;
  /** A job's state and attempts. */
  job(id: number): Promise<{ state: string; attempts: number }>;
}

async function startHarness(): Promise<Harness> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-ws-conn-" });
  const store = SqliteStore.open({
    path: `${dir}/tegami.db`,
    sync: "normal",
    policy: { defaultLeaseMs: 30_000, retryDelayMs: () => 1000 },
  });
  const clock = new ManualClock();
  const broker = new Broker({ store, clock, retainDoneMs: 24 * 3600_000 });
  await broker.start();
  const connections: Connection[] = [];
  return {
    broker,
    clock,
    connect: (socket, options = {}) => {
      const connection = new Connection(socket, {
        broker,
        clock,
        limits: { maxPayload: 1 << 20, maxBatch: 1000 },
        tokens: null,
        principal: OPEN_ACCESS,
        maxFrame: 1 << 20,
        pauseBuffered: 1 << 20,
        maxBuffered: 32 << 20,
        log: silentLogger,
        ...options,
      });
      connections.push(connection);
      return connection;
    },
    enqueue: async (queue, payloads) => {
      const jobs: NewJob[] = payloads.map((payload) => ({
        payload: JSON.stringify(payload),
        priority: 0,
        key: null,
        run_at: clock.now(),
        max_attempts: 5,
        lease_ms: null,
        backoff: null,
      }));
      return (await broker.enqueue(queue, jobs)).map((e) => e.id);
    },
    job: async (id) => {
      const job = await broker.get(id);
      assert.ok(job, `job ${id} is gone`);
      return { state: job.state, attempts: job.attempts };
    },
    [Symbol.asyncDispose]: async () => {
      broker.close();
      for (const connection of connections) connection.shutdown();
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Lets a few rounds of commits and dispatches run. */
async function settle(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

function frame(value: Record<string, unknown>): string {
  return JSON.stringify(value);
}

async function subscribe(
  socket: FakeSocket,
  connection: Connection,
  queue: string,
  prefetch: number,
): Promise<void> {
  const ref = `sub-${queue}`;
  connection.onMessage(frame({ op: "subscribe", ref, queue, prefetch }));
  await eventually(() => socket.reply(ref) !== undefined, "the subscribe reply");
  assert.equal(socket.reply(ref)?.op, "ok");
}

Deno.test("Connection releases a pushed job at once, uncounted, when its frame cannot be sent", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  let finished = 0;
  const connection = h.connect(socket, { onFinished: () => finished++ });
  await subscribe(socket, connection, "w", 5);
  socket.sendsLeft = 0;
  const start = h.clock.now();
  const [id] = await h.enqueue("w", [1]);
  await eventually(() => finished === 1, "the failed push to end the connection");
  await eventually(async () => (await h.job(id)).state === "pending", "the release");
  assert.equal(h.clock.now(), start, "released by expiry, not at once");
  assert.equal((await h.job(id)).attempts, 0, "an attempt that reached nobody was counted");
  assert.equal(connection.leaseCount, 0);
  assert.equal(h.broker.consumerCount("w"), 0);
});

Deno.test("Connection releases every job of a push when a send fails midway", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  let finished = false;
  const connection = h.connect(socket, { onFinished: () => finished = true });
  await subscribe(socket, connection, "w", 5);
  socket.sendsLeft = 1; // the first job frame goes out, the second fails
  const ids = await h.enqueue("w", [1, 2, 3]);
  await eventually(() => finished, "the failed push to end the connection");
  await eventually(async () => {
    for (const id of ids) {
      const job = await h.job(id);
      if (job.state !== "pending") return false;
    }
    return true;
  }, "all three jobs back to pending");
  // The frame that went out may have reached the consumer: that attempt counts; the others not.
  const [sent] = socket.frames((f) => f.op === "job");
  assert.equal(socket.frames((f) => f.op === "job").length, 1);
  for (const id of ids) assert.equal((await h.job(id)).attempts, id === sent.id ? 1 : 0);
  const [counts] = await h.broker.stats("w");
  assert.deepEqual([counts.counts.pending, counts.counts.leased], [3, 0]);
});

Deno.test("Connection releases its leases when a reply cannot be sent", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket);
  await subscribe(socket, connection, "w", 1);
  const [id] = await h.enqueue("w", [1]);
  await eventually(() => connection.leaseCount === 1, "the push");
  socket.sendsLeft = 0;
  connection.onMessage(frame({ op: "subscribe", ref: 2, queue: "other", prefetch: 1 }));
  await eventually(async () => (await h.job(id)).state === "pending", "the release");
  assert.equal(connection.leaseCount, 0);
});

Deno.test("Connection gives back a job claimed for a subscription that was just dropped", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket);
  await subscribe(socket, connection, "w", 1);
  // The enqueue wakes the queue at once: its claim joins the same commit. Unsubscribe before
  // that commit lands, so the claimed job finds its subscription gone.
  const enqueued = h.enqueue("w", [1]);
  connection.onMessage(frame({ op: "unsubscribe", ref: 2, queue: "w" }));
  const [id] = await enqueued;
  await settle();
  await eventually(async () => (await h.job(id)).state === "pending", "the release");
  assert.deepEqual(socket.frames((f) => f.op === "job"), []);
  assert.equal((await h.job(id)).attempts, 0);
  assert.equal(connection.leaseCount, 0);
});

Deno.test("a job enqueued while a subscription's first claim is in flight is still pushed", async () => {
  // The claim and the enqueue share one group commit, claim first: the claim finds nothing, and
  // the enqueue's wake-up arrives while that dispatch pass is finishing. It must not be lost.
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket);
  connection.onMessage(frame({ op: "subscribe", ref: 1, queue: "w", prefetch: 1 }));
  const [id] = await h.enqueue("w", [1]);
  await eventually(() => socket.frames((f) => f.op === "job").length === 1, "the push");
  assert.equal(socket.frames((f) => f.op === "job")[0].id, id);
});

Deno.test("Connection.onClose() releases every lease it holds at once", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket);
  await subscribe(socket, connection, "w", 3);
  const ids = await h.enqueue("w", [1, 2, 3]);
  await eventually(() => connection.leaseCount === 3, "three pushes");
  connection.onClose();
  for (const id of ids) {
    await eventually(async () => (await h.job(id)).state === "pending", `job ${id} released`);
  }
});

Deno.test("Connection.shutdown() closes with 1001 and keeps leases, even when onClose follows", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket);
  await subscribe(socket, connection, "w", 1);
  const [id] = await h.enqueue("w", [1]);
  await eventually(() => connection.leaseCount === 1, "the push");
  connection.shutdown();
  connection.onClose(); // the runtime's close event arrives afterwards
  await settle();
  assert.deepEqual(socket.closes.map((c) => c.code), [1001]);
  assert.equal((await h.job(id)).state, "leased");
});

Deno.test("Connection refuses every frame before auth with unauthorized and closes 1008", async () => {
  await using h = await startHarness();
  const tokens = TokenSet.parse(JSON.stringify([{ name: "w", token: TOKEN, scopes: ["admin"] }]));
  for (
    const first of [
      frame({ op: "subscribe", ref: 1, queue: "w", prefetch: 1 }),
      frame({ op: "enqueue", ref: 1, queue: "w", payload: 1 }),
      "garbage",
      frame({ op: "fly", ref: 1 }),
    ]
  ) {
    const socket = new FakeSocket();
    const connection = h.connect(socket, { tokens, principal: null });
    connection.onMessage(first);
    connection.onMessage(frame({ op: "auth", ref: 2, token: TOKEN })); // too late: ignored
    await settle();
    const frames = socket.frames();
    assert.equal(frames.length, 1, `${first}: ${socket.sent.join(" ")}`);
    assert.equal(frames[0].op, "error");
    assert.equal(frames[0].code, "unauthorized");
    assert.deepEqual(socket.closes.map((c) => c.code), [1008]);
  }
  assert.equal(h.broker.consumerCount("w"), 0);
  assert.deepEqual((await h.broker.stats("w"))[0].counts.pending, 0);
});

Deno.test("Connection accepts frames after a good auth frame and applies the token's scopes", async () => {
  await using h = await startHarness();
  const tokens = TokenSet.parse(JSON.stringify([
    { name: "shop", token: TOKEN, scopes: ["produce"], queues: ["orders.*"] },
  ]));
  const socket = new FakeSocket();
  const connection = h.connect(socket, { tokens, principal: null });
  connection.onMessage(frame({ op: "auth", ref: 1, token: TOKEN }));
  connection.onMessage(frame({ op: "enqueue", ref: 2, queue: "orders.eu", payload: 1 }));
  connection.onMessage(frame({ op: "enqueue", ref: 3, queue: "billing", payload: 1 }));
  connection.onMessage(frame({ op: "subscribe", ref: 4, queue: "orders.eu", prefetch: 1 }));
  await eventually(() => socket.reply(4) !== undefined, "all replies");
  assert.deepEqual(socket.reply(1), { op: "ok", ref: 1, name: "shop" });
  assert.equal(socket.reply(2)?.op, "ok");
  assert.equal(socket.reply(3)?.code, "forbidden");
  assert.equal(socket.reply(4)?.code, "forbidden");
  assert.deepEqual(socket.closes, []);
});

Deno.test("Connection refuses a bad auth frame with unauthorized and closes 1008", async () => {
  await using h = await startHarness();
  const tokens = TokenSet.parse(JSON.stringify([{ name: "w", token: TOKEN, scopes: ["admin"] }]));
  const socket = new FakeSocket();
  const connection = h.connect(socket, { tokens, principal: null as Principal | null });
  connection.onMessage(frame({ op: "auth", ref: 1, token: "wrong-token-0123456789abc" }));
  await eventually(() => socket.closes.length > 0, "the close");
  assert.equal(socket.reply(1)?.code, "unauthorized");
  assert.deepEqual(socket.closes.map((c) => c.code), [1008]);
});

Deno.test("Connection closes a socket that sends no auth frame within the auth timeout", async () => {
  await using h = await startHarness();
  const tokens = TokenSet.parse(JSON.stringify([{ name: "w", token: TOKEN, scopes: ["admin"] }]));
  const silent = new FakeSocket();
  h.connect(silent, { tokens, principal: null, authTimeoutMs: 5000 });
  const authed = new FakeSocket();
  h.connect(authed, { tokens, principal: null, authTimeoutMs: 5000 })
    .onMessage(frame({ op: "auth", ref: 1, token: TOKEN }));
  h.clock.advance(4999);
  assert.equal(silent.closes.length, 0);
  h.clock.advance(1);
  assert.deepEqual(silent.closes.map((c) => c.code), [1008]);
  assert.equal(silent.frames()[0].code, "unauthorized");
  assert.equal(authed.closes.length, 0, "an authenticated socket was closed");
});

Deno.test("Connection marks a socket unauthenticated until its auth frame, and warns of a flood of such closes once", async () => {
  await using h = await startHarness();
  const tokens = TokenSet.parse(JSON.stringify([{ name: "w", token: TOKEN, scopes: ["admin"] }]));
  const warned: Record<string, unknown>[] = [];
  const log = {
    ...silentLogger,
    warn: (_: string, fields?: Record<string, unknown>) => warned.push(fields ?? {}),
  };
  const authed = new FakeSocket();
  h.connect(authed, { tokens, principal: null, authTimeoutMs: 5000, log })
    .onMessage(frame({ op: "auth", ref: 1, token: TOKEN }));
  assert.equal(authed.unauthenticated, false);
  const silent = Array.from({ length: 20 }, () => new FakeSocket());
  for (const socket of silent) {
    h.connect(socket, { tokens, principal: null, authTimeoutMs: 5000, log });
  }
  assert.ok(silent.every((socket) => socket.unauthenticated === true));
  h.clock.advance(5000);
  assert.ok(silent.every((socket) => socket.closes.length === 1));
  assert.equal(warned.length, 1, "one warning for twenty closes within 10 s");
  assert.equal(warned[0].suppressed, 0);
});

Deno.test("Connection holds at most MAX_SUBSCRIPTIONS subscriptions; the next is refused with conflict", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket);
  for (let i = 0; i <= MAX_SUBSCRIPTIONS; i++) {
    connection.onMessage(frame({ op: "subscribe", ref: i, queue: `q${i}`, prefetch: 1 }));
  }
  await eventually(() => socket.reply(MAX_SUBSCRIPTIONS) !== undefined, "every reply");
  assert.equal(socket.reply(MAX_SUBSCRIPTIONS - 1)?.op, "ok");
  assert.equal(socket.reply(MAX_SUBSCRIPTIONS)?.code, "conflict");
  // Subscribing again to a queue already held still updates it; one freed makes room.
  connection.onMessage(frame({ op: "subscribe", ref: "again", queue: "q0", prefetch: 5 }));
  connection.onMessage(frame({ op: "unsubscribe", ref: "free", queue: "q1" }));
  connection.onMessage(frame({ op: "subscribe", ref: "room", queue: "new", prefetch: 1 }));
  await eventually(() => socket.reply("room") !== undefined, "the last reply");
  assert.equal(socket.reply("again")?.op, "ok");
  assert.equal(socket.reply("room")?.op, "ok");
});

Deno.test("Connection refuses a frame over 4 KiB before auth without parsing it", async () => {
  await using h = await startHarness();
  const tokens = TokenSet.parse(JSON.stringify([{ name: "w", token: TOKEN, scopes: ["admin"] }]));
  const socket = new FakeSocket();
  const connection = h.connect(socket, { tokens, principal: null });
  connection.onMessage(
    JSON.stringify({ op: "auth", ref: 1, token: TOKEN, padding: "x".repeat(5000) }),
  );
  await eventually(() => socket.closes.length > 0, "the close");
  assert.deepEqual(socket.closes.map((c) => c.code), [1008]);
  assert.equal(socket.frames()[0].code, "unauthorized");
});

Deno.test("Connection answers rate_limited past the limit of frames in progress, then recovers", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket);
  for (let i = 0; i <= MAX_PENDING_FRAMES; i++) {
    connection.onMessage(frame({ op: "enqueue", ref: i, queue: "w", payload: i }));
  }
  await eventually(() => socket.sent.length === MAX_PENDING_FRAMES + 1, "every reply");
  const refused = socket.frames((f) => f.op === "error");
  assert.equal(refused.length, 1);
  assert.equal(refused[0].code, "rate_limited");
  assert.equal(refused[0].ref, MAX_PENDING_FRAMES);
  assert.equal((await h.broker.stats("w"))[0].counts.pending, MAX_PENDING_FRAMES);
  // Once the replies are out, frames are taken again.
  connection.onMessage(frame({ op: "enqueue", ref: "after", queue: "w", payload: 0 }));
  await eventually(() => socket.reply("after") !== undefined, "the reply");
  assert.equal(socket.reply("after")?.op, "ok");
});

Deno.test("Connection closes with 1009 on a frame over maxFrame, counted in UTF-8 bytes", async () => {
  await using h = await startHarness();
  for (
    const [what, data] of [
      ["ASCII text", "x".repeat(101)],
      ["multi-byte text", "€".repeat(34)], // 34 characters, 102 bytes
      ["bytes", new Uint8Array(101)],
    ] as const
  ) {
    const socket = new FakeSocket();
    const connection = h.connect(socket, { maxFrame: 100 });
    connection.onMessage(data);
    assert.deepEqual(socket.closes.map((c) => c.code), [1009], what);
  }
  const socket = new FakeSocket();
  const connection = h.connect(socket, { maxFrame: 100 });
  connection.onMessage("€".repeat(33)); // 99 bytes: read, and refused as not JSON
  assert.deepEqual(socket.closes, []);
  assert.equal(socket.frames()[0].code, "invalid_json");
});

Deno.test("Connection pauses pushes while the socket's buffer is over pauseBuffered", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket, { pauseBuffered: 1000 });
  await subscribe(socket, connection, "w", 2);
  socket.bufferedAmount = 5000;
  const [first] = await h.enqueue("w", [1]);
  await settle();
  assert.deepEqual(socket.frames((f) => f.op === "job"), []);
  assert.deepEqual(await h.job(first), { state: "pending", attempts: 0 });
  socket.bufferedAmount = 0;
  await h.enqueue("w", [2]);
  await eventually(() => socket.frames((f) => f.op === "job").length === 2, "both pushes");
});

Deno.test("Connection resumes pushes once a full buffer drains, without another job arriving", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const connection = h.connect(socket, { pauseBuffered: 1000 });
  await subscribe(socket, connection, "w", 2);
  socket.bufferedAmount = 5000;
  await h.enqueue("w", [1]);
  await settle();
  assert.deepEqual(socket.frames((f) => f.op === "job"), []);
  socket.bufferedAmount = 0; // the reader caught up; nothing else happens on the queue
  await eventually(() => socket.frames((f) => f.op === "job").length === 1, "the push after drain");
});

Deno.test("a push stops half way to maxBuffered and gives the rest back, without cutting a reader", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  socket.accumulate = true;
  const connection = h.connect(socket, { pauseBuffered: 1000, maxBuffered: 6000 });
  await subscribe(socket, connection, "w", 5);
  const ids = await h.enqueue("w", Array.from({ length: 5 }, () => "x".repeat(900)));
  // Frames of about 1 400 bytes: the third takes the buffer past 3 000, and the push stops.
  await eventually(() => socket.frames((f) => f.op === "job").length === 3, "the first three");
  await settle();
  assert.deepEqual(socket.closes, []);
  assert.deepEqual(
    await Promise.all(ids.map((id) => h.job(id))),
    [1, 1, 1, 0, 0].map((attempts, i) => ({ state: i < 3 ? "leased" : "pending", attempts })),
    "the two not sent are pending again, their attempt not counted",
  );
  // The consumer reads what it was sent: the rest follow.
  socket.bufferedAmount = 0;
  await eventually(() => socket.frames((f) => f.op === "job").length === 5, "the other two");
  assert.deepEqual(socket.closes, []);
});

Deno.test("a v2 push splits its jobs into frames no larger than the largest job frame", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  const limits = { maxPayload: 2000, maxBatch: 1000 };
  const connection = h.connect(socket, { version: 2, limits });
  await subscribe(socket, connection, "w", 100);
  await h.enqueue("w", Array.from({ length: 100 }, () => "é".repeat(900))); // 1 800 bytes each
  await eventually(
    () => socket.frames((f) => f.op === "jobs").flatMap((f) => f.jobs as unknown[]).length === 100,
    "every job",
  );
  const frames = socket.sent.filter((text) => text.startsWith(`{"op":"jobs"`));
  assert.ok(frames.length > 1, `${frames.length} frame(s)`);
  for (const frame of frames) {
    const bytes = new TextEncoder().encode(frame).length;
    assert.ok(bytes <= largestDeliveryBytes(limits.maxPayload), `${bytes} bytes`);
  }
});

Deno.test("Connection cuts a consumer whose buffer stays past half of maxBuffered, not shrinking", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  socket.accumulate = true;
  const connection = h.connect(socket, {
    pauseBuffered: 1000,
    maxBuffered: 3000,
    notReadingMs: 200,
  });
  await subscribe(socket, connection, "w", 5);
  const ids = await h.enqueue("w", Array.from({ length: 5 }, () => "x".repeat(1000)));
  await eventually(() => socket.frames((f) => f.op === "job").length > 0, "a push");
  assert.equal(socket.closes.length, 0, "not at once: it may be reading");
  await eventually(() => socket.closes.length > 0, "the cut");
  assert.deepEqual(socket.closes.map((c) => c.code), [1008]);
  const sent = new Set(socket.frames((f) => f.op === "job").map((f) => f.id));
  for (const id of ids) {
    await eventually(async () => (await h.job(id)).state === "pending", `job ${id} released`);
    // A job sent counts its attempt; one the push gave back before sending it does not.
    assert.equal((await h.job(id)).attempts, sent.has(id) ? 1 : 0);
  }
  assert.equal(h.broker.consumerCount("w"), 0);
});

Deno.test("Connection cuts a client that sends frames and never reads the answers, past maxBuffered", async () => {
  await using h = await startHarness();
  const socket = new FakeSocket();
  socket.accumulate = true;
  const connection = h.connect(socket, { pauseBuffered: 1000, maxBuffered: 3000 });
  for (let i = 0; i < 200 && socket.closes.length === 0; i++) {
    connection.onMessage(JSON.stringify({ op: "fly", ref: i }));
  }
  await eventually(() => socket.closes.length > 0, "the cut");
  assert.deepEqual(socket.closes, [{ code: 1008, reason: "client is not reading its frames" }]);
  assert.ok(socket.bufferedAmount < 4000, `${socket.bufferedAmount} bytes held`);
});
