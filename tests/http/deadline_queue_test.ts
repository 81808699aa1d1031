/**
 * DeadlineQueue: deadlines of one length behind one runtime timer. Each fires once its time has
 * passed, in the order set, unless cancelled; cancelled ones are dropped rather than piling up;
 * and no deadline keeps the process alive.
 */

import assert from "node:assert/strict";
import { DeadlineQueue, deadlinesOf } from "../../lib/http/deadline_queue.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("deadlines fire after their time, in the order set, except the cancelled", async () => {
  const queue = new DeadlineQueue(60);
  const fired: [string, number][] = [];
  const started = performance.now();
  const at = (name: string) => () => fired.push([name, performance.now() - started]);
  queue.set(at("a"));
  const b = queue.set(at("b"));
  await sleep(20);
  queue.set(at("c"));
  b.cancel();
  b.cancel(); // twice is harmless
  assert.equal(queue.pending, 2);
  await sleep(30);
  assert.equal(fired.length, 0, "nothing before its time");
  await sleep(80);
  assert.deepEqual(fired.map(([name]) => name), ["a", "c"]);
  assert.ok(fired[0][1] >= 58, `a fired at ${fired[0][1]} ms`);
  assert.ok(fired[1][1] >= 78, `c fired at ${fired[1][1]} ms`);
  assert.equal(queue.pending, 0);
});

Deno.test("cancelled deadlines are let go, and a pending one does not keep the process alive", async () => {
  const queue = new DeadlineQueue(10_000);
  const deadlines = Array.from({ length: 5 }, () => queue.set(() => assert.fail("cancelled")));
  for (const deadline of deadlines) deadline.cancel();
  assert.equal(queue.pending, 0);
  assert.equal(queue.held, 0);
  // A process whose only work left is a deadline a minute away ends at once.
  const module = new URL("../../lib/http/deadline_queue.ts", import.meta.url).href;
  const script = `import { DeadlineQueue } from "${module}";
    new DeadlineQueue(60_000).set(() => console.log("fired"));
    const cancelled = new DeadlineQueue(60_000).set(() => console.log("fired"));
    cancelled.cancel();`;
  const started = performance.now();
  const { code, stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.equal(code, 0);
  assert.equal(new TextDecoder().decode(stdout), "");
  assert.ok(performance.now() - started < 20_000, "the process waited for a deadline");
});

Deno.test("cancelled deadlines do not pile up behind a long-lived one", async () => {
  const queue = new DeadlineQueue(50);
  let fired = 0;
  queue.set(() => fired++);
  for (let i = 0; i < 20_000; i++) queue.set(() => assert.fail("cancelled")).cancel();
  assert.equal(queue.pending, 1);
  assert.ok(queue.held <= 2 + 1024 + 1, `${queue.held} entries held for one pending`);
  await sleep(100);
  assert.equal(fired, 1);
  assert.equal(queue.held, 0);
});

Deno.test("a deadline set when one fires, and one whose function throws, do not stop the rest", async () => {
  const queue = new DeadlineQueue(20);
  const fired: string[] = [];
  const reported: unknown[] = [];
  const onError = (event: ErrorEvent) => {
    event.preventDefault();
    reported.push(event.error);
  };
  globalThis.addEventListener("error", onError);
  try {
    queue.set(() => {
      fired.push("first");
      queue.set(() => fired.push("later"));
    });
    queue.set(() => {
      throw new Error("boom");
    });
    queue.set(() => fired.push("third"));
    await sleep(80);
  } finally {
    globalThis.removeEventListener("error", onError);
  }
  assert.deepEqual(fired, ["first", "third", "later"]);
  assert.deepEqual(reported.map((e) => (e as Error).message), ["boom"]);
  assert.equal(queue.pending, 0);
});

Deno.test("a deadline cancelled by one that fell due with it is not called", async () => {
  const queue = new DeadlineQueue(20);
  const fired: string[] = [];
  const later: { second?: { cancel(): void } } = {};
  queue.set(() => {
    fired.push("first");
    later.second?.cancel();
  });
  later.second = queue.set(() => fired.push("second"));
  queue.set(() => fired.push("third"));
  await sleep(60);
  assert.deepEqual(fired, ["first", "third"]);
  assert.equal(queue.pending, 0);
});

Deno.test("one queue per length is shared by whoever asks for that length", () => {
  assert.equal(deadlinesOf(1_234), deadlinesOf(1_234));
  assert.notEqual(deadlinesOf(1_234), deadlinesOf(1_235));
});
