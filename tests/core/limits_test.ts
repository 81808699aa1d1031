/**
 * Every limit at limit−1, limit and limit+1 (DESIGN §4, §7): the request body
 * (`--max-body`, with and without a Content-Length), the payload (`--max-payload`, also for ack
 * results and checkpoints, over HTTP and WebSocket), the WebSocket frame (limit = `--max-body`,
 * close 1009), the batch (`--max-batch`, HTTP and WebSocket), prefetch (1–1000), connections
 * (`--max-connections`, the upgrade answered 503), the dedup key (512 bytes of UTF-8), `lease_ms`
 * (100–43 200 000, wherever it is taken), `max_attempts` (1–1000), the lease call's `max` (1–100)
 * and `wait_ms` (0–60 000), and the queue name (128 characters). Ranges are probed at both ends.
 *
 * One table: each row names the limit, the three values, and what each must answer. A failure
 * prints the whole table, expected against actual.
 */

import assert from "node:assert/strict";
import { newJob } from "../helpers/new_job.ts";
import { RawWs, upgradeStatus } from "../helpers/raw_ws.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const MAX_BODY = 2048;
const MAX_PAYLOAD = 1024;
const MAX_BATCH = 5;
const MAX_CONNECTIONS = 3;

/** A row: the limit, the values probed (below, at, above) and each one's expected outcome. */
interface LimitRow {
  limit: string;
  values: [number, number, number];
  expected: [string, string, string];
  probe: (value: number) => Promise<string>;
}

const OK201 = "201";
const OK200 = "200";
const TOO_LARGE = "413 payload_too_large";
const INVALID = "400 validation_failed";
const WS_OK = "ok";
const WS_INVALID = "validation_failed";
const WS_TOO_LARGE = "payload_too_large";

/** Whitespace-padded JSON text of exactly `size` bytes. */
function padded(json: string, size: number): string {
  const bytes = new TextEncoder().encode(json).length;
  assert.ok(bytes <= size, `${json} is over ${size} bytes already`);
  return json + " ".repeat(size - bytes);
}

/** A JSON string literal whose JSON text is exactly `size` bytes. */
function stringOfJsonSize(size: number): string {
  return "x".repeat(size - 2);
}

async function outcome(response: Response): Promise<string> {
  const text = await response.text();
  if (response.status < 300) return String(response.status);
  return `${response.status} ${JSON.parse(text).error.code}`;
}

function post(server: TestServer, path: string, body: BodyInit): Promise<Response> {
  return fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
}

function postJson(server: TestServer, path: string, value: unknown): Promise<string> {
  return post(server, path, JSON.stringify(value)).then(outcome);
}

/** A job leased over HTTP with the broker, for calls that need a live lease token. */
async function leasedJob(server: TestServer): Promise<{ id: number; token: string }> {
  const queue = `l${crypto.randomUUID().slice(0, 8)}`;
  const [job] = await server.server.broker.enqueue(queue, [newJob("1", server.clock.now())]);
  const [delivery] = await server.server.broker.lease(queue, 1, 0, 60_000);
  assert.equal(delivery.job.id, job.id);
  return { id: job.id, token: delivery.lease.token };
}

/** Sends a frame on a fresh socket; answers `ok`, the error code, or `close <code>`. */
async function wsOutcome(server: TestServer, frame: Record<string, unknown>): Promise<string> {
  await using ws = await WsClient.connect(wsUrl(server.url));
  const reply = await ws.request(frame);
  return reply.op === "ok" ? WS_OK : reply.code;
}

function rows(server: TestServer): LimitRow[] {
  const around = (n: number): [number, number, number] => [n - 1, n, n + 1];
  const bothEnds = (
    name: string,
    min: number,
    max: number,
    ok: string,
    bad: string,
    probe: (value: number) => Promise<string>,
  ): LimitRow[] => [
    { limit: `${name} min ${min}`, values: around(min), expected: [bad, ok, ok], probe },
    { limit: `${name} max ${max}`, values: around(max), expected: [ok, ok, bad], probe },
  ];
  const enqueueWith = (field: string) => (value: unknown) =>
    postJson(server, "/v1/queues/q/jobs", { payload: 1, [field]: value });

  return [
    // ---- sizes ----
    {
      limit: `--max-body ${MAX_BODY} (with Content-Length)`,
      values: around(MAX_BODY),
      expected: [OK201, OK201, TOO_LARGE],
      probe: (size) =>
        post(server, "/v1/queues/q/jobs", new TextEncoder().encode(padded('{"payload":1}', size)))
          .then(outcome),
    },
    {
      limit: `--max-body ${MAX_BODY} (chunked, no Content-Length)`,
      values: around(MAX_BODY),
      expected: [OK201, OK201, TOO_LARGE],
      probe: (size) => {
        const bytes = new TextEncoder().encode(padded('{"payload":1}', size));
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            // Two chunks, so the limit is met while reading, not from a header.
            controller.enqueue(bytes.slice(0, 1000));
            controller.enqueue(bytes.slice(1000));
            controller.close();
          },
        });
        return post(server, "/v1/queues/q/jobs", body).then(outcome);
      },
    },
    {
      limit: `--max-payload ${MAX_PAYLOAD} (enqueue)`,
      values: around(MAX_PAYLOAD),
      expected: [OK201, OK201, TOO_LARGE],
      probe: (size) => enqueueWith("payload")(stringOfJsonSize(size)),
    },
    {
      limit: `--max-payload ${MAX_PAYLOAD} (a batch's job)`,
      values: around(MAX_PAYLOAD),
      expected: [OK201, OK201, TOO_LARGE],
      probe: (size) =>
        postJson(server, "/v1/queues/q/jobs", {
          jobs: [{ payload: 1 }, { payload: stringOfJsonSize(size) }],
        }),
    },
    {
      limit: `--max-payload ${MAX_PAYLOAD} (ack result)`,
      values: around(MAX_PAYLOAD),
      expected: [OK200, OK200, TOO_LARGE],
      probe: async (size) => {
        const { id, token } = await leasedJob(server);
        return postJson(server, `/v1/jobs/${id}/ack`, { token, result: stringOfJsonSize(size) });
      },
    },
    {
      limit: `--max-payload ${MAX_PAYLOAD} (checkpoint data)`,
      values: around(MAX_PAYLOAD),
      expected: [OK200, OK200, TOO_LARGE],
      probe: async (size) => {
        const { id, token } = await leasedJob(server);
        return postJson(server, `/v1/jobs/${id}/checkpoint`, {
          token,
          data: stringOfJsonSize(size),
        });
      },
    },
    {
      limit: `--max-payload ${MAX_PAYLOAD} (WebSocket enqueue)`,
      values: around(MAX_PAYLOAD),
      expected: [WS_OK, WS_OK, WS_TOO_LARGE],
      probe: (size) =>
        wsOutcome(server, { op: "enqueue", queue: "q", payload: stringOfJsonSize(size) }),
    },
    {
      limit: `--max-payload ${MAX_PAYLOAD} (WebSocket checkpoint)`,
      values: around(MAX_PAYLOAD),
      expected: [WS_OK, WS_OK, WS_TOO_LARGE],
      probe: async (size) => {
        const { id, token } = await leasedJob(server);
        return wsOutcome(server, { op: "checkpoint", id, token, data: stringOfJsonSize(size) });
      },
    },
    {
      limit: `WebSocket frame = --max-body ${MAX_BODY} bytes`,
      values: around(MAX_BODY),
      expected: [WS_OK, WS_OK, "close 1009"],
      probe: async (size) => {
        await using ws = await RawWs.connect(wsUrl(server.url));
        await ws.send(padded('{"op":"enqueue","ref":1,"queue":"q","payload":1}', size));
        const frame = await ws.readFrame();
        if (frame?.opcode === 0x8) return `close ${(frame.payload[0] << 8) | frame.payload[1]}`;
        const reply = JSON.parse(new TextDecoder().decode(frame!.payload));
        return reply.op === "ok" ? WS_OK : reply.code;
      },
    },
    {
      limit: `WebSocket frame = --max-body ${MAX_BODY} bytes of UTF-8, not characters`,
      values: around(MAX_BODY),
      expected: [WS_OK, WS_OK, "close 1009"],
      probe: async (size) => {
        await using ws = await RawWs.connect(wsUrl(server.url));
        const head = '{"op":"enqueue","ref":1,"queue":"q","payload":"€€€€€€€€€€"}'; // 30 bytes of €
        await ws.send(padded(head, size));
        const frame = await ws.readFrame();
        if (frame?.opcode === 0x8) return `close ${(frame.payload[0] << 8) | frame.payload[1]}`;
        const reply = JSON.parse(new TextDecoder().decode(frame!.payload));
        return reply.op === "ok" ? WS_OK : reply.code;
      },
    },
    // ---- counts ----
    {
      limit: `--max-batch ${MAX_BATCH} (HTTP)`,
      values: around(MAX_BATCH),
      expected: [OK201, OK201, INVALID],
      probe: (n) =>
        postJson(server, "/v1/queues/q/jobs", {
          jobs: Array.from({ length: n }, (_, i) => ({ payload: i })),
        }),
    },
    {
      limit: `--max-batch ${MAX_BATCH} (WebSocket)`,
      values: around(MAX_BATCH),
      expected: [WS_OK, WS_OK, WS_INVALID],
      probe: (n) =>
        wsOutcome(server, {
          op: "enqueue",
          queue: "q",
          jobs: Array.from({ length: n }, (_, i) => ({ payload: i })),
        }),
    },
    {
      limit: "batch min 1",
      values: [0, 1, 2],
      expected: [INVALID, OK201, OK201],
      probe: (n) =>
        postJson(server, "/v1/queues/q/jobs", {
          jobs: Array.from({ length: n }, (_, i) => ({ payload: i })),
        }),
    },
    ...bothEnds(
      "prefetch",
      1,
      1000,
      WS_OK,
      WS_INVALID,
      (prefetch) => wsOutcome(server, { op: "subscribe", queue: "idle", prefetch }),
    ),
    // ---- fixed limits of a job ----
    {
      limit: "key 512 bytes",
      values: around(512),
      expected: [OK201, OK201, INVALID],
      probe: (n) =>
        postJson(server, "/v1/queues/q/jobs", { payload: 1, key: `k${n}-`.padEnd(n, "k") }),
    },
    {
      limit: "key 512 bytes of UTF-8 (€ is 3 bytes)",
      values: around(512),
      expected: [OK201, OK201, INVALID],
      probe: (n) =>
        postJson(server, "/v1/queues/q/jobs", {
          payload: 1,
          key: "€".repeat(168) + `${n}`.padEnd(n - 504, "k"),
        }),
    },
    ...bothEnds("enqueue lease_ms", 100, 43_200_000, OK201, INVALID, enqueueWith("lease_ms")),
    ...bothEnds("max_attempts", 1, 1000, OK201, INVALID, enqueueWith("max_attempts")),
    ...bothEnds(
      "lease call lease_ms",
      100,
      43_200_000,
      OK200,
      INVALID,
      (leaseMs) => postJson(server, "/v1/queues/empty/leases", { lease_ms: leaseMs }),
    ),
    ...bothEnds("extend lease_ms", 100, 43_200_000, OK200, INVALID, async (leaseMs) => {
      const { id, token } = await leasedJob(server);
      return postJson(server, `/v1/jobs/${id}/extend`, { token, lease_ms: leaseMs });
    }),
    ...bothEnds(
      "subscribe lease_ms",
      100,
      43_200_000,
      WS_OK,
      WS_INVALID,
      (leaseMs) => wsOutcome(server, { op: "subscribe", queue: "idle", lease_ms: leaseMs }),
    ),
    ...bothEnds(
      "WebSocket extend lease_ms",
      100,
      43_200_000,
      WS_OK,
      WS_INVALID,
      async (leaseMs) => {
        const { id, token } = await leasedJob(server);
        return wsOutcome(server, { op: "extend", id, token, lease_ms: leaseMs });
      },
    ),
    // ---- the lease call ----
    ...bothEnds(
      "lease call max",
      1,
      100,
      OK200,
      INVALID,
      (max) => postJson(server, "/v1/queues/empty/leases", { max }),
    ),
    ...bothEnds("lease call wait_ms", 0, 60_000, OK200, INVALID, async (waitMs) => {
      // A job is ready, so a valid wait returns at once instead of waiting on the test clock.
      const queue = `w${crypto.randomUUID().slice(0, 8)}`;
      await postJson(server, `/v1/queues/${queue}/jobs`, { payload: 1 });
      return postJson(server, `/v1/queues/${queue}/leases`, { wait_ms: waitMs });
    }),
    // ---- names ----
    {
      limit: "queue name 128 characters (HTTP)",
      values: around(128),
      expected: [OK201, OK201, INVALID],
      probe: (n) => postJson(server, `/v1/queues/${"n".repeat(n)}/jobs`, { payload: 1 }),
    },
    {
      limit: "queue name 128 characters (WebSocket)",
      values: around(128),
      expected: [WS_OK, WS_OK, WS_INVALID],
      probe: (n) => wsOutcome(server, { op: "subscribe", queue: "n".repeat(n), prefetch: 1 }),
    },
  ];
}

Deno.test("every limit answers as documented at limit−1, limit and limit+1", async () => {
  await using server = await startTestServer({
    config: { maxBody: MAX_BODY, maxPayload: MAX_PAYLOAD, maxBatch: MAX_BATCH },
  });
  const expected: string[] = [];
  const actual: string[] = [];
  for (const row of rows(server)) {
    const got: string[] = [];
    for (const value of row.values) got.push(`${value}→${await row.probe(value)}`);
    expected.push(`${row.limit}: ${row.values.map((v, i) => `${v}→${row.expected[i]}`).join(" ")}`);
    actual.push(`${row.limit}: ${got.join(" ")}`);
  }
  if (Deno.env.has("LIMITS_TABLE")) console.log(actual.join("\n"));
  assert.deepEqual(actual, expected);
  assert.deepEqual((await server.request("GET", "/healthz")).body, { status: "ok" });
});

Deno.test("--max-connections counts every connection: past it, upgrades and HTTP get 503", async () => {
  await using server = await startTestServer({ config: { maxConnections: MAX_CONNECTIONS } });
  const url = wsUrl(server.url);
  const open: WsClient[] = [];
  try {
    const got: string[] = [];
    // Connections number limit−1, then limit: each upgrade is taken; past the limit, 503.
    for (let n = 1; n <= MAX_CONNECTIONS + 1; n++) {
      if (n <= MAX_CONNECTIONS) {
        open.push(await WsClient.connect(url));
        got.push(`connection ${n}→101`);
      } else {
        const refused = await upgradeStatus(url);
        got.push(`connection ${n}→${refused.status} ${refused.body?.error?.code}`);
      }
    }
    const expected = Array.from({ length: MAX_CONNECTIONS }, (_, i) => `connection ${i + 1}→101`);
    expected.push(`connection ${MAX_CONNECTIONS + 1}→503 unavailable`);
    assert.deepEqual(got, expected);
    // The sockets at the limit all work; a plain HTTP call past the limit is refused alike.
    for (const ws of open) await ws.subscribe("q", 1);
    const http = await fetch(`${server.url}/healthz`);
    assert.equal(http.status, 503);
    assert.equal(http.headers.get("retry-after"), "1");
    assert.equal((await http.json()).error.code, "unavailable");
  } finally {
    for (const ws of open) await ws.close();
  }
  assert.equal((await server.request("GET", "/healthz")).status, 200, "served once sockets left");
});
