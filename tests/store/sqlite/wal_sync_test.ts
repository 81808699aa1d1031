import assert from "node:assert/strict";
import { TegamiError } from "../../../lib/core/errors.ts";
import { WalSync } from "../../../lib/store/sqlite/wal_sync.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

Deno.test("WalSync.durable() resolves at once when nothing was committed", async () => {
  const sync = new WalSync("/nonexistent/never-opened");
  await sync.durable();
  assert.equal(sync.syncs, 0);
});

Deno.test("WalSync shares one fsync among commits made before it started", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = `${dir}/x-wal`;
  await Deno.writeTextFile(path, "frames");
  const heard: number[] = [];
  const sync = new WalSync(path, (ms) => heard.push(ms));
  for (let i = 0; i < 10; i++) sync.committed();
  await Promise.all(Array.from({ length: 10 }, () => sync.durable()));
  assert.equal(sync.syncs, 1);
  sync.committed();
  const later = sync.durable();
  assert.ok(sync.busy);
  await later;
  assert.equal(sync.syncs, 2);
  // Each fsync's duration is heard once, before its waiters are answered.
  assert.equal(heard.length, 2);
  assert.ok(heard.every((ms) => ms >= 0 && ms < 5000), `durations ${heard}`);
  await sync.close();
});

Deno.test("WalSync rejects waiters with unavailable when the fsync fails, and every write after", async () => {
  const heard: number[] = [];
  const sync = new WalSync("/nonexistent/dir/x-wal", (ms) => heard.push(ms));
  sync.committed();
  await assert.rejects(sync.durable(), (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "unavailable");
    return true;
  });
  assert.ok(sync.failure !== null);
  sync.committed();
  await assert.rejects(sync.durable(), /no more writes until it is restarted/);
  assert.deepEqual(heard, [], "a failed fsync is not timed");
});

Deno.test("WalSync: what is asked for while a sync's waiters hear waits behind what was queued", async () => {
  await using tmp = await tempDir();
  const path = `${tmp.path}/x-wal`;
  await Deno.writeTextFile(path, "frames");
  const sync = new WalSync(path);
  const events: string[] = [];
  sync.committed();
  let busyWhileAnswered = false;
  const answered = sync.durable().then(() => {
    busyWhileAnswered = sync.busy;
    // A write that follows from an answer (a push's ack, say) asks for its commit now.
    sync.whenIdle(() => events.push("asked while answered"));
  });
  sync.whenIdle(() => events.push("queued during the sync"));
  await answered;
  assert.equal(busyWhileAnswered, true, "idle with a callback still to run");
  await new Promise<void>((resolve) => sync.whenIdle(resolve));
  assert.deepEqual(events, ["queued during the sync", "asked while answered"]);
  await sync.close();
});

Deno.test("WalSync.whenIdle() runs at once without a sync, else after the running sync's waiters hear", async () => {
  await using tmp = await tempDir();
  const dir = tmp.path;
  const path = `${dir}/x-wal`;
  await Deno.writeTextFile(path, "frames");
  const sync = new WalSync(path);
  const events: string[] = [];
  await new Promise<void>((resolve) => sync.whenIdle(resolve));

  sync.committed();
  const durable = sync.durable().then(() => events.push("durable"));
  const idle = new Promise<void>((resolve) =>
    sync.whenIdle(() => {
      events.push(`idle after ${sync.syncs} sync`);
      sync.committed(); // a commit made now needs the next fsync
      resolve();
    })
  );
  assert.deepEqual(events, [], "nothing runs while the fsync is in flight");
  await durable;
  // The waiters hear first (their answers and pushes go out), then the next commit runs.
  assert.deepEqual(events, ["durable"]);
  await idle;
  assert.deepEqual(events, ["durable", "idle after 1 sync"]);
  await sync.durable();
  assert.equal(sync.syncs, 2, "the commit made when idle got an fsync of its own");

  // Right after them, in the same turn of the event loop: no timer between (Deno's zero timer
  // fires 1–2 ms later, and the disk would wait that long at every commit).
  const gaps: number[] = [];
  for (let i = 0; i < 21; i++) {
    sync.committed();
    let heardAt = 0;
    const heard = sync.durable().then(() => heardAt = performance.now());
    const idleAt = await new Promise<number>((resolve) =>
      sync.whenIdle(() => resolve(performance.now()))
    );
    await heard;
    gaps.push(idleAt - heardAt);
  }
  gaps.sort((a, b) => a - b);
  assert.ok(gaps[10] < 0.5, `median ${gaps[10].toFixed(3)} ms from the answers to the next commit`);

  await sync.close();
});
