import assert from "node:assert/strict";
import { TegamiClient } from "../../lib/client/mod.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import { startTestServer } from "../helpers/test_server.ts";

const START = Date.parse("2026-06-01T00:00:00.000Z");

Deno.test("TegamiClient defines, reads, pauses, resumes and deletes schedules", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  const client = new TegamiClient({ url: server.url });
  const created = await client.putSchedule("digest", {
    queue: "mail",
    cron: "0 8 * * *",
    timezone: "America/New_York",
    missed: "none",
    payload: { kind: "digest" },
    priority: 5,
    maxAttempts: 3,
    leaseMs: 60_000,
    backoff: { baseMs: 1000, maxMs: 60_000 },
  });
  assert.equal(created.name, "digest");
  assert.equal(created.next_tick_at, Date.parse("2026-06-01T12:00:00.000Z"), "08:00 EDT");
  assert.deepEqual(created.backoff, { base_ms: 1000, max_ms: 60_000 });
  assert.equal(created.max_attempts, 3);
  assert.equal(created.missed, "none");
  assert.deepEqual((await client.getSchedule<{ kind: string }>("digest")).payload, {
    kind: "digest",
  });
  assert.deepEqual((await client.schedules()).map((s) => s.name), ["digest"]);
  assert.equal((await client.pauseSchedule("digest")).paused, true);
  assert.equal((await client.resumeSchedule("digest")).paused, false);
  assert.deepEqual(await client.deleteSchedule("digest"), { name: "digest", deleted: true });
  await assert.rejects(client.getSchedule("digest"), { code: "not_found" });
  await assert.rejects(
    client.putSchedule("bad", { queue: "q", cron: "0 25 * * *", payload: 1 }),
    (error: Error & { code?: string }) =>
      error.code === "validation_failed" && /"cron"/.test(error.message),
  );
});
