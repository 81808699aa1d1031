/**
 * `/healthz` (the process answers) and `/readyz` (the database takes a write and the server is
 * not shutting down), over real HTTP.
 *
 * To make the database refuse writes honestly, a second SQLite connection — what an operator's
 * `sqlite3 tegami.db` session does with `BEGIN IMMEDIATE` — takes the database's write lock.
 * The server's readiness probe then runs a real write that waits out its busy timeout (5 s) and
 * fails with `SQLITE_BUSY`, exactly as it would against a locked, full or read-only database.
 * That wait makes this the slowest test here; it is the price of not faking the failure.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { systemClock } from "../../lib/core/clock.ts";
import { createApi } from "../../lib/http/api.ts";
import { toResponse } from "../../lib/http/respond.ts";
import { silentLogger } from "../../lib/observe/log.ts";
import { startTestServer } from "../helpers/test_server.ts";

Deno.test("/healthz answers 200 without a token, even with auth on", async () => {
  await using server = await startTestServer({
    tokens: [{ name: "ops", token: "health-admin-token-0123456789", scopes: ["admin"] }],
  });
  const health = await server.request("GET", "/healthz");
  assert.equal(health.status, 200);
  assert.deepEqual(health.body, { status: "ok" });
  const ready = await server.request("GET", "/readyz");
  assert.equal(ready.status, 200);
  assert.deepEqual(ready.body, { status: "ready" });
});

Deno.test("/readyz answers 503 while the database refuses writes, and 200 once it takes them again", async () => {
  await using server = await startTestServer();
  assert.equal((await server.request("GET", "/readyz")).status, 200);

  const intruder = new DatabaseSync(server.dbPath);
  try {
    intruder.exec("PRAGMA busy_timeout = 0");
    intruder.exec("BEGIN IMMEDIATE"); // holds the write lock until ROLLBACK
    const refused = await server.request("GET", "/readyz");
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "unavailable");
    assert.match(refused.body.error.message, /database does not take writes/);
    // Liveness is not readiness: the process still answers.
    assert.equal((await server.request("GET", "/healthz")).status, 200);
    intruder.exec("ROLLBACK");
  } finally {
    intruder.close();
  }
  assert.equal((await server.request("GET", "/readyz")).status, 200);
});

Deno.test("createApi's /readyz answers 503 once it is told the server no longer accepts", async () => {
  await using server = await startTestServer();
  const api = createApi({
    broker: server.server.broker,
    clock: systemClock,
    tokens: null,
    log: silentLogger,
    limits: { maxPayload: 1 << 20, maxBatch: 1000, maxBody: 1 << 24 },
    accepting: () => false,
    metrics: () => Promise.resolve(""),
    dashboard: [],
  });
  const answer = toResponse(await api(new Request("http://127.0.0.1/readyz")));
  assert.equal(answer.status, 503);
  assert.equal((await answer.json()).error.message, "Not ready: the server is shutting down");
  assert.equal((await api(new Request("http://127.0.0.1/healthz"))).status, 200);
});
