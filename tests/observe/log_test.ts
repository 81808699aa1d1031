/**
 * Logs: a real server with a capturing logger and a tokens file goes through startup, auth
 * failures, admin actions, a WebSocket cut for a wrong token, 5xx answers and shutdown. Every
 * line must be one JSON object, the events that matter must each have their line, and no token
 * or payload may appear anywhere.
 */

import assert from "node:assert/strict";
import { resolveServeConfig } from "../../lib/config/serve_config.ts";
import { createLogger, describeCause } from "../../lib/observe/log.ts";
import { startServer } from "../../lib/server.ts";
import { send } from "../helpers/test_server.ts";

const ADMIN = "log-admin-token-Zq8w01234567";
const PRODUCER = "log-producer-token-Kx7v0123";
const WRONG = "log-wrong-token-Pp00000000000";
const PAYLOAD = "payload-marker-7f3a9c";
const CHECKPOINT = "checkpoint-marker-2b8e";
const RESULT = "result-marker-c41d";
const NACK_ERROR = "nack-error-marker-90aa";
const SECRETS = [ADMIN, PRODUCER, WRONG, PAYLOAD, CHECKPOINT, RESULT, NACK_ERROR];

// deno-lint-ignore no-explicit-any
type Entry = Record<string, any>;

/**
 * A server on a database in `dir` with a tokens file holding `tokens`, logging JSON lines from
 * debug up into `lines`.
 */
async function startLoggedServer(dir: string, tokens: unknown[], lines: string[]) {
  const tokensFile = `${dir}/tokens.json`;
  await Deno.writeTextFile(tokensFile, JSON.stringify(tokens));
  return await startServer({
    config: {
      ...resolveServeConfig([], {}),
      db: `${dir}/tegami.db`,
      port: 0,
      tokensFile,
      logFormat: "json",
      logLevel: "debug",
    },
    log: createLogger({ level: "debug", format: "json", write: (line) => lines.push(line) }),
    version: "9.9.9",
  });
}

Deno.test("server logs one JSON line per event that matters, never a token or a payload", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-log-test-" });
  const lines: string[] = [];
  const server = await startLoggedServer(dir, [
    { name: "ops", token: ADMIN, scopes: ["admin"] },
    { name: "shop", token: PRODUCER, scopes: ["produce"] },
  ], lines);
  const call = (method: string, path: string, body?: unknown, token = ADMIN) =>
    send(server.url, method, path, body, { authorization: `Bearer ${token}` });
  try {
    // Auth failures: answered, not worth a line each, and never echoing the token.
    assert.equal((await send(server.url, "GET", "/v1/queues")).status, 401);
    assert.equal((await call("GET", "/v1/queues", undefined, WRONG)).status, 401);
    assert.equal((await call("POST", "/v1/queues/a/pause", {}, PRODUCER)).status, 403);

    // Work with user data in every field that can hold it.
    const job = { payload: { note: PAYLOAD } };
    assert.equal((await call("POST", "/v1/queues/a/jobs", job, PRODUCER)).status, 201);
    assert.equal((await call("POST", "/v1/queues/a/jobs", job, PRODUCER)).status, 201);
    const leased = await call("POST", "/v1/queues/a/leases", { max: 2 });
    const [first, second] = leased.body.jobs;
    const held = { token: first.lease.token };
    await call("POST", `/v1/jobs/${first.id}/checkpoint`, { ...held, data: CHECKPOINT });
    await call("POST", `/v1/jobs/${first.id}/nack`, { ...held, error: NACK_ERROR, dead: true });
    await call("POST", `/v1/jobs/${second.id}/ack`, { token: second.lease.token, result: RESULT });
    assert.equal((await call("POST", "/v1/queues/a/dead/requeue", {})).body.requeued, 1);
    await call("POST", "/v1/queues/a/pause", {});
    await call("POST", "/v1/queues/a/resume", {});
    assert.equal((await call("DELETE", `/v1/jobs/${first.id}`)).body.state, "cancelled");

    // A WebSocket that authenticates with a wrong token is cut with 1008.
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v1/ws`);
    await new Promise((resolve) => ws.onopen = resolve);
    const closed = new Promise<number>((resolve) => ws.onclose = (event) => resolve(event.code));
    ws.send(JSON.stringify({ op: "auth", token: WRONG }));
    assert.equal(await closed, 1008);

    // 5xx: the store is closed underneath the server, so every write is refused.
    await server.store.close();
    const refused = await call("POST", "/v1/queues/a/jobs", job, PRODUCER);
    assert.equal(refused.status, 503);
    assert.equal((await send(server.url, "GET", "/readyz")).status, 503);
  } finally {
    await server.close();
  }

  const entries: Entry[] = lines.map((line) => {
    assert.ok(!line.includes("\n"), `one line: ${line}`);
    const entry = JSON.parse(line);
    assert.match(entry.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(["debug", "info", "warn", "error"].includes(entry.level), line);
    assert.equal(typeof entry.msg, "string");
    return entry;
  });
  for (const line of lines) {
    for (const secret of SECRETS) assert.ok(!line.includes(secret), `leaks ${secret}: ${line}`);
  }
  const find = (msg: string) => {
    const found = entries.filter((e) => e.msg === msg);
    assert.equal(found.length, 1, `one "${msg}" line in:\n${lines.join("\n")}`);
    return found[0];
  };

  const started = find("tegami started");
  assert.equal(started.level, "info");
  assert.equal(started.version, "9.9.9");
  assert.equal(started.url, server.url);
  assert.equal(started.db, `${dir}/tegami.db`);
  assert.equal(started.sync, "full");
  assert.equal(started.auth, "2 tokens");
  assert.match(started.engine, /^SQLite \d+\.\d+/);

  assert.deepEqual(pick(find("Dead letters requeued"), ["level", "queue", "requeued", "by"]), {
    level: "info",
    queue: "a",
    requeued: 1,
    by: "ops",
  });
  assert.deepEqual(pick(find("Queue paused"), ["queue", "by"]), { queue: "a", by: "ops" });
  assert.deepEqual(pick(find("Queue resumed"), ["queue", "by"]), { queue: "a", by: "ops" });
  assert.deepEqual(pick(find("Job cancelled"), ["id", "queue"]), { id: 1, queue: "a" });

  const cut = find("WebSocket connection closed by the server");
  assert.deepEqual(pick(cut, ["level", "code", "reason"]), {
    level: "warn",
    code: 1008,
    reason: "authentication failed",
  });

  const failures = entries.filter((e) => e.msg === "Request failed");
  assert.deepEqual(failures.map((e) => [e.level, e.method, e.path, e.code]), [
    ["error", "POST", "/v1/queues/a/jobs", "unavailable"],
    ["error", "GET", "/readyz", "unavailable"],
  ]);
  for (const failure of failures) assert.match(failure.cause, /store is closed/);

  assert.equal(find("tegami stopping: no new requests, answering those in flight").level, "info");
  assert.equal(find("tegami stopped: database closed cleanly").level, "info");
  assert.deepEqual(entries.filter((e) => e.status === 401 || e.status === 403), []);
  await Deno.remove(dir, { recursive: true });
});

function pick(entry: Entry, keys: string[]): Entry {
  return Object.fromEntries(keys.map((k) => [k, entry[k]]));
}

Deno.test("createLogger() pretty format writes one line with quoted fields and redacts secrets", () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "info",
    write: (line) => lines.push(line),
    now: () => Date.UTC(2025, 0, 2, 3, 4, 5, 6),
  });
  log.debug("hidden below the level");
  log.info("Queue paused\nINFO forged entry", {
    queue: "billing.eu",
    by: "ops team",
    token: "abc",
    Payload: "{}",
    n: 3,
    skipped: undefined,
  });
  assert.deepEqual(lines, [
    '2025-01-02T03:04:05.006Z INFO  Queue paused INFO forged entry queue=billing.eu by="ops team" ' +
    "token=[redacted] Payload=[redacted] n=3",
  ]);
});

Deno.test("createLogger() json format writes parseable lines that keep time, level and msg", () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "warn",
    format: "json",
    write: (line) => lines.push(line),
    now: () => 0,
  });
  log.info("dropped");
  log.warn("Cut", {
    msg: "cannot overwrite",
    level: "debug",
    authorization: "Bearer x",
    code: 1008,
  });
  assert.deepEqual(lines.map((line) => JSON.parse(line)), [
    {
      time: "1970-01-01T00:00:00.000Z",
      level: "warn",
      msg: "Cut",
      authorization: "[redacted]",
      code: 1008,
    },
  ]);
});

Deno.test("describeCause() names an inner error once, not again when the outer message ends with it", () => {
  const inner = new Error("the connection ended before the body was complete");
  const wrapped = new Error(`Cannot read the request body: ${inner.message}`, { cause: inner });
  assert.equal(
    describeCause(wrapped),
    "Error: Cannot read the request body: the connection ended before the body was complete",
  );
  const other = new Error("Cannot commit", { cause: new Error("database or disk is full") });
  assert.equal(describeCause(other), "Error: Cannot commit: database or disk is full");
});

Deno.test("the startup line counts one token in the singular", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-log-test-" });
  const lines: string[] = [];
  const server = await startLoggedServer(
    dir,
    [{ name: "ops", token: ADMIN, scopes: ["admin"] }],
    lines,
  );
  try {
    const started = lines.map((line) => JSON.parse(line)).find((l) => l.msg === "tegami started");
    assert.equal(started?.auth, "1 token");
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
