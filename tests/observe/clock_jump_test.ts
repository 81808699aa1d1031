/** ClockJumpWatch: wall-clock steps are noticed against a monotonic clock, and counted. */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { ClockJumpWatch } from "../../lib/observe/clock_jump.ts";
import { ServerMetrics } from "../../lib/observe/server_metrics.ts";

function setup() {
  const wall = new ManualClock();
  let mono = 0;
  const jumps: number[] = [];
  const metrics = new ServerMetrics();
  const watch = new ClockJumpWatch({
    wall: () => wall.now(),
    monotonic: () => mono,
    thresholdMs: 2000,
    onJump: (delta) => {
      jumps.push(delta);
      metrics.clockJump();
    },
  });
  const tick = (wallMs: number, monoMs: number) => {
    wall.advance(wallMs);
    mono += monoMs;
    return watch.check();
  };
  return { tick, jumps, metrics };
}

const scrape = (metrics: ServerMetrics) =>
  metrics.render({ queues: [], consumers: () => 0, connections: 0, now: 0, files: null });

Deno.test("ClockJumpWatch sees nothing while both clocks move together", () => {
  const { tick, jumps } = setup();
  for (let i = 0; i < 10; i++) assert.equal(tick(1000, 1000), 0);
  assert.equal(tick(1000, 2500), 0, "a slow look (an event-loop stall) is no jump");
  assert.deepEqual(jumps, []);
});

Deno.test("ClockJumpWatch reports a forward jump beyond the threshold, once", () => {
  const { tick, jumps, metrics } = setup();
  assert.equal(tick(1000 + 60_000, 1000), 60_000);
  assert.equal(tick(1000, 1000), 0, "the next look starts from the new time");
  assert.deepEqual(jumps, [60_000]);
  assert.match(scrape(metrics), /^tegami_clock_jumps_total 1$/m);
});

Deno.test("ClockJumpWatch reports a backward jump as negative, and ignores one under 2 s", () => {
  const { tick, jumps } = setup();
  assert.equal(tick(1000 - 1500, 1000), 0, "1.5 s: under the threshold");
  assert.equal(tick(1000 - 30_000, 1000), -30_000);
  assert.deepEqual(jumps, [-30_000]);
});
