/**
 * Three tegami servers on one PostgreSQL schema, in this process, sharing one manual clock:
 * a schedule defined through one is ticked by all three at the same instants, and each tick is
 * enqueued exactly once.
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { createLogger } from "../../lib/observe/log.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { settle, startTestServer } from "../helpers/test_server.ts";

const db = await pgTestDatabase();

/** Waits until `check` resolves true, trying every 20 ms for at most `ms`. */
async function eventually(what: string, check: () => boolean | Promise<boolean>, ms = 5_000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test({
  name: "three servers ticking one schedule at the same instants enqueue each tick once",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    const clock = new ManualClock(Date.parse("2026-01-01T00:00:00.000Z"));
    const config = pgServerConfig(db!, schema);
    // Each server's "Schedule ticked" lines say how many ticks it won; errors would show too.
    const won = [0, 0, 0];
    const errors: string[] = [];
    const logOf = (i: number) =>
      createLogger({
        level: "debug",
        write: (line) => {
          // One line per enqueue, which may carry several ticks (`ticks=N`): a pass that
          // starts late catches up the ticks it finds due, as missed: "all" says.
          if (line.includes("Schedule ticked")) won[i] += Number(/ticks=(\d+)/.exec(line)![1]);
          if (line.includes("ERROR")) errors.push(line);
        },
      });
    await using a = await startTestServer({
      clock,
      config: { ...config, logLevel: "debug" },
      log: logOf(0),
    });
    await using b = await startTestServer({ clock, config, log: logOf(1) });
    await using c = await startTestServer({ clock, config, log: logOf(2) });
    const servers = [a, b, c];
    try {
      const timers = clock.pendingTimers;
      const put = await b.request("PUT", "/v1/schedules/tick", {
        queue: "ticks",
        cron: "* * * * * *",
        missed: "all",
        payload: null,
      });
      assert.equal(put.status, 201);
      // The other two learn of it at their next look at the database and arm their timers.
      await eventually("every server armed a timer", () => clock.pendingTimers >= timers + 3);
      const TICKS = 30;
      for (let i = 0; i < TICKS; i++) {
        clock.advance(1000);
        await Promise.all(servers.map((s) => s.server.scheduler.idle()));
        await settle(2);
      }
      const expected = Date.parse("2026-01-01T00:00:30.000Z");
      await eventually("the last tick recorded", async () => {
        const s = await a.request("GET", "/v1/schedules/tick");
        return s.body.last_tick_at === expected;
      });
      const page = await a.request(
        "GET",
        "/v1/queues/ticks/jobs?state=pending&order=oldest&limit=100",
      );
      const keys = page.body.jobs.map((job: { key: string }) => job.key);
      assert.equal(keys.length, TICKS, `${keys.length} jobs for ${TICKS} ticks`);
      assert.equal(new Set(keys).size, TICKS, "a tick was enqueued twice");
      assert.equal(keys[0], "schedule:tick:2026-01-01T00:00:01.000Z");
      assert.equal(keys[TICKS - 1], "schedule:tick:2026-01-01T00:00:30.000Z");
      assert.equal(won[0] + won[1] + won[2], TICKS, `ticks won per server: ${won}`);
      assert.ok(won.filter((n) => n > 0).length >= 2, `one server won every tick: ${won}`);
      assert.deepEqual(errors, []);
    } finally {
      for (const s of servers) await s.stop();
      await db!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(db);
