/**
 * The scheduler on a real (in-memory SQLite) store, driven by the manual clock: no sleeps, every
 * tick reached by moving the clock. Ticks at their times, wake-ups only at due ticks, the
 * `missed` policies after a stop, pause and resume, daylight-saving changes in Europe/Berlin
 * and America/New_York, validation of cron expressions and time zones.
 */

import assert from "node:assert/strict";
import { Broker } from "../../lib/core/broker.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import { TegamiError } from "../../lib/core/errors.ts";
import type { Job } from "../../lib/core/job.ts";
import {
  MAX_CATCH_UP,
  type MissedPolicy,
  type ScheduleDefinition,
  tickKey,
} from "../../lib/core/schedule.ts";
import { Scheduler } from "../../lib/core/scheduler.ts";
import { SqliteStore } from "../../lib/store/sqlite/sqlite_store.ts";
import type { Store } from "../../lib/store/store.ts";

const POLICY = { defaultLeaseMs: 30_000, retryDelayMs: () => 1000 };

/** A store, a broker and a scheduler on a manual clock; `restart` replaces the latter two. */
class Harness implements AsyncDisposable {
  readonly clock: ManualClock;
  readonly store: Store;
  broker!: Broker;
  scheduler!: Scheduler;
  readonly errors: unknown[] = [];

  constructor(start: string | number) {
    this.clock = new ManualClock(typeof start === "number" ? start : Date.parse(start));
    this.store = SqliteStore.open({ path: ":memory:", policy: POLICY });
  }

  async start(): Promise<void> {
    this.broker = new Broker({ store: this.store, clock: this.clock, retainDoneMs: 1e12 });
    await this.broker.start();
    this.scheduler = new Scheduler({
      store: this.store,
      broker: this.broker,
      clock: this.clock,
      onBackgroundError: (_what, error) => this.errors.push(error),
    });
    await this.scheduler.start();
  }

  /** Stops the scheduler and broker, as a server going down would. */
  stop(): void {
    this.scheduler.close();
    this.broker.close();
  }

  /** Moves the clock to `at` (ISO or ms) and waits for the scheduler's pass. */
  async to(at: string | number): Promise<void> {
    const target = typeof at === "number" ? at : Date.parse(at);
    this.clock.advance(target - this.clock.now());
    // A timer fired during the advance re-arms only once its pass has read the store: let
    // such re-armed timers (due now) fire too, a few rounds.
    for (let i = 0; i < 5; i++) {
      await this.scheduler.idle();
      this.clock.advance(0);
    }
    await this.scheduler.idle();
  }

  /** The jobs of a queue, oldest first. */
  async jobs(queue = "q"): Promise<Job[]> {
    return await this.store.listJobs(queue, {
      state: "pending",
      order: "oldest",
      after: null,
      limit: 1000,
    });
  }

  /** The ticks (as ISO times) whose jobs are in the queue, read back from their keys. */
  async ticks(queue = "q", name = "s"): Promise<string[]> {
    const prefix = `schedule:${name}:`;
    return (await this.jobs(queue)).map((job) => job.key!.slice(prefix.length));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.stop();
    await this.store.close();
  }
}

function definition(fields: Partial<ScheduleDefinition> = {}): ScheduleDefinition {
  return {
    name: "s",
    queue: "q",
    cron: "*/10 * * * * *",
    timezone: "UTC",
    payload: '{"hello":"world"}',
    priority: 0,
    max_attempts: 5,
    lease_ms: null,
    backoff: null,
    missed: "last",
    ...fields,
  };
}

async function refused(promise: Promise<unknown>, field: string, why: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof TegamiError, `expected a TegamiError, got ${error}`);
    assert.equal(error.code, "validation_failed");
    assert.match(error.message, new RegExp(`"${field}"`));
    assert.match(error.message, why);
    return true;
  });
}

Deno.test("Scheduler enqueues one job at each tick, keyed by the schedule and the tick", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  const { schedule, created } = await h.scheduler.put(definition());
  assert.equal(created, true);
  assert.equal(schedule.next_at, Date.parse("2026-01-01T00:00:10.000Z"));
  await h.to("2026-01-01T00:00:09.999Z");
  assert.deepEqual(await h.ticks(), [], "nothing before the tick");
  await h.to("2026-01-01T00:00:10.000Z");
  await h.to("2026-01-01T00:00:20.000Z");
  await h.to("2026-01-01T00:00:30.000Z");
  assert.deepEqual(await h.ticks(), [
    "2026-01-01T00:00:10.000Z",
    "2026-01-01T00:00:20.000Z",
    "2026-01-01T00:00:30.000Z",
  ]);
  const [job] = await h.jobs();
  assert.equal(job.key, tickKey("s", Date.parse("2026-01-01T00:00:10.000Z")));
  assert.equal(job.payload, '{"hello":"world"}');
  const after = await h.scheduler.get("s");
  assert.equal(after.last_tick_at, Date.parse("2026-01-01T00:00:30.000Z"));
  assert.equal(after.last_job_id, (await h.jobs())[2].id);
  assert.equal(after.next_at, Date.parse("2026-01-01T00:00:40.000Z"));
  assert.deepEqual(h.errors, []);
});

Deno.test("Scheduler keeps one timer, set for the earliest next tick", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  const idle = h.clock.pendingTimers;
  await h.scheduler.put(definition({ name: "hourly", cron: "0 * * * *" }));
  await h.scheduler.put(definition({ name: "daily", cron: "0 0 * * *" }));
  await h.scheduler.put(definition({ name: "minutely", cron: "* * * * *" }));
  assert.equal(h.clock.pendingTimers, idle + 1, "one timer for all schedules");
  await h.to("2026-01-01T00:00:59.999Z");
  assert.deepEqual(await h.ticks(), []);
  await h.to("2026-01-01T00:01:00.000Z");
  assert.equal((await h.jobs()).length, 1, "only the minutely tick came due");
  assert.equal(h.clock.pendingTimers, idle + 1);
});

Deno.test("Scheduler with missed: last enqueues only the latest tick missed while stopped", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ missed: "last" }));
  await h.to("2026-01-01T00:00:10.000Z");
  h.stop();
  h.clock.advance(55_000); // down from 00:00:10 to 00:01:05: five ticks missed
  await h.start();
  assert.deepEqual(await h.ticks(), ["2026-01-01T00:00:10.000Z", "2026-01-01T00:01:00.000Z"]);
  assert.equal((await h.scheduler.get("s")).next_at, Date.parse("2026-01-01T00:01:10.000Z"));
});

Deno.test("Scheduler with missed: all enqueues every tick missed while stopped, oldest first", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ missed: "all" }));
  h.stop();
  h.clock.advance(45_000);
  await h.start();
  assert.deepEqual(await h.ticks(), [
    "2026-01-01T00:00:10.000Z",
    "2026-01-01T00:00:20.000Z",
    "2026-01-01T00:00:30.000Z",
    "2026-01-01T00:00:40.000Z",
  ]);
});

Deno.test("Scheduler with missed: all enqueues at most the most recent MAX_CATCH_UP ticks", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ missed: "all", cron: "* * * * * *" }));
  h.stop();
  h.clock.advance(86_400_000); // a day of per-second ticks
  await h.start();
  const ticks = await h.ticks();
  assert.equal(ticks.length, MAX_CATCH_UP);
  assert.equal(ticks[ticks.length - 1], "2026-01-02T00:00:00.000Z");
  assert.equal(ticks[0], new Date(Date.parse("2026-01-02T00:00:00.000Z") - 99_000).toISOString());
});

Deno.test("Scheduler with missed: none skips ticks that came due while stopped", async () => {
  const cases = [["01:30:00", []], ["01:00:05", ["2026-01-01T01:00:00.000Z"]]] as const;
  for (const [restart, expected] of cases) {
    await using h = new Harness("2026-01-01T00:00:00.000Z");
    await h.start();
    await h.scheduler.put(definition({ cron: "0 * * * *", missed: "none" as MissedPolicy }));
    h.stop();
    h.clock.advance(Date.parse(`2026-01-01T${restart}.000Z`) - h.clock.now());
    await h.start();
    // Back at 01:30, the tick of 01:00 is late by more than ON_TIME_MS: skipped. Back at
    // 01:00:05 it is 5 s late, still on time.
    assert.deepEqual(await h.ticks(), [...expected], `restarted at ${restart}`);
    assert.equal((await h.scheduler.get("s")).next_at, Date.parse("2026-01-01T02:00:00.000Z"));
  }
});

Deno.test("Scheduler never enqueues a tick twice across a restart", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ missed: "all" }));
  await h.to("2026-01-01T00:00:10.000Z");
  h.stop();
  await h.start();
  await h.to("2026-01-01T00:00:15.000Z");
  assert.deepEqual(await h.ticks(), ["2026-01-01T00:00:10.000Z"]);
});

Deno.test("Scheduler skips ticks while paused and resumes from now", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ missed: "all" }));
  await h.to("2026-01-01T00:00:10.000Z");
  const paused = await h.scheduler.setPaused("s", true);
  assert.equal(paused.paused, true);
  await h.to("2026-01-01T00:00:30.000Z");
  await h.to("2026-01-01T00:00:45.000Z");
  assert.equal((await h.jobs()).length, 1, "no tick while paused");
  const resumed = await h.scheduler.setPaused("s", false);
  assert.equal(
    resumed.next_at,
    Date.parse("2026-01-01T00:00:50.000Z"),
    "the ticks missed stay missed",
  );
  await h.to("2026-01-01T00:00:50.000Z");
  assert.deepEqual(await h.ticks(), ["2026-01-01T00:00:10.000Z", "2026-01-01T00:00:50.000Z"]);
});

Deno.test("Scheduler applies a replaced definition from its next tick", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition());
  await h.to("2026-01-01T00:00:10.000Z");
  const { schedule, created } = await h.scheduler.put(
    definition({ cron: "0 * * * * *", payload: '"v2"' }),
  );
  assert.equal(created, false);
  assert.equal(schedule.next_at, Date.parse("2026-01-01T00:01:00.000Z"));
  await h.to("2026-01-01T00:00:20.000Z");
  await h.to("2026-01-01T00:01:00.000Z");
  const jobs = await h.jobs();
  assert.deepEqual(jobs.map((j) => j.payload), ['{"hello":"world"}', '"v2"']);
});

Deno.test("Scheduler deletes a schedule: no more ticks, its jobs stay", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition());
  await h.to("2026-01-01T00:00:10.000Z");
  await h.scheduler.delete("s");
  await h.to("2026-01-01T00:00:20.000Z");
  assert.equal((await h.jobs()).length, 1);
  await assert.rejects(h.scheduler.get("s"), /Cannot find schedule "s"/);
  await assert.rejects(h.scheduler.delete("s"), /Cannot find schedule "s"/);
});

Deno.test("Scheduler in Europe/Berlin runs a 02:30 job at 03:00 on the day the clocks skip 02:00–03:00", async () => {
  await using h = new Harness("2026-03-27T12:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ cron: "30 2 * * *", timezone: "Europe/Berlin" }));
  // 02:30 CET = 01:30Z; on 29 March 02:30 does not exist: 03:00 CEST = 01:00Z; then 00:30Z.
  for (
    const at of ["2026-03-28T01:30:00.000Z", "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"]
  ) {
    assert.equal((await h.scheduler.get("s")).next_at, Date.parse(at));
    await h.to(at);
  }
  assert.deepEqual(await h.ticks(), [
    "2026-03-28T01:30:00.000Z",
    "2026-03-29T01:00:00.000Z",
    "2026-03-30T00:30:00.000Z",
  ]);
});

Deno.test("Scheduler in Europe/Berlin runs a 02:30 job once on the day 02:00–03:00 repeats", async () => {
  await using h = new Harness("2026-10-24T12:00:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ cron: "30 2 * * *", timezone: "Europe/Berlin" }));
  await h.to("2026-10-25T00:30:00.000Z"); // 02:30 CEST, the first pass
  await h.to("2026-10-25T01:30:00.000Z"); // 02:30 CET, the second pass: no tick
  await h.to("2026-10-26T01:30:00.000Z");
  assert.deepEqual(await h.ticks(), ["2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]);
});

Deno.test("Scheduler in Europe/Berlin runs a half-hourly job at both passes of the repeated hour", async () => {
  await using h = new Harness("2026-10-24T23:50:00.000Z");
  await h.start();
  await h.scheduler.put(definition({ cron: "*/30 * * * *", timezone: "Europe/Berlin" }));
  for (const at of ["00:00", "00:30", "01:00", "01:30", "02:00"]) {
    await h.to(`2026-10-25T${at}:00.000Z`);
  }
  // 02:00 and 02:30 local come twice (CEST, then CET): four ticks, four distinct keys.
  assert.deepEqual(await h.ticks(), [
    "2026-10-25T00:00:00.000Z",
    "2026-10-25T00:30:00.000Z",
    "2026-10-25T01:00:00.000Z",
    "2026-10-25T01:30:00.000Z",
    "2026-10-25T02:00:00.000Z",
  ]);
});

Deno.test("Scheduler in America/New_York skips the half-hourly ticks of the missing hour", async () => {
  await using h = new Harness("2026-03-08T06:40:00.000Z"); // 01:40 EST
  await h.start();
  await h.scheduler.put(definition({ cron: "*/30 * * * *", timezone: "America/New_York" }));
  // 02:00 and 02:30 EST do not exist on 8 March: 01:30 EST (06:30Z) is followed by 03:00 EDT.
  assert.equal((await h.scheduler.get("s")).next_at, Date.parse("2026-03-08T07:00:00.000Z"));
  await h.to("2026-03-08T07:00:00.000Z");
  await h.to("2026-03-08T07:30:00.000Z");
  assert.deepEqual(await h.ticks(), ["2026-03-08T07:00:00.000Z", "2026-03-08T07:30:00.000Z"]);
});

Deno.test("Scheduler.put() refuses a bad cron expression or time zone, naming the field", async () => {
  await using h = new Harness("2026-01-01T00:00:00.000Z");
  await h.start();
  await refused(h.scheduler.put(definition({ cron: "61 * * * *" })), "cron", /minute: 61/);
  await refused(h.scheduler.put(definition({ cron: "* * *" })), "cron", /expected 5 fields.*got 3/);
  await refused(h.scheduler.put(definition({ cron: "0 0 30 2 *" })), "cron", /never matches/);
  await refused(h.scheduler.put(definition({ timezone: "Mars/Olympus" })), "timezone", /unknown/);
  assert.deepEqual(await h.scheduler.list(), [], "nothing was stored");
});
