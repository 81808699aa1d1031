import assert from "node:assert/strict";
import { ProgressReporter } from "../../lib/client/progress_reporter.ts";

/** A `send` whose calls are recorded and answered by the test. */
function fakeSend() {
  const calls: { value: unknown; resolve: () => void; reject: (e: unknown) => void }[] = [];
  const send = (value: unknown) =>
    new Promise<unknown>((resolve, reject) =>
      calls.push({ value, resolve: () => resolve(undefined), reject })
    );
  return { calls, send };
}

/** Lets pending promise callbacks run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Whether `promise` has settled, and how. */
function watch(promise: Promise<void>): { state: string; error?: unknown } {
  const seen: { state: string; error?: unknown } = { state: "pending" };
  promise.then(() => seen.state = "resolved", (error) => {
    seen.state = "rejected";
    seen.error = error;
  });
  return seen;
}

Deno.test("ProgressReporter sends the first report at once and one at a time after it", async () => {
  const { calls, send } = fakeSend();
  const reporter = new ProgressReporter(send);
  const first = watch(reporter.report(1));
  assert.deepEqual(calls.map((c) => c.value), [1]);
  const second = watch(reporter.report(2));
  const third = watch(reporter.report(3));
  await settle();
  assert.deepEqual(calls.map((c) => c.value), [1], "nothing more while one is in flight");
  calls[0].resolve();
  await settle();
  assert.equal(first.state, "resolved");
  assert.equal(second.state, "pending");
  // The values reported meanwhile replaced each other: only the latest goes.
  assert.deepEqual(calls.map((c) => c.value), [1, 3]);
  calls[1].resolve();
  await settle();
  assert.deepEqual([second.state, third.state], ["resolved", "resolved"]);
  assert.equal(calls.length, 2);
});

Deno.test("ProgressReporter rejects the reports a failed send carried, and goes on", async () => {
  const { calls, send } = fakeSend();
  const reporter = new ProgressReporter(send);
  const first = watch(reporter.report("a"));
  const second = watch(reporter.report("b"));
  const lost = new Error("lease_lost");
  calls[0].reject(lost);
  await settle();
  assert.equal(first.state, "rejected");
  assert.equal(first.error, lost);
  assert.deepEqual(calls.map((c) => c.value), ["a", "b"]);
  calls[1].reject(new Error("later"));
  await settle();
  assert.equal(second.state, "rejected");
  assert.equal((second.error as Error).message, "later");
  // Idle again: the next report is sent at once.
  const third = watch(reporter.report("c"));
  assert.deepEqual(calls.map((c) => c.value), ["a", "b", "c"]);
  calls[2].resolve();
  await settle();
  assert.equal(third.state, "resolved");
});
