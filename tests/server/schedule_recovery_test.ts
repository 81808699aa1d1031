/**
 * Schedules across crashes: a real server process, SIGKILLed again and again while a per-second
 * schedule ticks, enqueues every tick exactly once — none twice (the tick's job is committed
 * with the schedule's move past it), none lost (`missed: "all"` catches up at startup).
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { spawnServer } from "../helpers/process_server.ts";
import { send } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** Waits until the schedule's last tick is past `after`, polling its GET every 50 ms. */
async function tickedPast(url: string, after: number | null): Promise<number> {
  const until = Date.now() + 10_000;
  for (;;) {
    const answer = await send(url, "GET", "/v1/schedules/every-second");
    const last = answer.body.last_tick_at as number | null;
    if (last !== null && (after === null || last > after)) return last;
    if (Date.now() > until) assert.fail(`no tick after ${after} within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test("a SIGKILLed server enqueues each tick of a schedule exactly once across restarts", async () => {
  await using tmp = await tempDir("tegami-schedule-kill-");
  const db = `${tmp.path}/tegami.db`;
  let last: number | null = null;
  for (let cycle = 0; cycle < 4; cycle++) {
    await using server = await spawnServer(["--db", db]);
    if (cycle === 0) {
      const put = await send(server.url, "PUT", "/v1/schedules/every-second", {
        queue: "ticks",
        cron: "* * * * * *",
        missed: "all",
        payload: { cycle },
      });
      assert.equal(put.status, 201);
    }
    last = await tickedPast(server.url, last);
    // Kill at a random point of the next second: before, during or after its tick's commit.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 1000));
    server.kill("SIGKILL");
    await server.exited();
  }
  // A last start catches up the ticks missed during the final kill, then stops cleanly.
  {
    await using server = await spawnServer(["--db", db]);
    last = await tickedPast(server.url, last);
    server.kill("SIGTERM");
    assert.equal((await server.exited()).code, 0);
  }
  const check = new DatabaseSync(db);
  try {
    const rows = check.prepare("SELECT key FROM jobs WHERE queue = 'ticks' ORDER BY key").all() as {
      key: string;
    }[];
    const ticks = rows.map((r) => Date.parse(r.key.slice("schedule:every-second:".length)));
    assert.equal(new Set(ticks).size, ticks.length, "a tick was enqueued twice");
    const schedule = check.prepare("SELECT last_tick_at FROM schedules").get() as {
      last_tick_at: number;
    };
    assert.equal(ticks[ticks.length - 1], schedule.last_tick_at, "the last job is the last tick");
    for (let i = 1; i < ticks.length; i++) {
      assert.equal(ticks[i] - ticks[i - 1], 1000, `a tick is missing after ${ticks[i - 1]}`);
    }
    assert.ok(ticks.length >= 5, `${ticks.length} ticks`);
  } finally {
    check.close();
  }
});
