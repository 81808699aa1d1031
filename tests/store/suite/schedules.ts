/**
 * Schedules: definitions stored and replaced, pause and resume, due schedules and the next
 * deadline, and a tick's job enqueued exactly once with the tick recorded in the same
 * transaction — on two stores of one database as well, when the store is shared.
 *
 * @module
 */

import assert from "node:assert/strict";
import { TegamiError } from "../../../lib/core/errors.ts";
import type { NewJob } from "../../../lib/core/job.ts";
import { type ScheduleDefinition, tickJob, tickKey } from "../../../lib/core/schedule.ts";
import type { ScheduleTick, Store } from "../../../lib/store/store.ts";
import { rejectsWith, type SuiteCases, T0 } from "./fixtures.ts";

/** A definition with the usual defaults, overridden by `fields`. */
function definition(fields: Partial<ScheduleDefinition> = {}): ScheduleDefinition {
  return {
    name: "nightly",
    queue: "reports",
    cron: "0 3 * * *",
    timezone: "Europe/Berlin",
    payload: '{"report":"sales"}',
    priority: 2,
    max_attempts: 3,
    lease_ms: 60_000,
    backoff: { base_ms: 500, max_ms: 10_000 },
    missed: "last",
    ...fields,
  };
}

/** The tick of `at` for a schedule as read, moving it to `next_at`. */
function tickOf(
  s: { name: string; revision: number; next_at: number | null },
  at: number | null,
  next_at: number | null,
): ScheduleTick {
  return { name: s.name, revision: s.revision, due_at: s.next_at!, last_tick_at: at, next_at };
}

async function jobCount(store: Store, queue: string): Promise<number> {
  const [stats] = await store.stats(queue);
  return Object.values(stats.counts).reduce((a, b) => a + b, 0);
}

/** Registers the schedule cases. */
export function scheduleCases({ test, sharedTest }: SuiteCases): void {
  test("putSchedule() stores a definition and getSchedule(), listSchedules() answer it", async (store) => {
    const s = await store.putSchedule(definition(), T0 + 1000, T0);
    assert.deepEqual(s, {
      ...definition(),
      paused: false,
      next_at: T0 + 1000,
      last_tick_at: null,
      last_job_id: null,
      revision: 1,
      created_at: T0,
      updated_at: T0,
    });
    assert.deepEqual(await store.getSchedule("nightly"), s);
    await store.putSchedule(
      definition({ name: "a-first", backoff: null, lease_ms: null }),
      null,
      T0,
    );
    assert.deepEqual((await store.listSchedules()).map((x) => x.name), ["a-first", "nightly"]);
    assert.equal((await store.getSchedule("a-first"))!.backoff, null);
    assert.equal(await store.getSchedule("missing"), null);
  });

  test("listSchedules() lists by name in byte order, whatever the database's collation", async (store) => {
    const names = ["b", "a_b", "A", "a-b", "a:b", "Z9", "0x"];
    for (const name of names) await store.putSchedule(definition({ name }), null, T0);
    assert.deepEqual((await store.listSchedules()).map((x) => x.name), [...names].sort());
  });

  test("putSchedule() replaces a definition, keeping created_at and the last tick", async (store) => {
    const first = await store.putSchedule(definition(), T0 + 1000, T0);
    const [job] = [tickJob(first, T0 + 1000)];
    await store.enqueue("reports", [job], T0 + 1000, tickOf(first, T0 + 1000, T0 + 2000));
    await store.pauseSchedule("nightly", true, T0 + 2000, T0 + 1500);
    const replaced = await store.putSchedule(
      definition({ queue: "other", cron: "*/5 * * * *", missed: "all", payload: "7" }),
      T0 + 9000,
      T0 + 2000,
    );
    assert.equal(replaced.queue, "other");
    assert.equal(replaced.cron, "*/5 * * * *");
    assert.equal(replaced.missed, "all");
    assert.equal(replaced.payload, "7");
    assert.equal(replaced.paused, false, "a new definition starts unpaused");
    assert.equal(replaced.next_at, T0 + 9000);
    assert.equal(replaced.revision, 3);
    assert.equal(replaced.created_at, T0);
    assert.equal(replaced.updated_at, T0 + 2000);
    assert.equal(replaced.last_tick_at, T0 + 1000);
    assert.ok(replaced.last_job_id !== null);
  });

  test("deleteSchedule() removes a schedule and answers false for an unknown one", async (store) => {
    await store.putSchedule(definition(), T0 + 1000, T0);
    assert.equal(await store.deleteSchedule("nightly"), true);
    assert.equal(await store.getSchedule("nightly"), null);
    assert.equal(await store.deleteSchedule("nightly"), false);
    assert.deepEqual(await store.listSchedules(), []);
  });

  test("pauseSchedule() hides a schedule from dueSchedules() and nextScheduleAt()", async (store) => {
    await store.putSchedule(definition({ name: "a" }), T0 + 1000, T0);
    await store.putSchedule(definition({ name: "b" }), T0 + 5000, T0);
    assert.equal(await store.nextScheduleAt(), T0 + 1000);
    const paused = await store.pauseSchedule("a", true, T0 + 1000, T0 + 10);
    assert.equal(paused!.paused, true);
    assert.equal(paused!.revision, 2);
    assert.equal(paused!.updated_at, T0 + 10);
    assert.equal(await store.nextScheduleAt(), T0 + 5000);
    assert.deepEqual((await store.dueSchedules(T0 + 9000, 10)).map((s) => s.name), ["b"]);
    const resumed = await store.pauseSchedule("a", false, T0 + 7000, T0 + 20);
    assert.equal(resumed!.paused, false);
    assert.equal(resumed!.next_at, T0 + 7000);
    assert.equal(await store.pauseSchedule("missing", true, null, T0), null);
  });

  test("dueSchedules() answers unpaused schedules due by now, earliest first, at most limit", async (store) => {
    await store.putSchedule(definition({ name: "late" }), T0 + 3000, T0);
    await store.putSchedule(definition({ name: "early" }), T0 + 1000, T0);
    await store.putSchedule(definition({ name: "never" }), null, T0);
    await store.putSchedule(definition({ name: "future" }), T0 + 60_000, T0);
    assert.deepEqual(await store.dueSchedules(T0 + 999, 10), []);
    assert.deepEqual((await store.dueSchedules(T0 + 3000, 10)).map((s) => s.name), [
      "early",
      "late",
    ]);
    assert.deepEqual((await store.dueSchedules(T0 + 3000, 1)).map((s) => s.name), ["early"]);
    assert.equal(await store.nextScheduleAt(), T0 + 1000);
    await store.deleteSchedule("early");
    await store.deleteSchedule("late");
    await store.deleteSchedule("future");
    assert.equal(await store.nextScheduleAt(), null, "a schedule with no next tick is never due");
  });

  test("enqueue() with a tick stores the job and moves the schedule past it at once", async (store) => {
    const s = await store.putSchedule(definition(), T0 + 1000, T0);
    const [out] = await store.enqueue(
      "reports",
      [tickJob(s, T0 + 1000)],
      T0 + 1005,
      tickOf(s, T0 + 1000, T0 + 2000),
    );
    assert.equal(out.deduplicated, false);
    const job = await store.get(out.id);
    assert.equal(job!.key, tickKey("nightly", T0 + 1000));
    assert.equal(job!.key, "schedule:nightly:2023-11-14T22:13:21.000Z");
    assert.equal(job!.state, "pending");
    assert.equal(job!.payload, '{"report":"sales"}');
    assert.equal(job!.priority, 2);
    assert.equal(job!.max_attempts, 3);
    assert.equal(job!.lease_ms, 60_000);
    assert.deepEqual(job!.backoff, { base_ms: 500, max_ms: 10_000 });
    const after = await store.getSchedule("nightly");
    assert.equal(after!.next_at, T0 + 2000);
    assert.equal(after!.last_tick_at, T0 + 1000);
    assert.equal(after!.last_job_id, out.id);
    assert.equal(after!.revision, s.revision, "a tick is no change of definition");
  });

  test("enqueue() with a tick already taken stores nothing and fails with conflict", async (store) => {
    const s = await store.putSchedule(definition(), T0 + 1000, T0);
    const jobs = [tickJob(s, T0 + 1000)];
    await store.enqueue("reports", jobs, T0 + 1000, tickOf(s, T0 + 1000, T0 + 2000));
    // The same tick again, as a restarted server or a second one would try it; with a job whose
    // key differs, so only the schedule's row can refuse it.
    const other: NewJob = { ...jobs[0], key: "another-key" };
    await rejectsWith(
      store.enqueue("reports", [other], T0 + 1000, tickOf(s, T0 + 1000, T0 + 2000)),
      "conflict",
    );
    assert.equal(await jobCount(store, "reports"), 1);
    assert.equal((await store.getSchedule("nightly"))!.next_at, T0 + 2000);
  });

  test("enqueue() with a tick of a changed, paused or deleted schedule fails with conflict", async (store) => {
    const s = await store.putSchedule(definition(), T0 + 1000, T0);
    const job = () => [tickJob(s, T0 + 1000)];
    await store.putSchedule(definition({ payload: "2" }), T0 + 1000, T0 + 1);
    await rejectsWith(
      store.enqueue("reports", job(), T0 + 1000, tickOf(s, T0 + 1000, T0 + 2000)),
      "conflict",
    );
    const current = (await store.getSchedule("nightly"))!;
    await store.pauseSchedule("nightly", true, T0 + 1000, T0 + 2);
    const paused = (await store.getSchedule("nightly"))!;
    await rejectsWith(
      store.enqueue("reports", job(), T0 + 1000, tickOf(paused, T0 + 1000, T0 + 2000)),
      "conflict",
    );
    await rejectsWith(
      store.enqueue("reports", job(), T0 + 1000, tickOf(current, T0 + 1000, T0 + 2000)),
      "conflict",
    );
    await store.deleteSchedule("nightly");
    await rejectsWith(
      store.enqueue("reports", job(), T0 + 1000, tickOf(paused, T0 + 1000, T0 + 2000)),
      "conflict",
    );
    assert.equal(await jobCount(store, "reports"), 0);
  });

  test("enqueue() with a tick and no jobs only moves the schedule on", async (store) => {
    const s = await store.putSchedule(definition(), T0 + 1000, T0);
    assert.deepEqual(
      await store.enqueue("reports", [], T0 + 90_000, tickOf(s, null, T0 + 99_000)),
      [],
    );
    const after = await store.getSchedule("nightly");
    assert.equal(after!.next_at, T0 + 99_000);
    assert.equal(after!.last_tick_at, null);
    assert.equal(after!.last_job_id, null);
  });

  test("enqueue() with a tick whose job's key is held records the tick with that job", async (store) => {
    const s = await store.putSchedule(definition(), T0 + 1000, T0);
    const [held] = await store.enqueue("reports", [tickJob(s, T0 + 1000)], T0);
    const [out] = await store.enqueue(
      "reports",
      [tickJob(s, T0 + 1000)],
      T0 + 1000,
      tickOf(s, T0 + 1000, T0 + 2000),
    );
    assert.deepEqual([out.id, out.deduplicated], [held.id, true]);
    assert.equal((await store.getSchedule("nightly"))!.last_job_id, held.id);
  });

  test("enqueue() with several ticks stores one job each and records the last", async (store) => {
    const s = await store.putSchedule(definition({ missed: "all" }), T0 + 1000, T0);
    const ticks = [T0 + 1000, T0 + 2000, T0 + 3000];
    const out = await store.enqueue(
      "reports",
      ticks.map((at) => tickJob(s, at)),
      T0 + 3500,
      tickOf(s, T0 + 3000, T0 + 4000),
    );
    assert.equal(out.length, 3);
    const after = await store.getSchedule("nightly");
    assert.equal(after!.last_tick_at, T0 + 3000);
    assert.equal(after!.last_job_id, out[2].id);
    assert.equal(await jobCount(store, "reports"), 3);
  });

  sharedTest("two stores ticking one schedule at once enqueue each tick once", async (a, b) => {
    await a.putSchedule(definition({ cron: "* * * * * *" }), T0 + 1000, T0);
    const TICKS = 60;
    const end = T0 + 1000 * (TICKS + 1);
    let won = 0;
    let lost = 0;
    // Each store runs what a scheduler does: read the due schedule, enqueue its tick.
    const runner = async (store: Store) => {
      for (;;) {
        const [s] = await store.dueSchedules(end, 1);
        if (s === undefined || s.next_at! >= end) return;
        const at = s.next_at!;
        try {
          await store.enqueue("reports", [tickJob(s, at)], at, tickOf(s, at, at + 1000));
          won++;
        } catch (error) {
          if (!(error instanceof TegamiError && error.code === "conflict")) throw error;
          lost++;
        }
      }
    };
    await Promise.all([runner(a), runner(b), runner(a), runner(b)]);
    assert.equal(won, TICKS);
    assert.equal(await jobCount(a, "reports"), TICKS);
    const after = await b.getSchedule("nightly");
    assert.equal(after!.next_at, end);
    assert.equal(after!.last_tick_at, end - 1000);
    assert.ok(lost > 0, "the runners never raced: the case proved nothing");
  });

  test("putSchedule() with a limit refuses a new schedule once that many exist, paused ones too", async (store) => {
    assert.deepEqual(await store.countSchedules(), { active: 0, paused: 0 });
    await store.putSchedule(definition({ name: "a" }), T0 + 1000, T0, 2);
    await store.putSchedule(definition({ name: "b" }), T0 + 1000, T0, 2);
    await store.pauseSchedule("b", true, null, T0);
    assert.deepEqual(await store.countSchedules(), { active: 1, paused: 1 });
    await assert.rejects(
      store.putSchedule(definition({ name: "c" }), T0 + 1000, T0, 2),
      (error: unknown) =>
        error instanceof TegamiError && error.code === "conflict" &&
        /2 schedules is the limit \(--max-schedules\)/.test(error.message),
    );
    assert.equal(await store.getSchedule("c"), null);
    // Replacing one at the limit is no new schedule; without a limit nothing is counted.
    const replaced = await store.putSchedule(definition({ name: "b", priority: 9 }), null, T0, 2);
    assert.equal(replaced.priority, 9);
    await store.putSchedule(definition({ name: "d" }), null, T0);
    assert.deepEqual(await store.countSchedules(), { active: 3, paused: 0 });
    // A deleted one frees its place.
    await store.deleteSchedule("a");
    await store.deleteSchedule("d");
    await store.putSchedule(definition({ name: "c" }), null, T0, 2);
    assert.deepEqual(await store.countSchedules(), { active: 2, paused: 0 });
  });

  sharedTest(
    "two stores creating schedules at once never pass the limit together",
    async (a, b) => {
      const LIMIT = 5;
      const attempts = Array.from({ length: 4 * LIMIT }, (_, i) => i);
      const results = await Promise.allSettled(
        attempts.map((i) =>
          (i % 2 === 0 ? a : b).putSchedule(definition({ name: `s${i}` }), null, T0, LIMIT)
        ),
      );
      const created = results.filter((r) => r.status === "fulfilled").length;
      for (const r of results) {
        if (r.status === "rejected") {
          assert.ok(r.reason instanceof TegamiError && r.reason.code === "conflict", `${r.reason}`);
        }
      }
      assert.equal(created, LIMIT);
      assert.deepEqual(await b.countSchedules(), { active: LIMIT, paused: 0 });
    },
  );
}
