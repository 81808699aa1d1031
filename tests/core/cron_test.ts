/**
 * Cron expressions: what `parseCron` accepts and refuses, `ticksBetween` on long spans, and the
 * vendored croner being the pinned npm release byte for byte.
 */

import assert from "node:assert/strict";
import { checkTimezone, parseCron, ticksBetween } from "../../lib/core/cron.ts";
import { TegamiError } from "../../lib/core/errors.ts";

const ROOT = new URL("../../", import.meta.url);
const T = Date.parse("2026-01-01T00:00:00.000Z");

function refuses(fn: () => unknown, field: string, why: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof TegamiError && error.code === "validation_failed", `${error}`);
    assert.match(error.message, new RegExp(`"${field}"`));
    assert.match(error.message, why);
    return true;
  });
}

Deno.test("vendored croner is the release pinned in deno.json, byte for byte", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  assert.equal(config.imports.croner, "npm:croner@11.0.1");
  for (
    const [vendored, released] of [
      ["croner.js", "dist/croner.js"],
      ["croner.d.ts", "dist/croner.d.ts"],
      ["LICENSE", "LICENSE"],
    ]
  ) {
    const ours = await Deno.readFile(new URL(`lib/core/vendor/croner/${vendored}`, ROOT));
    const theirs = await Deno.readFile(new URL(`node_modules/croner/${released}`, ROOT));
    assert.deepEqual(ours, theirs, `${vendored} differs from the npm release's ${released}`);
  }
  const manifest = JSON.parse(
    await Deno.readTextFile(new URL("node_modules/croner/package.json", ROOT)),
  );
  assert.equal(manifest.version, "11.0.1");
});

Deno.test("parseCron() reads 5 fields, 6 with seconds first, and nicknames", () => {
  assert.equal(parseCron("0 3 * * *", "UTC", T).next(T), Date.parse("2026-01-01T03:00:00.000Z"));
  assert.equal(parseCron("30 0 3 * * *", "UTC", T).next(T), Date.parse("2026-01-01T03:00:30Z"));
  assert.equal(parseCron("@daily", "UTC", T).next(T), Date.parse("2026-01-02T00:00:00.000Z"));
  // 09:00 JST on Thursday 1 January is T itself, and next() is strictly after: Friday's.
  assert.equal(
    parseCron("0 9 * * MON-FRI", "Asia/Tokyo", T).next(T),
    Date.parse("2026-01-02T00:00:00.000Z"),
  );
  // next() is strictly after its argument.
  assert.equal(parseCron("0 3 * * *", "UTC", T).next(T + 3 * 3_600_000), T + 27 * 3_600_000);
});

Deno.test("parseCron() refuses malformed expressions and unknown zones, naming the field", () => {
  refuses(() => parseCron("61 * * * *", "UTC", T), "cron", /minute: 61/);
  refuses(() => parseCron("* * * * * * *", "UTC", T), "cron", /got 7/);
  refuses(() => parseCron("every day", "UTC", T), "cron", /got 2/);
  refuses(() => parseCron("0 0 30 2 *", "UTC", T), "cron", /never matches/);
  refuses(() => parseCron("x".repeat(300), "UTC", T), "cron", /longer than 256/);
  refuses(() => parseCron("* * * * *", "Mars/Olympus", T), "timezone", /unknown time zone/);
  refuses(() => checkTimezone(""), "timezone", /IANA/);
});

Deno.test("ticksBetween() answers the most recent ticks of a long span quickly", () => {
  const everySecond = parseCron("* * * * * *", "UTC", T);
  const year = 365 * 86_400_000;
  const started = performance.now();
  const { ticks, more } = ticksBetween(everySecond, T, T + year, 5);
  assert.ok(
    performance.now() - started < 1000,
    "walked the span instead of going back from its end",
  );
  assert.equal(more, true);
  assert.deepEqual(ticks, [4, 3, 2, 1, 0].map((n) => T + year - n * 1000));
  const few = ticksBetween(everySecond, T, T + 2500, 5);
  assert.deepEqual(few, { ticks: [T + 1000, T + 2000], more: false });
});
