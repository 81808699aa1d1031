import assert from "node:assert/strict";
import { tempDir } from "../../helpers/temp_dir.ts";
import { CHECKPOINT_PAGES, hostLoss, lastWindow } from "./host_loss.ts";
import { requireLitestream, skipLitestream } from "./litestream.ts";

const ignore = skipLitestream();

// Litestream's defaults: the monitor reads the WAL every second, the replica takes it every
// second. A write acknowledged longer ago than both, plus a margin for the copy, must survive.
const MONITOR_MS = 1000;
const SYNC_MS = 1000;
const MARGIN_MS = 1000;
const WINDOW_MS = MONITOR_MS + SYNC_MS + MARGIN_MS;

Deno.test({
  name: "litestream restores every write acknowledged before its last sync after a host loss",
  ignore,
  async fn() {
    requireLitestream();
    await using dir = await tempDir("tegami-litestream-");
    // The load runs until the WAL has passed tegami's auto-checkpoint threshold (twice over), so
    // the restore is taken with tegami's checkpoints running; padding makes each job write more.
    const result = await hostLoss({
      dir: dir.path,
      loadMs: 4500,
      minWalFrames: 2 * CHECKPOINT_PAGES,
      padding: 2048,
      resume: WINDOW_MS,
    });
    const tail = lastWindow(result.writes, WINDOW_MS);
    console.log(
      `acknowledged ${result.acknowledged} writes; lost ${result.lost.length}, ` +
        `all in the last ${result.lossWindowMs.toFixed(0)} ms before the loss ` +
        `(${tail.length} acknowledged in the last ${WINDOW_MS} ms); newest kept ` +
        `${result.newestKeptAgeMs.toFixed(0)} ms before it; WAL peak ${result.peakWalFrames} ` +
        `frames; generations ${result.generations}; restored ${JSON.stringify(result.states)}; ` +
        `new id ${result.newId} (largest acknowledged before the loss ${result.maxAckedId})`,
    );

    // Every request before the loss was answered: Litestream's locks made no write fail.
    assert.deepEqual(result.failures, []);
    assert.deepEqual(result.serverErrors, []);
    assert.ok(result.acknowledged > 200, `only ${result.acknowledged} writes were acknowledged`);
    assert.ok(
      result.peakWalFrames > CHECKPOINT_PAGES,
      `the WAL peaked at ${result.peakWalFrames} frames, under tegami's checkpoint threshold`,
    );
    // Nothing acknowledged before the window is missing.
    const old = result.lost.filter((write) => write.at <= -WINDOW_MS);
    assert.deepEqual(old, [], "writes acknowledged long before the loss are missing");
    // The restore is a sound tegami database, and a server serves it.
    assert.equal(result.verify.code, 0, result.verify.stderr);
    assert.match(result.verify.stdout, /: ok\n/);
    assert.match(result.verify.stdout, /integrity\s+ok/);
    assert.deepEqual(result.tables.filter((name) => name.startsWith("_litestream")), [
      "_litestream_lock",
      "_litestream_seq",
    ]);
    for (const [state, n] of Object.entries(result.states)) {
      assert.equal(result.servedCounts[state], n, `the server counts ${state} jobs differently`);
    }
    assert.ok(result.newId > result.maxId, "a new job took an id the restored file holds");
    // It leases and acks the pending jobs it restored and the one enqueued since.
    assert.equal(result.servedAcks.length, (result.states.pending ?? 0) + 1);
    assert.ok(result.servedAcks.every((status) => status === 200), `${result.servedAcks}`);
    // Litestream started again on the restore replicates it as a new generation: a second host
    // loss after both intervals and a margin loses nothing the restored server acknowledged.
    assert.deepEqual(result.resumed, {
      writes: result.servedAcks.length + 1,
      lost: 0,
      generations: 2,
    });
    assert.equal(result.generations, 1, result.litestreamLog);
  },
});
