/**
 * "Tokens never travel in URLs and never appear in logs" (DESIGN §3). A full scenario runs with
 * tokens configured — HTTP and WebSocket, every route and op, good, bad, misplaced and
 * malformed credentials, refused sockets, an oversized frame, a shutdown in the middle of calls —
 * with the log captured at debug level, in both formats. Every line is then searched for every
 * secret: each token, its sha256 digest, its Basic-auth encoding, and every lease token handed
 * out. A planted line shows the search would catch a leak.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ManualClock } from "../../lib/core/clock.ts";
import { resolveServeConfig } from "../../lib/config/serve_config.ts";
import { createLogger, type LogFormat } from "../../lib/observe/log.ts";
import { type RunningServer, startServer } from "../../lib/server.ts";
import { RawWs, upgradeStatus } from "../helpers/raw_ws.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const TOKENS = {
  producer: "log-producer-token-0123456789",
  consumer: "log-consumer-token-0123456789",
  admin: "log-admin-token-0123456789abcd",
  limited: "log-limited-token-0123456789ab",
};
/** Presented but valid for nothing: must not be logged either. */
const WRONG = "log-wrong-token-0123456789abcd";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Everything that must never appear in a log line. */
function secretsOf(leaseTokens: Iterable<string>): string[] {
  const tokens = [...Object.values(TOKENS), WRONG];
  return [
    ...tokens,
    ...tokens.map(sha256),
    ...tokens.map((t) => btoa(`user:${t}`)),
    ...leaseTokens,
  ];
}

/** The lines that contain a secret, with which one. */
function leaks(lines: string[], secrets: string[]): string[] {
  const found: string[] = [];
  for (const line of lines) {
    for (const secret of secrets) {
      if (line.includes(secret)) found.push(`${secret.slice(0, 8)}… in: ${line.slice(0, 300)}`);
    }
  }
  return found;
}

interface Scenario {
  server: RunningServer;
  leaseTokens: Set<string>;
  call(method: string, path: string, body?: unknown, headers?: HeadersInit): Promise<Response>;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function httpScenario(s: Scenario): Promise<void> {
  const { call, leaseTokens } = s;
  const ok = async (response: Promise<Response>, status = 200) => {
    const r = await response;
    const text = await r.text();
    assert.equal(r.status, status, text);
    return r.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text;
  };
  const lease = async (queue: string, token: string) => {
    const body = await ok(call("POST", `/v1/queues/${queue}/leases`, { max: 1 }, bearer(token)));
    const job = body.jobs[0];
    leaseTokens.add(job.lease.token);
    return job;
  };
  // The whole life of jobs, with each scope.
  const id =
    (await ok(call("POST", "/v1/queues/q/jobs", { payload: 1 }, bearer(TOKENS.producer)), 201)).id;
  await ok(
    call(
      "POST",
      "/v1/queues/q/jobs",
      { jobs: [{ payload: 2 }, { payload: 3, key: "k" }] },
      bearer(TOKENS.admin),
    ),
    201,
  );
  let job = await lease("q", TOKENS.consumer);
  assert.equal(job.id, id);
  await ok(
    call(
      "POST",
      `/v1/jobs/${id}/checkpoint`,
      { token: job.lease.token, data: 1 },
      bearer(TOKENS.consumer),
    ),
  );
  await ok(
    call("POST", `/v1/jobs/${id}/extend`, { token: job.lease.token }, bearer(TOKENS.consumer)),
  );
  await ok(
    call(
      "POST",
      `/v1/jobs/${id}/nack`,
      { token: job.lease.token, delay_ms: 0, error: "retry" },
      bearer(TOKENS.consumer),
    ),
  );
  job = await lease("q", TOKENS.admin);
  await ok(
    call(
      "POST",
      `/v1/jobs/${job.id}/ack`,
      { token: job.lease.token, result: 1 },
      bearer(TOKENS.admin),
    ),
  );
  // Repeated ack, stale tokens, a lease token used as a bearer token and the reverse.
  await ok(
    call("POST", `/v1/jobs/${job.id}/ack`, { token: job.lease.token }, bearer(TOKENS.admin)),
  );
  await ok(
    call("POST", `/v1/jobs/${job.id}/nack`, { token: job.lease.token }, bearer(TOKENS.admin)),
    409,
  );
  await ok(
    call("POST", `/v1/jobs/${job.id}/ack`, { token: TOKENS.admin }, bearer(TOKENS.admin)),
    409,
  );
  await ok(call("GET", "/v1/queues", undefined, bearer(job.lease.token)), 401);
  const dead = await lease("q", TOKENS.admin);
  await ok(
    call(
      "POST",
      `/v1/jobs/${dead.id}/nack`,
      { token: dead.lease.token, dead: true },
      bearer(TOKENS.admin),
    ),
  );
  await ok(call("GET", "/v1/queues/q/dead", undefined, bearer(TOKENS.admin)));
  await ok(call("POST", "/v1/queues/q/dead/requeue", {}, bearer(TOKENS.admin)));
  await ok(call("POST", "/v1/queues/q/pause", undefined, bearer(TOKENS.admin)));
  await ok(call("POST", "/v1/queues/q/resume", undefined, bearer(TOKENS.admin)));
  await ok(call("DELETE", `/v1/jobs/${dead.id}`, undefined, bearer(TOKENS.admin)));
  await ok(call("GET", `/v1/jobs/${id}`, undefined, bearer(TOKENS.producer)));
  await ok(call("GET", "/metrics", undefined, bearer(TOKENS.admin)));
  await ok(call("GET", "/v1/queues/q", undefined, bearer(TOKENS.limited)), 403);
  await ok(call("GET", "/metrics", undefined, bearer(TOKENS.limited)), 403);
  await ok(call("DELETE", `/v1/jobs/${id}`, undefined, bearer(TOKENS.producer)), 403);
  const events = await call("GET", "/v1/events", undefined, bearer(TOKENS.consumer));
  await events.body?.cancel();
  // Bad, misplaced and malformed credentials.
  const badHeaders: HeadersInit[] = [
    bearer(WRONG),
    bearer(`${TOKENS.admin}x`),
    { authorization: `Basic ${btoa(`user:${TOKENS.admin}`)}` },
    { authorization: TOKENS.admin },
    { authorization: `Token ${TOKENS.admin}` },
    { "x-api-key": TOKENS.admin },
    { cookie: `token=${TOKENS.admin}` },
    {},
  ];
  for (const headers of badHeaders) {
    await ok(call("POST", "/v1/queues/q/jobs", { payload: 1 }, headers), 401);
  }
  // Tokens where they do not belong: URLs and bodies.
  await ok(call("GET", `/v1/queues?token=${TOKENS.admin}`, undefined, bearer(WRONG)), 401);
  await ok(call("GET", `/v1/queues/${TOKENS.admin}`, undefined, bearer(TOKENS.admin)));
  await ok(call("GET", `/v1/nope/${TOKENS.admin}`, undefined, bearer(TOKENS.admin)), 404);
  await ok(call("GET", `/v1/jobs/${TOKENS.admin}`, undefined, bearer(TOKENS.admin)), 400);
  await ok(
    call("POST", "/v1/queues/q/jobs", { payload: 1, token: TOKENS.admin }, bearer(TOKENS.admin)),
    400,
  );
  await ok(
    call("POST", "/v1/queues/q/jobs", `{"payload":"${TOKENS.admin}`, bearer(TOKENS.admin)),
    400,
  );
  await ok(
    call(
      "POST",
      "/v1/queues/q/jobs",
      { payload: { secret: TOKENS.consumer } },
      bearer(TOKENS.admin),
    ),
    201,
  );
  await ok(call("POST", `/v1/jobs/${id}/ack`, { token: WRONG }, bearer(TOKENS.consumer)), 409);
}

async function wsScenario(s: Scenario): Promise<void> {
  const url = wsUrl(s.server.url);
  {
    await using ws = await WsClient.connect(url, {
      headers: { Authorization: `Bearer ${TOKENS.consumer}` },
    });
    await ws.subscribe("w", 2);
    await using producer = await WsClient.connect(url);
    await producer.ok({ op: "auth", token: TOKENS.producer });
    await producer.ok({ op: "enqueue", queue: "w", payload: { t: TOKENS.producer } });
    await producer.ok({ op: "enqueue", queue: "w", payload: 2 });
    const [a, b] = await ws.jobs(2);
    s.leaseTokens.add(a.lease.token).add(b.lease.token);
    await ws.ok({ op: "checkpoint", id: a.id, token: a.lease.token, data: 1 });
    await ws.ok({ op: "ack", id: a.id, token: a.lease.token });
    assert.equal(
      (await ws.request({ op: "ack", id: a.id, token: b.lease.token })).code,
      "lease_lost",
    );
    assert.equal(
      (await ws.request({ op: "ack", id: b.id, token: TOKENS.consumer })).code,
      "lease_lost",
    );
    assert.equal(
      (await producer.request({ op: "subscribe", queue: "w", prefetch: 1 })).code,
      "forbidden",
    );
    // A second auth frame with a wrong token ends the session (logged as a policy close).
    assert.equal((await producer.request({ op: "auth", token: WRONG })).code, "unauthorized");
    await producer.closedWithin();
    // The consumer goes away holding b: its lease is released.
  }
  for (const header of [`Bearer ${WRONG}`, `Basic ${btoa(`user:${TOKENS.admin}`)}`, TOKENS.admin]) {
    assert.equal((await upgradeStatus(url, { headers: { Authorization: header } })).status, 401);
  }
  assert.equal(
    (await upgradeStatus(`${url}?token=${TOKENS.admin}`, {
      headers: { Authorization: `Bearer ${WRONG}` },
    })).status,
    401,
  );
  {
    await using ws = await WsClient.connect(url);
    assert.equal(
      (await ws.request({ op: "subscribe", queue: "w", prefetch: 1, token: TOKENS.admin })).code,
      "unauthorized",
    );
    await ws.closedWithin();
  }
  {
    await using ws = await WsClient.connect(url);
    assert.equal((await ws.request({ op: "auth", token: WRONG })).code, "unauthorized");
    await ws.closedWithin();
  }
  {
    await using raw = await RawWs.connect(url, {
      headers: { Authorization: `Bearer ${TOKENS.admin}` },
    });
    await raw.send(
      JSON.stringify({ op: "enqueue", queue: "w", payload: TOKENS.admin.repeat(200) }),
    );
    assert.equal((await raw.closed()).code, 1009);
  }
  {
    await using ws = await WsClient.connect(url, {
      headers: { Authorization: `Bearer ${TOKENS.admin}` },
    });
    assert.equal(
      (await ws.request({ op: "frobnicate", token: TOKENS.admin })).code,
      "validation_failed",
    );
    ws.send(`{"op":"auth","token":"${TOKENS.admin}"`);
    assert.equal((await ws.next((f) => f.op === "error")).code, "invalid_json");
  }
}

async function runScenario(
  format: LogFormat,
): Promise<{ lines: string[]; leaseTokens: Set<string> }> {
  const dir = await Deno.makeTempDir({ prefix: "tegami-log-secrets-" });
  const lines: string[] = [];
  try {
    const tokensFile = `${dir}/tokens.json`;
    await Deno.writeTextFile(
      tokensFile,
      JSON.stringify([
        { name: "producer", token: TOKENS.producer, scopes: ["produce"] },
        { name: "consumer", token: TOKENS.consumer, scopes: ["consume"] },
        { name: "admin", sha256: sha256(TOKENS.admin), scopes: ["admin"] },
        { name: "limited", token: TOKENS.limited, scopes: ["admin"], queues: ["x.*"] },
      ]),
    );
    const server = await startServer({
      config: {
        ...resolveServeConfig([], {}),
        db: `${dir}/tegami.db`,
        port: 0,
        tokensFile,
        maxBody: 4096,
        maxPayload: 1024,
      },
      clock: new ManualClock(),
      log: createLogger({ level: "debug", format, write: (line) => lines.push(line) }),
    });
    const leaseTokens = new Set<string>();
    const scenario: Scenario = {
      server,
      leaseTokens,
      call: (method, path, body, headers) => {
        const h = new Headers(headers);
        if (body !== undefined) h.set("content-type", "application/json");
        return fetch(server.url + path, {
          method,
          headers: h,
          body: body === undefined
            ? undefined
            : typeof body === "string"
            ? body
            : JSON.stringify(body),
        });
      },
    };
    try {
      await httpScenario(scenario);
      await wsScenario(scenario);
      // Shutdown with calls in flight: a long-poll waiting, and a body still arriving (503).
      const poll = scenario.call(
        "POST",
        "/v1/queues/empty/leases",
        { wait_ms: 60_000 },
        bearer(TOKENS.consumer),
      );
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      const body = `{"payload":"${TOKENS.producer}"}`;
      const encoder = new TextEncoder();
      await conn.write(encoder.encode(
        `POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKENS.producer}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
          "Expect: 100-continue\r\n\r\n",
      ));
      const buffer = new Uint8Array(4096);
      // The 100 Continue shows the handler is waiting for the body.
      assert.match(new TextDecoder().decode(buffer.subarray(0, (await conn.read(buffer))!)), /100/);
      const closing = server.close();
      await conn.write(encoder.encode(body));
      let answer = "";
      for (let n; (n = await conn.read(buffer).catch(() => null)) !== null;) {
        answer += new TextDecoder().decode(buffer.subarray(0, n));
      }
      conn.close();
      assert.match(answer, /^HTTP\/1\.1 503/);
      assert.equal((await (await poll).json()).jobs.length, 0);
      await closing;
    } finally {
      await server.close();
    }
    return { lines, leaseTokens };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const format of ["json", "pretty"] as const) {
  Deno.test(`no log line of a full run holds a token, a digest or a lease token (${format} log)`, async () => {
    const { lines, leaseTokens } = await runScenario(format);
    assert.ok(leaseTokens.size >= 5, "lease tokens were handed out");
    const text = lines.join("\n");
    // The log did capture the run, including the lines that name callers and failures.
    for (
      const expected of [
        "tegami started",
        "Queue paused",
        "WebSocket connection closed",
        "tegami stopped",
      ]
    ) {
      assert.ok(text.includes(expected), `the log has "${expected}"`);
    }
    if (format === "json") { for (const line of lines) JSON.parse(line); }
    const secrets = secretsOf(leaseTokens);
    assert.deepEqual(leaks(lines, secrets), []);
    // Positive control: the same search finds a planted leak.
    const planted = [...lines, `{"msg":"oops","auth":"Bearer ${TOKENS.consumer}"}`];
    assert.equal(leaks(planted, secrets).length, 1);
  });
}

Deno.test("a tokens file that fails to load names no token in its error", async () => {
  await using tmp = await tempDir("tegami-log-secrets-");
  const dir = tmp.path;
  const files = [
    `[{"name":"a","token":"${TOKENS.admin}","scopes":["admin"],"tokn":"${TOKENS.consumer}"}]`,
    `[{"name":"a","token":"${TOKENS.admin}","scopes":["admin"]},{"name":"b","token":"${TOKENS.admin}","scopes":["admin"]}]`,
    `[{"name":"a","token":"${TOKENS.admin}","scopes":["admin"]}`,
    `[{"name":"a","token":"${TOKENS.admin}","sha256":"${
      sha256(TOKENS.admin)
    }","scopes":["admin"]}]`,
    `[{"name":"a","token":"${TOKENS.admin}","scopes":["${TOKENS.consumer}"]}]`,
    `[{"name":"a","token":" ${TOKENS.admin}","scopes":["admin"]}]`,
  ];
  for (const [i, text] of files.entries()) {
    const tokensFile = `${dir}/tokens${i}.json`;
    await Deno.writeTextFile(tokensFile, text);
    const lines: string[] = [];
    const error = await startServer({
      config: { ...resolveServeConfig([], {}), db: `${dir}/t${i}.db`, port: 0, tokensFile },
      log: createLogger({ level: "debug", format: "json", write: (line) => lines.push(line) }),
    }).then(async (server) => {
      await server.close();
      return null;
    }, (e: Error) => e);
    assert.ok(error !== null, `file ${i} was accepted`);
    assert.deepEqual(leaks([error.message, ...lines], secretsOf([])), [], `file ${i}`);
  }
});
