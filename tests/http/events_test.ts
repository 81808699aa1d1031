/**
 * `GET /v1/events`, the dashboard's live feed, over real HTTP: `hello` with the throughput
 * history, then one snapshot per second (driven by the manual clock), filtered by the token's
 * queues; and a server shutdown ends open streams instead of waiting for them.
 */

import assert from "node:assert/strict";
import { enqueue } from "../helpers/http_calls.ts";
import { startTestServer, stopWithin, type TestServer } from "../helpers/test_server.ts";

const ADMIN = "events-admin-token-0123456789";
const BILLING = "events-billing-token-0123456789";

interface Event {
  event: string;
  // deno-lint-ignore no-explicit-any
  data: any;
}

/** Reads server-sent events from a response body, one at a time. */
class EventReader {
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";

  constructor(response: Response) {
    this.#reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next event, or null when the stream ended. */
  async next(): Promise<Event | null> {
    for (;;) {
      const cut = this.#buffer.indexOf("\n\n");
      if (cut >= 0) {
        const block = this.#buffer.slice(0, cut);
        this.#buffer = this.#buffer.slice(cut + 2);
        const event = block.match(/^event: (.*)$/m)?.[1] ?? "message";
        const data = block.match(/^data: (.*)$/m)?.[1];
        return { event, data: data === undefined ? null : JSON.parse(data) };
      }
      const { value, done } = await this.#reader.read();
      if (done) return null;
      this.#buffer += value;
    }
  }

  /** Stops reading. */
  async cancel(): Promise<void> {
    await this.#reader.cancel();
  }
}

async function subscribe(server: TestServer, token?: string): Promise<EventReader> {
  const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
  const response = await fetch(`${server.url}/v1/events`, { headers });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.equal(response.headers.get("cache-control"), "no-store");
  return new EventReader(response);
}

Deno.test("GET /v1/events sends hello, then a snapshot with counts, totals and rates each second", async () => {
  await using server = await startTestServer();
  await enqueue(server, "email", { payload: 1 });
  await enqueue(server, "email", { payload: 2 });
  const events = await subscribe(server);
  const hello = await events.next();
  assert.equal(hello?.event, "hello");
  assert.equal(hello.data.interval_ms, 1000);
  assert.deepEqual(hello.data.history, []);
  assert.equal(typeof hello.data.version, "string");

  const first = await events.next();
  assert.equal(first?.event, "snapshot");
  assert.equal(first.data.connections, 0);
  assert.deepEqual(first.data.queues.map((q: { name: string }) => q.name), ["email"]);
  assert.deepEqual(first.data.queues[0].counts, {
    blocked: 0,
    pending: 2,
    delayed: 0,
    leased: 0,
    done: 0,
    dead: 0,
    cancelled: 0,
  });

  await server.advance(1000);
  const second = await events.next();
  assert.equal(second?.event, "snapshot");
  const email = second.data.queues[0];
  assert.deepEqual(email.rates, { enqueued: 2, acked: 0, failed: 0 });
  assert.deepEqual(email.totals, { enqueued: 2, delivered: 0, acked: 0, failed: 0 });
  assert.equal(email.paused, false);
  assert.equal(email.consumers, 0);
  assert.ok(second.data.at > first.data.at);

  const leased = await server.request("POST", "/v1/queues/email/leases", { max: 2 });
  const [a, b] = leased.body.jobs;
  await server.request("POST", `/v1/jobs/${a.id}/ack`, { token: a.lease.token });
  await server.request("POST", `/v1/jobs/${b.id}/nack`, { token: b.lease.token, dead: true });
  await server.advance(1000);
  const third = await events.next();
  assert.deepEqual(third?.data.queues[0].rates, { enqueued: 0, acked: 1, failed: 1 });
  assert.equal(third?.data.queues[0].counts.dead, 1);
  await events.cancel();
});

Deno.test("GET /v1/events hello carries the throughput of the last minutes to a new subscriber", async () => {
  await using server = await startTestServer();
  await enqueue(server, "email", { payload: 1 });
  await server.advance(1000);
  await server.advance(1000);
  await enqueue(server, "email", { payload: 2 });
  await enqueue(server, "email", { payload: 3 });
  await server.advance(1000);
  const events = await subscribe(server);
  const hello = await events.next();
  const moved = hello?.data.history
    .filter((s: { queues: Record<string, unknown> }) => "email" in s.queues)
    .map((s: { queues: Record<string, { enqueued: number }> }) => s.queues.email.enqueued);
  assert.deepEqual(moved, [1, 2]);
  assert.equal(hello?.data.history.length, 3);
  await events.cancel();
});

Deno.test("GET /v1/events needs a valid token and shows only the queues the token may use", async () => {
  await using server = await startTestServer({
    tokens: [
      { name: "ops", token: ADMIN, scopes: ["admin"] },
      { name: "billing", token: BILLING, scopes: ["consume"], queues: ["billing.*"] },
    ],
  });
  const admin = { authorization: `Bearer ${ADMIN}` };
  await enqueue(server, "billing.eu", { payload: 1 }, admin);
  await enqueue(server, "email", { payload: 2 }, admin);
  await server.advance(1000);

  const none = await fetch(`${server.url}/v1/events`);
  assert.equal(none.status, 401);
  assert.equal((await none.json()).error.code, "unauthorized");
  const wrong = await fetch(`${server.url}/v1/events`, {
    headers: { authorization: "Bearer not-a-token" },
  });
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();

  const events = await subscribe(server, BILLING);
  const hello = await events.next();
  assert.ok(hello!.data.history.length > 0, "the hello carries history to check");
  for (const sample of hello!.data.history) {
    assert.deepEqual(Object.keys(sample.queues).filter((q) => q !== "billing.eu"), []);
  }
  const snapshot = await events.next();
  assert.deepEqual(snapshot?.data.queues.map((q: { name: string }) => q.name), ["billing.eu"]);
  await events.cancel();
});

Deno.test("closing the server ends open event streams instead of waiting for them", async () => {
  await using server = await startTestServer();
  const events = await subscribe(server);
  assert.equal((await events.next())?.event, "hello");
  assert.equal((await events.next())?.event, "snapshot");
  assert.equal(await stopWithin(server), "stopped");
  assert.equal(await events.next(), null);
  const after = await fetch(`${server.url}/v1/events`).catch((error) => error);
  assert.ok(after instanceof TypeError, "the listener is closed");
});
