/**
 * The bench's summary of a V8 CPU profile (`bench/cpu_profile.ts`): time by kind and by folder of
 * `lib/`, a workload's phase after a named function, and busy time as µs per job, on a profile
 * written by hand.
 */

import assert from "node:assert/strict";
import { perJob, summarise } from "../../bench/cpu_profile.ts";

const LIB = "file:///srv/tegami/lib";

/** root → fill (lib/store) and root → flush (lib/store) → run (SQLite); idle, GC; 1 ms samples. */
const PROFILE = {
  nodes: [
    {
      id: 1,
      callFrame: { functionName: "(root)", url: "", lineNumber: -1 },
      children: [2, 3, 5, 6, 7],
    },
    {
      id: 2,
      callFrame: {
        functionName: "#insertAll",
        url: `${LIB}/store/sqlite/sqlite_store.ts`,
        lineNumber: 9,
      },
    },
    {
      id: 3,
      callFrame: { functionName: "flush", url: `${LIB}/store/group_commit.ts`, lineNumber: 118 },
      children: [4],
    },
    { id: 4, callFrame: { functionName: "run", url: "", lineNumber: -1 } },
    { id: 5, callFrame: { functionName: "(idle)", url: "", lineNumber: -1 } },
    { id: 6, callFrame: { functionName: "(garbage collector)", url: "", lineNumber: -1 } },
    {
      id: 7,
      callFrame: { functionName: "decodeFrame", url: `${LIB}/ws/protocol.ts`, lineNumber: 92 },
    },
  ],
  // The fill's two samples come first; the workload's after them.
  samples: [2, 2, 4, 4, 4, 3, 7, 6, 5, 5],
  timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
};

Deno.test("summarise() splits tegami's own JavaScript by folder and can skip a fill", () => {
  const whole = summarise(PROFILE);
  assert.equal(whole.totalUs, 10_000);
  assert.equal(whole.categories.get("lib/ JavaScript"), 4_000);
  assert.equal(whole.folders.get("lib/store/ JavaScript"), 3_000);
  assert.equal(whole.folders.get("lib/ws/ JavaScript"), 1_000);
  assert.equal(whole.folders.get("SQLite statements"), 3_000);
  assert.equal(whole.inclusive.get("flush store/group_commit.ts:119"), 4_000);

  const after = summarise(PROFILE, { after: "#insertAll" });
  assert.equal(after.totalUs, 8_000);
  assert.equal(after.folders.get("lib/store/ JavaScript"), 1_000);
  assert.equal(after.folders.get("idle"), 2_000);
});

Deno.test("perJob() scales the busy time by kind to the main thread's CPU per job", () => {
  const after = summarise(PROFILE, { after: "#insertAll" });
  // 0.6 cores at 10 000 jobs/s: 60 µs of busy CPU per job, over 6 busy samples of 1 ms.
  const us = perJob(after, 0.6, 10_000);
  assert.equal(us.has("idle"), false);
  assert.equal(Math.round(us.get("SQLite statements")!), 30);
  assert.equal(Math.round(us.get("lib/store/ JavaScript")!), 10);
  assert.equal(Math.round(us.get("lib/ws/ JavaScript")!), 10);
  assert.equal(Math.round(us.get("V8 garbage collection")!), 10);
  const total = [...us.values()].reduce((a, b) => a + b, 0);
  assert.equal(Math.round(total), 60);
});
