import assert from "node:assert/strict";
import {
  commitsBetween,
  describeFsyncs,
  describeHolds,
  latencyBounds,
  parseCommitBatches,
} from "../../bench/commit_batches.ts";

/** Prometheus text of the two histograms the bench reads, with `fsyncs` cumulative counts. */
function exposition(fsyncs: number[], seconds: number): string {
  const bounds = ["0.0005", "0.001", "0.0025", "0.01", "0.1", "+Inf"];
  return [
    "tegami_commit_batch_size_count 10",
    "tegami_commit_batch_size_sum 100",
    ...bounds.map((le, i) => `tegami_wal_fsync_duration_seconds_bucket{le="${le}"} ${fsyncs[i]}`),
    `tegami_wal_fsync_duration_seconds_sum ${seconds}`,
    `tegami_wal_fsync_duration_seconds_count ${fsyncs.at(-1)}`,
  ].join("\n");
}

Deno.test("the bench reads a workload's WAL fsyncs as bucket bounds between two scrapes", () => {
  const before = parseCommitBatches(exposition([5, 5, 5, 5, 5, 5], 0.002));
  // 100 more: 40 within 0.5 ms, 20 more within 1 ms, 39 within 2.5 ms, one of up to 100 ms.
  const after = parseCommitBatches(exposition([45, 65, 104, 104, 105, 105], 0.152));
  const between = commitsBetween(before, after);
  assert.deepEqual(latencyBounds(between.fsyncs), {
    samples: 100,
    p50Ms: 1,
    p99Ms: 2.5,
    maxMs: 100,
  });
  assert.equal(
    describeFsyncs(latencyBounds(between.fsyncs), between.fsyncSeconds),
    "100 WAL fsyncs, p50 ≤ 1 ms, p99 ≤ 2.5 ms, max ≤ 100 ms (0.15 s in all)",
  );
});

Deno.test("the bench notes no WAL fsyncs for a server without them", () => {
  const none = parseCommitBatches("tegami_commit_batch_size_count 3\n");
  assert.deepEqual(none.fsyncs, []);
  const between = commitsBetween(none, none);
  assert.equal(describeFsyncs(latencyBounds(between.fsyncs), between.fsyncSeconds), null);
});

Deno.test("the bench sums the enqueues the intake gate held over every queue", () => {
  const held = (q: string, counts: number[]) =>
    ["0.001", "0.01", "0.1", "+Inf"].map((le, i) =>
      `tegami_intake_hold_seconds_bucket{queue="${q}",le="${le}"} ${counts[i]}`
    );
  const before = parseCommitBatches([...held("a", [1, 1, 1, 1])].join("\n"));
  const after = parseCommitBatches(
    [...held("a", [1, 3, 4, 4]), ...held("b", [0, 2, 3, 3]), "tegami_intake_hold_seconds_sum 1"]
      .join("\n"),
  );
  // 6 held between the scrapes: 4 within 10 ms, 2 more within 100 ms.
  const holds = latencyBounds(commitsBetween(before, after).holds);
  assert.deepEqual(holds, { samples: 6, p50Ms: 10, p99Ms: 100, maxMs: 100 });
  assert.equal(describeHolds(holds), "6 enqueues held, p50 ≤ 10 ms, max ≤ 100 ms");
  assert.equal(describeHolds(latencyBounds(commitsBetween(before, before).holds)), null);
});
