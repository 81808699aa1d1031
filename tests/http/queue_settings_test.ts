/**
 * Queue settings over HTTP: `GET` and `PUT /v1/queues/{queue}/settings`, the settings in the
 * stats objects, the defaults jobs take, per-queue retention by the server's own sweep, and
 * settings surviving a restart. Every answer is checked against the OpenAPI document.
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { enqueue, getJob, leaseOne, queueStats } from "../helpers/http_calls.ts";
import { settle, startTestServer, type TestServer } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";
import { DEFAULT_SETTINGS_JSON } from "../helpers/settings_json.ts";

const FULL = {
  concurrency: 4,
  rate: "100/1s",
  group_limit: 2,
  max_attempts: 7,
  lease_ms: 45_000,
  backoff: { base_ms: 500, max_ms: 60_000 },
  retain_done_ms: 3_600_000,
  retain_dead_ms: 86_400_000,
  retain_pending_ms: 345_600_000,
  dead_letter_queue: "mail.dead",
};

async function put(server: TestServer, queue: string, body: unknown): Promise<unknown> {
  const answer = await server.request("PUT", `/v1/queues/${queue}/settings`, body);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

Deno.test("GET /v1/queues/{q}/settings of a queue nobody configured answers the defaults", async () => {
  await using server = await startTestServer();
  const answer = await server.request("GET", "/v1/queues/fresh/settings");
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, DEFAULT_SETTINGS_JSON);
});

Deno.test("PUT /v1/queues/{q}/settings stores every setting and GET answers them", async () => {
  await using server = await startTestServer();
  assert.deepEqual(await put(server, "mail", FULL), FULL);
  const answer = await server.request("GET", "/v1/queues/mail/settings");
  assert.deepEqual(answer.body, FULL);
  assert.deepEqual((await queueStats(server, "mail")).settings, FULL);
});

Deno.test("PUT /v1/queues/{q}/settings answers a rate in its canonical form", async () => {
  await using server = await startTestServer();
  for (
    const [sent, shown] of [
      ["100/1000ms", "100/1s"],
      ["5/250ms", "5/250ms"],
      ["1000/60s", "1000/1m"],
      ["7/s", "7/1s"],
      ["3/90m", "3/90m"],
      ["1/24h", "1/24h"],
    ]
  ) {
    const body = await put(server, "q", { rate: sent }) as { rate: string };
    assert.equal(body.rate, shown, sent);
  }
});

Deno.test("PUT /v1/queues/{q}/settings replaces the whole object: what is left out is reset", async () => {
  await using server = await startTestServer();
  await put(server, "q", FULL);
  assert.deepEqual(await put(server, "q", { concurrency: 1 }), {
    ...DEFAULT_SETTINGS_JSON,
    concurrency: 1,
  });
  assert.deepEqual(
    await put(server, "q", { concurrency: null, group_limit: null }),
    DEFAULT_SETTINGS_JSON,
  );
});

Deno.test("a queue with settings but no jobs is listed by GET /v1/queues until reset", async () => {
  await using server = await startTestServer();
  await enqueue(server, "busy", { payload: 1 });
  await put(server, "quiet", { concurrency: 2 });
  const listed = await server.request("GET", "/v1/queues");
  assert.deepEqual(
    listed.body.queues.map((q: { name: string; settings: unknown }) => [q.name, q.settings]),
    [["busy", DEFAULT_SETTINGS_JSON], ["quiet", { ...DEFAULT_SETTINGS_JSON, concurrency: 2 }]],
  );
  await put(server, "quiet", {});
  const after = await server.request("GET", "/v1/queues");
  assert.deepEqual(after.body.queues.map((q: { name: string }) => q.name), ["busy"]);
});

Deno.test("PUT /v1/queues/{q}/settings refuses bad settings with 400 naming the field", async () => {
  await using server = await startTestServer();
  await put(server, "q", { concurrency: 3 });
  const cases: [unknown, RegExp][] = [
    [[], /"body": expected a JSON object/],
    [{ concurency: 3 }, /"concurency": unknown field/],
    [{ concurrency: 0 }, /"concurrency": expected an integer from 1 to 1000000, got 0/],
    [{ concurrency: 2.5 }, /"concurrency": expected an integer or null/],
    [{ concurrency: "3" }, /"concurrency": expected an integer or null/],
    [{ rate: "abc" }, /"rate": expected "LIMIT\/INTERVAL" such as "100\/1s"/],
    [{ rate: 100 }, /"rate": expected "LIMIT\/INTERVAL".*as a string/],
    [{ rate: "0/1s" }, /"rate": expected a limit from 1 to 1000000, got 0/],
    [{ rate: "10/0s" }, /"rate": expected an interval from 1ms to 24h, got "0s"/],
    [{ rate: "10/25h" }, /"rate": expected an interval from 1ms to 24h, got "25h"/],
    [{ rate: "10/1d" }, /"rate": expected "LIMIT\/INTERVAL"/],
    [{ group_limit: 0 }, /"group_limit": expected an integer from 1/],
    [{ max_attempts: 1001 }, /"max_attempts": expected an integer from 1 to 1000, got 1001/],
    [{ lease_ms: 99 }, /"lease_ms": expected an integer from 100 to 43200000, got 99/],
    [{ backoff: 5 }, /"backoff": expected an object \{base_ms, max_ms\} or null/],
    [{ backoff: { base_ms: 10 } }, /"backoff.max_ms": is required/],
    [{ backoff: { base_ms: 10, max_ms: 5 } }, /"backoff.max_ms": must be at least base_ms/],
    [{ backoff: { base_ms: 1, max_ms: 2, x: 1 } }, /"backoff.x": unknown field/],
    [{ retain_done_ms: -1 }, /"retain_done_ms": expected an integer from 0 to 31536000000/],
    [{ retain_dead_ms: 31_536_000_001 }, /"retain_dead_ms": expected an integer from 0/],
    [{ retain_pending_ms: -1 }, /"retain_pending_ms": expected an integer from 0/],
  ];
  for (const [body, message] of cases) {
    const answer = await server.request("PUT", "/v1/queues/q/settings", body);
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.match(answer.body.error.message, message, JSON.stringify(body));
  }
  const missing = await server.request("PUT", "/v1/queues/q/settings");
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error.code, "validation_failed");
  // Nothing refused changed anything.
  assert.deepEqual((await queueStats(server, "q")).settings, {
    ...DEFAULT_SETTINGS_JSON,
    concurrency: 3,
  });
});

Deno.test("PUT /v1/queues/{q}/settings on a new queue past --max-queues answers 409", async () => {
  await using server = await startTestServer({ config: { maxQueues: 1 } });
  await enqueue(server, "a", { payload: 1 });
  const refused = await server.request("PUT", "/v1/queues/b/settings", { concurrency: 1 });
  assert.equal(refused.status, 409);
  assert.equal(refused.body.error.code, "conflict");
  await put(server, "a", { concurrency: 1 });
  // Resetting a queue never known is no new queue.
  await put(server, "c", {});
});

Deno.test("jobs enqueued without max_attempts, lease_ms or backoff take their queue's", async () => {
  await using server = await startTestServer();
  await put(server, "q", FULL);
  const bare = await getJob(server, await enqueue(server, "q", { payload: 1 }));
  assert.equal(bare.max_attempts, 7);
  assert.equal(bare.lease_ms, 45_000);
  assert.deepEqual(bare.backoff, { base_ms: 500, max_ms: 60_000 });
  const own = await getJob(
    server,
    await enqueue(server, "q", {
      payload: 2,
      max_attempts: 2,
      lease_ms: 1000,
      backoff: { base_ms: 1, max_ms: 2 },
    }),
  );
  assert.equal(own.max_attempts, 2);
  assert.equal(own.lease_ms, 1000);
  assert.deepEqual(own.backoff, { base_ms: 1, max_ms: 2 });
  const delivery = await leaseOne(server, "q");
  assert.equal(delivery.id, bare.id);
  assert.equal(delivery.lease.expires_at, server.clock.now() + 45_000);
  // Another queue keeps the server's.
  const plain = await getJob(server, await enqueue(server, "other", { payload: 3 }));
  assert.equal(plain.max_attempts, 5);
  assert.equal(plain.lease_ms, null);
});

/** Advances the clock in steps until `check` holds (the sweep runs on the server's timer). */
async function advanceUntil(
  server: TestServer,
  stepMs: number,
  steps: number,
  check: () => Promise<boolean>,
): Promise<void> {
  for (let i = 0; i < steps; i++) {
    if (await check()) return;
    await server.advance(stepMs);
    await settle(20);
  }
  assert.ok(await check(), "the sweep did not remove the job in time");
}

Deno.test("the retention sweep keeps a queue's done and dead jobs for its own retention", async () => {
  await using server = await startTestServer({ config: { retainDoneMs: 60 * 60_000 } });
  await put(server, "brief", { retain_done_ms: 1000, retain_dead_ms: 2000 });
  const finish = async (queue: string) => {
    const id = await enqueue(server, queue, { payload: 1 });
    const job = await leaseOne(server, queue);
    const ack = await server.request("POST", `/v1/jobs/${id}/ack`, { token: job.lease.token });
    assert.equal(ack.status, 200);
    return id;
  };
  const brief = await finish("brief");
  const plain = await finish("plain");
  const deadId = await enqueue(server, "brief", { payload: 2 });
  const held = await leaseOne(server, "brief");
  await server.request("POST", `/v1/jobs/${deadId}/nack`, { token: held.lease.token, dead: true });
  const gone = async (id: number) => (await server.request("GET", `/v1/jobs/${id}`)).status === 404;
  await advanceUntil(server, 60_000, 5, async () => await gone(brief) && await gone(deadId));
  assert.equal((await getJob(server, plain)).state, "done", "the server's hour still holds");
});

Deno.test("queue settings survive a restart of the server", async () => {
  await using tmp = await tempDir("tegami-settings-");
  const clock = new ManualClock();
  {
    await using first = await startTestServer({ dir: tmp.path, clock });
    await put(first, "kept", FULL);
  }
  await using second = await startTestServer({ dir: tmp.path, clock });
  const answer = await second.request("GET", "/v1/queues/kept/settings");
  assert.deepEqual(answer.body, FULL);
  const listed = await second.request("GET", "/v1/queues");
  assert.deepEqual(listed.body.queues.map((q: { name: string }) => q.name), ["kept"]);
});
