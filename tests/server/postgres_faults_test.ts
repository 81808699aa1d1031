/**
 * A PostgreSQL-backed server when the database goes away: unreachable at startup (exit 1, one
 * line), lost while serving (503 `unavailable`, `/readyz` false), and back again (writes
 * answered, LISTEN re-established, and what was missed caught up by the poll after the
 * reconnect). The outage is a TCP proxy between the server and PostgreSQL that the test cuts.
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { runProgram } from "../helpers/process_server.ts";
import { startTcpProxy } from "../helpers/tcp_proxy.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const db = await pgTestDatabase();

/** Waits until `check` resolves true, trying every 50 ms for at most `ms`. */
async function eventually(what: string, check: () => Promise<boolean>, ms = 15_000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The URL of the run's database through a proxy on `port`. */
function viaPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.port = String(port);
  return parsed.href;
}

Deno.test({
  name: "serve exits 1 with one line when PostgreSQL is unreachable at startup",
  ignore: db === null,
  fn: async () => {
    await using proxy = startTcpProxy(5432);
    proxy.cut();
    const { code, stderr } = await runProgram([
      "serve",
      "--port",
      "0",
      "--db",
      viaPort(db!.url, proxy.port).replace("postgres@", "postgres:secret@"),
    ]);
    assert.equal(code, 1);
    const lines = stderr.trim().split("\n");
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0], /^tegami: Cannot connect to PostgreSQL at 127\.0\.0\.1:\d+\/pg_test_/);
    assert.ok(!stderr.includes("secret"), "the password was printed");
  },
});

Deno.test({
  name: "a server that loses PostgreSQL answers 503, is not ready, and recovers with LISTEN",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    await using proxy = startTcpProxy(5432);
    const clock = new ManualClock();
    // a reaches PostgreSQL through the proxy and polls only once a minute, so what it hears
    // after the outage comes from LISTEN (or the one catch-up poll after reconnecting).
    await using a = await startTestServer({
      clock,
      config: {
        ...pgServerConfig(db!, schema),
        db: viaPort(db!.url, proxy.port),
        pgPollMs: 60_000,
      },
    });
    await using b = await startTestServer({ clock, config: pgServerConfig(db!, schema) });
    try {
      await using ws = await WsClient.connect(wsUrl(a.url));
      await ws.subscribe("q", 10);
      assert.equal((await a.request("GET", "/readyz")).status, 200);

      proxy.cut();
      const refused = await a.request("POST", "/v1/queues/q/jobs", { payload: 1 });
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, "unavailable");
      assert.equal((await a.request("GET", "/readyz")).status, 503);
      const read = await a.request("GET", "/v1/jobs/1");
      assert.equal(read.status, 503);
      // Enqueued through b while a cannot hear: a's consumer must get it once a is back.
      const missed = await b.request("POST", "/v1/queues/q/jobs", { payload: "missed" });
      assert.equal(missed.status, 201);

      proxy.restore();
      await eventually(
        "a ready again",
        async () => (await a.request("GET", "/readyz")).status === 200,
      );
      const caughtUp = await ws.nextJob("q", 15_000);
      assert.equal(caughtUp.id, missed.body.id);
      // LISTEN is back: a job through b reaches a's consumer long before a's next poll.
      const heard = await b.request("POST", "/v1/queues/q/jobs", { payload: "heard" });
      assert.equal((await ws.nextJob("q", 10_000)).id, heard.body.id);
      const posted = await a.request("POST", "/v1/queues/q/jobs", { payload: 2 });
      assert.equal(posted.status, 201);
    } finally {
      await a.stop();
      await b.stop();
      await db!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(db);
