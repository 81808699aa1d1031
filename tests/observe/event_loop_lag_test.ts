import assert from "node:assert/strict";
import { EventLoopLag } from "../../lib/observe/event_loop_lag.ts";

/** Keeps the event loop busy for `ms`. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // a synchronous stall, as a long checkpoint or a huge parse would make
  }
}

/** Waits up to `ms` of real time for `check`. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!check() && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
  return check();
}

Deno.test("EventLoopLag reports a synchronous stall as lateness at least its length", async () => {
  const samples: number[] = [];
  const lag = new EventLoopLag((ms) => samples.push(ms), 10);
  lag.start();
  try {
    assert.ok(await until(() => samples.length > 0, 2_000), "no sample");
    assert.ok(samples.every((ms) => ms >= 0));
    const before = samples.length;
    stall(120);
    assert.ok(await until(() => samples.length > before, 2_000), "no sample after the stall");
    // The timer was due at most 10 ms into the stall: it fired at least 110 ms late.
    assert.ok(Math.max(...samples.slice(before)) >= 100, `samples ${samples.slice(before)}`);
  } finally {
    lag.stop();
  }
});

Deno.test("EventLoopLag reports nothing once stopped, and resumes on start()", async () => {
  const samples: number[] = [];
  const lag = new EventLoopLag((ms) => samples.push(ms), 5);
  lag.start();
  lag.start(); // a second start arms no second timer, which stop() would leave running
  assert.ok(await until(() => samples.length >= 2, 2_000));
  lag.stop();
  const stopped = samples.length;
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(samples.length, stopped);
  lag.start();
  try {
    assert.ok(await until(() => samples.length > stopped, 2_000));
  } finally {
    lag.stop();
  }
});
