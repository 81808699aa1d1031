import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { runProgram } from "../helpers/process_server.ts";
import { startTestServer } from "../helpers/test_server.ts";

const START = Date.parse("2026-01-01T00:00:00.000Z");

Deno.test("tegami schedule put, list, get, pause, resume and delete a schedule", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  const env = { TEGAMI_URL: server.url };
  const put = await runProgram([
    "schedule",
    "put",
    "nightly",
    "--queue",
    "reports",
    "--cron",
    "0 3 * * *",
    "--timezone",
    "Europe/Berlin",
    "--payload",
    '{"report":"sales"}',
    "--missed",
    "all",
    "--priority",
    "2",
    "--lease",
    "1m",
  ], { env });
  assert.equal(put.code, 0, put.stderr);
  const created = JSON.parse(put.stdout);
  assert.equal(created.next_tick_at, Date.parse("2026-01-01T02:00:00.000Z"), "03:00 CET");
  assert.equal(created.lease_ms, 60_000);
  assert.deepEqual(created.payload, { report: "sales" });
  const list = await runProgram(["schedule", "list"], { env });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^name +queue +cron +timezone +next tick +last tick\n/);
  assert.match(
    list.stdout,
    /nightly +reports +0 3 \* \* \* +Europe\/Berlin +2026-01-01T02:00:00.000Z +-/,
  );
  const json = await runProgram(["schedule", "list", "--json"], { env });
  assert.equal(JSON.parse(json.stdout).schedules[0].name, "nightly");
  const got = await runProgram(["schedule", "get", "nightly"], { env });
  assert.equal(JSON.parse(got.stdout).missed, "all");
  const paused = await runProgram(["schedule", "pause", "nightly"], { env });
  assert.equal(paused.stdout, "paused schedule nightly\n");
  assert.match((await runProgram(["schedule", "list"], { env })).stdout, /nightly \(paused\)/);
  const resumed = await runProgram(["schedule", "resume", "nightly"], { env });
  assert.equal(resumed.stdout, "resumed schedule nightly: next tick 2026-01-01T02:00:00.000Z\n");
  const deleted = await runProgram(["schedule", "delete", "nightly"], { env });
  assert.equal(deleted.stdout, "deleted schedule nightly\n");
  const missing = await runProgram(["schedule", "get", "nightly"], { env });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /not_found: Cannot find schedule "nightly"/);
});

Deno.test("tegami schedule explains bad input: usage exits 2, the server's refusal 1", async () => {
  await using server = await startTestServer({ clock: new ManualClock(START) });
  const env = { TEGAMI_URL: server.url };
  const none = await runProgram(["schedule"], { env });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /expected one of put, list, get, delete, pause, resume/);
  const noCron = await runProgram(["schedule", "put", "s", "--queue", "q"], { env });
  assert.equal(noCron.code, 2);
  assert.match(noCron.stderr, /put needs --cron/);
  const badJson = await runProgram(
    ["schedule", "put", "s", "--queue", "q", "--cron", "* * * * *", "--payload", "{"],
    { env },
  );
  assert.equal(badJson.code, 2);
  assert.match(badJson.stderr, /--payload is not valid JSON/);
  const badZone = await runProgram(
    ["schedule", "put", "s", "--queue", "q", "--cron", "* * * * *", "--timezone", "Nowhere/X"],
    { env },
  );
  assert.equal(badZone.code, 1);
  assert.match(badZone.stderr, /validation_failed: Invalid "timezone": unknown time zone/);
});

Deno.test("tegami schedule --help teaches the cron syntax, time zones and missed policies", async () => {
  const help = await runProgram(["schedule", "--help"]);
  assert.equal(help.code, 0);
  for (
    const text of [
      "put NAME",
      "--cron EXPR",
      "--timezone TZ",
      "--missed",
      "Daylight-saving",
      "day of week",
      "TEGAMI_URL",
      "Examples:",
    ]
  ) {
    assert.ok(help.stdout.includes(text), `help mentions ${text}`);
  }
  const top = await runProgram(["--help"]);
  assert.match(top.stdout, /schedule put NAME/);
});
