/**
 * The SQLite store: the shared behaviour suite on a file in a temp directory, plus what only
 * SQLite has — the one-server lock, WAL, and data surviving a close and reopen.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { ackDeleteRunSql, ackRunSql } from "../../../lib/store/sqlite/sqlite_statements.ts";
import { DEFAULT_PAGE_SIZE, SqliteStore } from "../../../lib/store/sqlite/sqlite_store.ts";
import { GroupCommit } from "../../../lib/store/group_commit.ts";
import { pageSizeOf } from "../../helpers/sqlite_file.ts";
import { GROUP_TRACKING, migrate, MIGRATIONS } from "../../../lib/store/sqlite/sqlite_schema.ts";
import { PendingPage } from "../../../lib/store/sqlite/pending_page.ts";
import { CountedStatement } from "../../../lib/store/sqlite/counted_statement.ts";
import { answerBeforeCommit } from "../../torture/faulty_store.ts";
import {
  assertSweepSkipsKeptJobs,
  exerciseStore,
  HANDED_ALL,
  KEPT_FINISHED_AT,
  newJob,
  queueSettings,
  SUITE_POLICY,
} from "../store_suite.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

const T0 = 1_700_000_000_000;

/** A temp directory with a database path in it, removed on dispose. */
async function tempDb(): Promise<{ dir: string; path: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "tegami_store_" });
  return {
    dir,
    path: `${dir}/tegami.db`,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

exerciseStore("sqlite", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami_store_" });
  const store = SqliteStore.open({ path: `${dir}/tegami.db`, policy: SUITE_POLICY });
  return {
    store,
    async cleanup() {
      await store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}, { capabilities: { shared: false, localFiles: true } });

const job = newJob({ payload: '{"n":1}' });

Deno.test("SqliteStore.open() refuses a file another server is using", async () => {
  await using db = await tempDb();
  const first = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    assert.throws(
      () => SqliteStore.open({ path: db.path, policy: SUITE_POLICY }),
      (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.match(error.message, /another tegami server is using it/);
        assert.ok(error.message.includes(db.path));
        assert.ok(!error.message.includes("\n"));
        return true;
      },
    );
    // The failed attempt left the first store working.
    const [out] = await first.enqueue("q", [job], T0);
    assert.equal(out.deduplicated, false);
  } finally {
    await first.close();
  }
  // Once closed, the file is free again.
  const second = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  await second.close();
});

Deno.test("SqliteStore keeps jobs, counts, leases and pauses across a close and reopen", async () => {
  await using db = await tempDb();
  const before = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  const [leasedOut, pendingOut, delayedOut] = await before.enqueue("q", [
    { ...job, key: "a" },
    { ...job, key: "b" },
    { ...job, run_at: T0 + 60_000 },
  ], T0);
  const [delivery] = await before.claim("q", 1, 10_000, T0);
  assert.equal(delivery.job.id, leasedOut.id);
  await before.checkpoint(leasedOut.id, delivery.lease.token, '"half"', T0 + 1);
  await before.setPaused("paused", true);
  await before.close();

  const after = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    const [stats] = await after.stats("q");
    assert.deepEqual(stats.counts, {
      blocked: 0,
      pending: 1,
      delayed: 1,
      leased: 1,
      done: 0,
      dead: 0,
      cancelled: 0,
    });
    assert.equal(stats.oldest_pending_at, T0);
    assert.equal((await after.stats("paused"))[0].paused, true);
    assert.equal((await after.get(pendingOut.id))?.state, "pending");
    assert.equal((await after.get(delayedOut.id))?.run_at, T0 + 60_000);
    assert.equal(await after.nextDeadline(T0 + 2), T0 + 10_000);
    const [dup] = await after.enqueue("q", [{ ...job, key: "b" }], T0 + 2);
    assert.deepEqual(
      [dup.id, dup.deduplicated, dup.duplicate, dup.state],
      [pendingOut.id, true, "ignored", "pending"],
    );

    // The consumer that held the lease before the restart can still finish within it.
    assert.equal((await after.get(leasedOut.id))?.checkpoint, '"half"');
    await after.ack(leasedOut.id, delivery.lease.token, '"ok"', T0 + 9_999);
    assert.equal((await after.get(leasedOut.id))?.state, "done");
    const [next] = await after.enqueue("q", [job], T0 + 3);
    assert.ok(next.id > delayedOut.id);
  } finally {
    await after.close();
  }
});

Deno.test("SqliteStore keeps queue settings across a close and reopen", async () => {
  await using db = await tempDb();
  const before = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  const settings = queueSettings({
    concurrency: 2,
    rate: { limit: 5, per_ms: 250 },
    group_limit: 3,
    max_attempts: 4,
    retain_dead_ms: 60_000,
    retain_pending_ms: 120_000,
  });
  await before.putSettings("configured", settings, T0);
  await before.close();

  const after = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    assert.deepEqual(await after.settings("configured"), settings);
    assert.equal(after.knownQueues().has("configured"), true);
    assert.deepEqual((await after.stats()).map((s) => [s.name, s.settings]), [
      ["configured", settings],
    ]);
    const [out] = await after.enqueue("configured", [{ ...job, max_attempts: null }], T0);
    assert.equal((await after.get(out.id))?.max_attempts, 4);
  } finally {
    await after.close();
  }
});

Deno.test("SqliteStore.open() puts the database in WAL mode", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    await store.enqueue("q", [job], T0);
    const reader = new DatabaseSync(db.path, { readOnly: true });
    try {
      const row = reader.prepare("PRAGMA journal_mode").get() as { journal_mode: string };
      assert.equal(row.journal_mode, "wal");
    } finally {
      reader.close();
    }
  } finally {
    await store.close();
  }
});

Deno.test("SqliteStore.open() makes a new database with the page size it is given, SQLite's own by default", async () => {
  for (
    const [pageSize, expected] of [[undefined, DEFAULT_PAGE_SIZE], [1024, 1024], [16384, 16384]]
  ) {
    await using db = await tempDb();
    const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY, pageSize });
    try {
      await store.enqueue("q", [job], T0);
      assert.equal((await store.claim("q", 1, 60_000, T0)).length, 1);
    } finally {
      await store.close();
    }
    assert.equal(pageSizeOf(db.path), expected);
  }
  assert.equal(DEFAULT_PAGE_SIZE, 4096);
});

Deno.test("a database made with 4 KiB pages keeps them and its jobs when opened with another size", async () => {
  await using db = await tempDb();
  const older = new DatabaseSync(db.path);
  older.exec("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL");
  migrate(older);
  older.close();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY, pageSize: 1024 });
  let id: number;
  try {
    [{ id }] = await store.enqueue("q", [job], T0);
    const [delivery] = await store.claim("q", 1, 60_000, T0);
    assert.equal(delivery.job.id, id);
  } finally {
    await store.close();
  }
  assert.equal(pageSizeOf(db.path), 4096);
  const reopened = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    assert.equal((await reopened.get(id))?.state, "leased");
  } finally {
    await reopened.close();
  }
});

Deno.test("SqliteStore.open() with sync normal opens and commits", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, sync: "normal", policy: SUITE_POLICY });
  try {
    const [out] = await store.enqueue("q", [job], T0);
    assert.equal((await store.get(out.id))?.state, "pending");
    await store.probeWritable();
  } finally {
    await store.close();
  }
});

Deno.test("with sync normal, a write right after a commit waits for no timer", async () => {
  // A commit within a millisecond of the last one waits for the rest of this turn of the event
  // loop, to take what else arrives; a zero timer would hold it 2 ms (Deno's timers).
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, sync: "normal", policy: SUITE_POLICY });
  try {
    await store.enqueue("q", [job], T0); // the first commit makes the log: not counted
    let waited = 0;
    for (let i = 0; i < 20; i++) {
      await store.enqueue("q", [job], T0); // the last commit: now
      let timerRan = false;
      setTimeout(() => timerRan = true, 0);
      const [leased] = await store.claim("q", 1, 60_000, T0); // an idle push's claim, say
      assert.ok(leased !== undefined);
      if (timerRan) waited++;
    }
    // A zero timer fires first every time when the commit waits for one; a stall of the
    // machine past the timer's 1–2 ms can let it win now and then otherwise.
    assert.ok(waited <= 5, `${waited} of 20 commits came after a zero timer`);
  } finally {
    await store.close();
  }
});

Deno.test("SqliteStore.open() on :memory: needs no lock file", async () => {
  const store = SqliteStore.open({ path: ":memory:", policy: SUITE_POLICY });
  try {
    const [out] = await store.enqueue("q", [job], T0);
    assert.equal((await store.get(out.id))?.state, "pending");
    assert.match(store.engine, /^SQLite \d+\.\d+/);
  } finally {
    await store.close();
  }
});

Deno.test("the WAL stays small under constant writes (checkpointed as it goes)", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    const big = { ...job, payload: JSON.stringify("x".repeat(1000)) };
    // ≈ 30 MB of payload through the WAL, in commits of 100 jobs, with claims and acks.
    for (let round = 0; round < 300; round++) {
      await store.enqueue("w", Array.from({ length: 100 }, () => big), T0);
      const leased = await store.claim("w", 100, null, T0);
      await Promise.all(leased.map((d) => store.ack(d.job.id, d.lease.token, null, T0)));
    }
    const sizes = store.fileSizes();
    assert.ok(sizes !== null);
    assert.ok(sizes.database > 30_000_000, `database holds the jobs (${sizes.database} bytes)`);
    assert.ok(sizes.wal < 16 * 1024 * 1024, `WAL stays under 16 MiB (${sizes.wal} bytes)`);
  } finally {
    await store.close();
  }
});

Deno.test("after a failed WAL fsync the store runs no write at all, so none answered 503 is done after all", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  // SQLite keeps writing through its open descriptor; the store's own fsync must reopen the
  // -wal by name on its first use, and fails: the fsync failure, on demand.
  await Deno.remove(`${db.path}-wal`);
  const codes = [];
  for (let i = 0; i < 3; i++) {
    codes.push(
      await store.enqueue("q", [job], T0).then(() => "ok", (e) => e.code),
      await store.probeWritable().then(() => "ok", (e) => e.code),
    );
  }
  assert.deepEqual(codes, Array(6).fill("unavailable"));
  assert.equal((await store.stats("q"))[0].counts.pending, 1, "reads still work");
  await store.close();
  const reopened = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    // Only the first enqueue ran: its commit came before the fsync that failed.
    assert.equal((await reopened.stats("q"))[0].counts.pending, 1);
  } finally {
    await reopened.close();
  }
});

Deno.test("a write queued while the fsync that fails is running is refused, not committed", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  const syncData = Deno.FsFile.prototype.syncData;
  Deno.FsFile.prototype.syncData = () =>
    new Promise((_, reject) => setTimeout(() => reject(new Error("EIO (simulated)")), 50));
  try {
    const first = store.enqueue("q", [job], T0); // committed; its fsync runs, then fails
    await new Promise((resolve) => setTimeout(resolve, 10));
    const queued = store.enqueue("q", [job], T0); // waits for that fsync to end
    for (const write of [first, queued]) {
      await assert.rejects(write, (e: unknown) => (e as { code: string }).code === "unavailable");
    }
  } finally {
    Deno.FsFile.prototype.syncData = syncData;
  }
  await store.close();
  const reopened = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    assert.equal((await reopened.stats("q"))[0].counts.pending, 1, "only the first commit ran");
  } finally {
    await reopened.close();
  }
});

Deno.test("acks submitted together are settled in a few statements, not one each", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  await store.enqueue("q", Array.from({ length: 64 }, () => job), T0);
  const leases = await store.claim("q", 64, null, T0);
  const before = store.commitStats().statements!;
  await Promise.all(leases.map((d) => store.ack(d.job.id, d.lease.token, null, T0)));
  const run = store.commitStats().statements! - before;
  // BEGIN, a savepoint, one UPDATE, its release, COMMIT, and the change counts around them.
  assert.ok(run <= 8, `64 acks took ${run} statements`);
  assert.equal((await store.stats("q"))[0]?.counts.done, 64);
  await store.close();
});

/**
 * An in-memory store whose next BEGIN is refused once `failNextBegin()` was called (the file
 * locked by another program past busy_timeout, an I/O error).
 */
function storeWithFailingBegin(): { store: SqliteStore; failNextBegin: () => void } {
  let failBegin = false;
  const store = SqliteStore.open({
    path: ":memory:",
    policy: SUITE_POLICY,
    committer: (db, observer, schedule) =>
      new GroupCommit(
        {
          ...db,
          begin: () => {
            if (failBegin) {
              failBegin = false;
              throw new Error("database is locked");
            }
            db.begin();
          },
        },
        observer,
        { schedule },
      ),
  });
  return { store, failNextBegin: () => failBegin = true };
}

Deno.test("enqueues submitted together are inserted in a few statements, ids in their order", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  await store.putSettings("b", queueSettings({ max_attempts: 9, lease_ms: 7_000 }), T0);
  const before = store.commitStats().statements!;
  // One job per enqueue, as one request per job brings them; two queues, one with defaults.
  const answers = await Promise.all(
    Array.from({ length: 64 }, (_, i) =>
      store.enqueue(i % 2 === 0 ? "a" : "b", [
        newJob({ payload: `{"n":${i}}`, max_attempts: null, run_at: i === 5 ? T0 + 60_000 : T0 }),
      ], T0)),
  );
  const run = store.commitStats().statements! - before;
  // BEGIN, one 64-row INSERT, COMMIT, and the change counts around them.
  assert.ok(run <= 6, `64 enqueues took ${run} statements`);
  const ids = answers.map(([e]) => e.id);
  assert.deepEqual(ids, ids.map((_, i) => ids[0] + i), "ids follow the order of submission");
  for (let i = 0; i < 64; i++) {
    const stored = (await store.get(ids[i]))!;
    assert.equal(stored.queue, i % 2 === 0 ? "a" : "b");
    assert.equal(stored.payload, `{"n":${i}}`);
    assert.equal(stored.max_attempts, i % 2 === 0 ? 5 : 9, "each queue's own defaults");
    assert.equal(stored.lease_ms, i % 2 === 0 ? null : 7_000);
    assert.equal(stored.state, i === 5 ? "delayed" : "pending");
    assert.equal(answers[i][0].state, stored.state);
  }
  const counts = Object.fromEntries((await store.stats()).map((q) => [q.name, q.counts]));
  assert.equal(counts.a.pending, 32);
  assert.deepEqual([counts.b.pending, counts.b.delayed], [31, 1]);
  await store.close();
});

Deno.test("a keyed enqueue between enqueues without keys ends their run; ids keep their order", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  const [first] = await store.enqueue("q", [newJob({ key: "k" })], T0);
  const answers = await Promise.all([
    store.enqueue("q", [newJob({ payload: "1" }), newJob({ payload: "2" })], T0),
    store.enqueue("q", [newJob({ payload: "3", key: "k" }), newJob({ payload: "4" })], T0),
    store.enqueue("q", [newJob({ payload: "5" })], T0),
    store.enqueue("q", [newJob({ payload: "6" })], T0),
  ]);
  const [[one, two], [dup, four], [five], [six]] = answers;
  assert.equal(dup.id, first.id);
  assert.equal(dup.deduplicated, true);
  const ids = [one, two, four, five, six].map((e) => e.id);
  assert.deepEqual(ids, ids.map((_, i) => ids[0] + i));
  const payloads = await Promise.all(ids.map(async (id) => (await store.get(id))!.payload));
  assert.deepEqual(payloads, ["1", "2", "4", "5", "6"]);
  assert.equal((await store.stats("q"))[0]?.counts.pending, 6);
  await store.close();
});

Deno.test("a run of enqueues is inserted once when its transaction runs again", async () => {
  // An ack with a stale token throws in the same flush: group commit rolls the transaction back
  // and runs it again with a savepoint around the ack; the run's rows go in once, in the rerun.
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  await store.enqueue("q", [job], T0);
  const [lease] = await store.claim("q", 1, null, T0);
  const settled = await Promise.allSettled([
    store.enqueue("r", [newJob({ payload: "1" })], T0),
    store.enqueue("r", [newJob({ payload: "2" })], T0),
    store.ack(lease.job.id, "not-the-token", null, T0),
    store.enqueue("r", [newJob({ payload: "3" })], T0),
  ]);
  assert.deepEqual(settled.map((r) => r.status), [
    "fulfilled",
    "fulfilled",
    "rejected",
    "fulfilled",
  ]);
  const ids = [settled[0], settled[1], settled[3]].map((r) =>
    r.status === "fulfilled" ? (r.value as { id: number }[])[0].id : 0
  );
  const payloads = await Promise.all(ids.map(async (id) => (await store.get(id))!.payload));
  assert.deepEqual(payloads, ["1", "2", "3"]);
  assert.equal((await store.stats("r"))[0]?.counts.pending, 3, "each row once");
  await store.close();
});

Deno.test("the enqueues of a flush that failed are not inserted by a later enqueue", async () => {
  const { store, failNextBegin } = storeWithFailingBegin();
  failNextBegin();
  const refused = await Promise.allSettled([
    store.enqueue("q", [newJob({ payload: "1" })], T0),
    store.enqueue("q", [newJob({ payload: "2" })], T0),
  ]);
  assert.deepEqual(refused.map((r) => r.status), ["rejected", "rejected"]);
  const [later] = await store.enqueue("q", [newJob({ payload: "3" })], T0);
  assert.equal((await store.get(later.id))?.payload, "3");
  assert.equal((await store.stats("q"))[0]?.counts.pending, 1);
  await store.close();
});

Deno.test("the acks of a flush that failed are not settled by a later ack", async () => {
  // BEGIN refused once (the file locked by another program past busy_timeout, an I/O error):
  // its acks are answered unavailable and must stay undone, whatever a later ack settles.
  const { store, failNextBegin } = storeWithFailingBegin();
  await store.enqueue("q", [job, job, job], T0);
  const leases = await store.claim("q", 3, null, T0);
  failNextBegin();
  const refused = await Promise.allSettled(
    leases.slice(0, 2).map((d) => store.ack(d.job.id, d.lease.token, null, T0 + 1)),
  );
  assert.deepEqual(refused.map((r) => r.status), ["rejected", "rejected"]);
  await store.ack(leases[2].job.id, leases[2].lease.token, null, T0 + 2);
  const states = await Promise.all(leases.map((d) => store.get(d.job.id)));
  assert.deepEqual(states.map((j) => j?.state), ["leased", "leased", "done"]);
  assert.deepEqual(
    (await store.stats("q"))[0]?.counts,
    { blocked: 0, pending: 0, delayed: 0, leased: 2, done: 1, dead: 0, cancelled: 0 },
  );
  await store.close();
});

Deno.test("an ack after a flush starts a run of its own, even in a transaction left open", async () => {
  // A committer that keeps its transaction open across flushes (the crash campaign's
  // answer-before-commit control): an ack submitted after the first flush is its own run.
  const store = SqliteStore.open({
    path: ":memory:",
    policy: SUITE_POLICY,
    committer: answerBeforeCommit(200),
  });
  await store.enqueue("q", [job, job, job], T0);
  const leases = await store.claim("q", 3, null, T0);
  await Promise.all(leases.slice(0, 2).map((d) => store.ack(d.job.id, d.lease.token, null, T0)));
  await store.ack(leases[2].job.id, leases[2].lease.token, null, T0);
  await new Promise((resolve) => setTimeout(resolve, 400)); // its COMMIT
  const states = await Promise.all(leases.map((d) => store.get(d.job.id)));
  assert.deepEqual(states.map((j) => j?.state), ["done", "done", "done"]);
  await store.close();
});

Deno.test("a run of acks, completing or deleting, looks each job up by id, even after an ANALYZE", () => {
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS) db.exec(migration);
  db.exec("ANALYZE"); // statistics of a near-empty table, then many leased jobs
  const insert = db.prepare(
    `INSERT INTO jobs (queue, state, payload, max_attempts, run_at, created_at, lease_token,
       lease_expires_at) VALUES ('q', 'leased', '1', 5, 0, 0, ?, ?)`,
  );
  db.exec("BEGIN");
  for (let i = 1; i <= 2000; i++) insert.run(`t${i}`, 1e12 + i);
  db.exec("COMMIT");
  for (
    const sql of [
      ackRunSql("(?, ?, ?, ?), (?, ?, ?, ?)"),
      ackDeleteRunSql("(?, ?, ?), (?, ?, ?)"),
    ]
  ) {
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((row) => String(row.detail));
    assert.ok(
      plan.some((step) => /SEARCH jobs USING INTEGER PRIMARY KEY/.test(step)),
      plan.join("; "),
    );
    assert.ok(!plan.some((step) => /SCAN jobs|jobs_(leased|browse)/.test(step)), plan.join("; "));
  }
});

Deno.test("the job browser's pending pages read the claim's indexes, never a scan of the jobs", () => {
  // Pending and leased jobs are not in jobs_browse (a job passes through them at every
  // delivery): their pages come from the claim's indexes and the expiry index.
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS) db.exec(migration);
  db.exec(GROUP_TRACKING);
  const sql: string[] = [];
  new PendingPage((text) => {
    sql.push(text);
    return new CountedStatement(db.prepare(text), { n: 0 });
  });
  const plan = (text: string) =>
    db.prepare(`EXPLAIN QUERY PLAN ${text}`).all().map((row) => String(row.detail)).join("; ");
  for (const text of sql) {
    const steps = plan(text);
    assert.match(steps, /^SEARCH (jobs|job_groups) USING /, `${text}\n${steps}`);
    assert.doesNotMatch(steps, /SCAN|TEMP B-TREE/, `${text}\n${steps}`);
  }
  assert.equal(sql.length, 7);
});

/** Opens a store on `:memory:`, recording the SQL of every statement it prepares while opening. */
function openRecordingStatements(): { store: SqliteStore; sql: string[] } {
  const prepare = DatabaseSync.prototype.prepare;
  const sql: string[] = [];
  DatabaseSync.prototype.prepare = function (this: DatabaseSync, text: string) {
    sql.push(text);
    return prepare.call(this, text);
  } as typeof prepare;
  try {
    return { store: SqliteStore.open({ path: ":memory:", policy: SUITE_POLICY }), sql };
  } finally {
    DatabaseSync.prototype.prepare = prepare;
  }
}

/** The steps of `text`'s query plan on an empty database of the current schema. */
function planSteps(text: string): string[] {
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS) db.exec(migration);
  return db.prepare(`EXPLAIN QUERY PLAN ${text}`).all().map((row) => String(row.detail));
}

Deno.test("every statement of the store that names jobs_browse's WHERE term reads jobs_browse", async () => {
  // SQLite uses a partial index only where the query repeats its WHERE term: the store's own
  // statements, recorded as it prepares them.
  const { store, sql } = openRecordingStatements();
  const browsing = sql.filter((text) => text.includes("NOT IN ('pending', 'leased')"));
  assert.ok(browsing.length >= 3, browsing.join("\n")); // two pages, the requeue
  for (const text of browsing) {
    const steps = planSteps(text);
    assert.ok(
      steps.some((step) => /USING (COVERING )?INDEX jobs_browse/.test(step)),
      `${text}\n${steps}`,
    );
  }
  await store.close();
});

Deno.test("the retention sweeps read one queue's jobs of one state from their index, up to the cutoff", async () => {
  const { store, sql } = openRecordingStatements();
  const sweeps = sql.filter((text) => /^DELETE FROM jobs WHERE id IN/.test(text.trim()));
  assert.equal(sweeps.length, 3, sweeps.join("\n")); // done and cancelled; dead; pending
  const pending = sweeps.filter((text) => text.includes("state = 'pending'"));
  assert.equal(pending.length, 1);
  assert.ok(
    planSteps(pending[0]).some((step) =>
      /INDEX jobs_pending_age \(queue=\? AND run_at<\?\)/.test(step)
    ),
    `${pending[0]}\n${planSteps(pending[0])}`,
  );
  for (const text of sweeps.filter((text) => !pending.includes(text))) {
    const steps = planSteps(text);
    assert.ok(
      steps.some((step) =>
        /INDEX jobs_finished \(queue=\? AND state=\? AND finished_at<\?\)/.test(step)
      ),
      `${text}\n${steps}`,
    );
  }
  await store.close();
});

/**
 * Opens a store on a new database in `dir` that already holds finished jobs, written past the
 * store (as a large database would be found at startup), each finished at KEPT_FINISHED_AT:
 * `fill` calls `add(queue, state)` once per job.
 */
function openWithFinished(
  dir: string,
  fill: (add: (queue: string, state: "done" | "dead") => void) => void,
): SqliteStore {
  const path = `${dir}/t.db`;
  const db = new DatabaseSync(path);
  migrate(db);
  const insert = db.prepare(
    `INSERT INTO jobs (queue, state, payload, max_attempts, run_at, created_at, finished_at)
     VALUES (?, ?, '{}', 3, 0, ?, ?)`,
  );
  db.exec("BEGIN");
  fill((queue, state) => insert.run(queue, state, KEPT_FINISHED_AT, KEPT_FINISHED_AT));
  db.exec("COMMIT");
  db.close();
  return SqliteStore.open({ path, policy: SUITE_POLICY });
}

Deno.test("a retention sweep reads none of the finished jobs that other queues keep", async () => {
  // Keyed by finished_at alone, each sweep passed over every done job that a queue with a longer
  // retention kept, and read a queue's dead jobs whole: about 100 ms per sweep for these 200,000.
  await using tmp = await tempDir();
  const store = openWithFinished(tmp.path, (add) => {
    for (let i = 0; i < 200_000; i++) add("kept", i % 2 === 0 ? "done" : "dead");
  });
  try {
    await assertSweepSkipsKeptJobs(store, 10);
  } finally {
    await store.close();
  }
});

Deno.test("one sweep deletes across more queues and more jobs than one transaction takes", async () => {
  // A transaction visits at most 500 queues and deletes at most 5,000 jobs; the next one goes on
  // where it stopped.
  await using tmp = await tempDir();
  const store = openWithFinished(tmp.path, (add) => {
    for (let i = 0; i < 600; i++) add(`q${i}`, "done");
    for (let i = 0; i < 6_000; i++) add("q300", "done");
  });
  try {
    assert.equal(await store.sweepFinished(T0, 60_000), 6_600);
    assert.deepEqual(await store.stats(), []);
  } finally {
    await store.close();
  }
});

Deno.test("once open, the store sorts only a bounded few rows (its scratch space is memory)", async () => {
  // After the startup count, SQLite's temp storage is memory: a statement that sorted the whole
  // table there would hold it all in RAM. Every statement the store prepares while it opens and
  // serves the common operations, recorded; those whose plan sorts are each bounded.
  const prepare = DatabaseSync.prototype.prepare;
  const sql = new Set<string>();
  DatabaseSync.prototype.prepare = function (this: DatabaseSync, text: string) {
    sql.add(text);
    return prepare.call(this, text);
  } as typeof prepare;
  try {
    const store = SqliteStore.open({ path: ":memory:", policy: SUITE_POLICY });
    await store.enqueue("q", [job, newJob({ payload: "2", group: "g" })], T0);
    const leased = await store.claim("q", 2, 60_000, T0);
    for (const state of ["pending", "leased", "done", "dead"] as const) {
      for (const order of ["oldest", "newest"] as const) {
        await store.listJobs("q", { state, order, after: null, limit: 10 });
      }
    }
    await Promise.all(leased.map((d) => store.ack(d.job.id, d.lease.token, null, T0 + 1)));
    await store.stats();
    await store.tick(T0 + 2, HANDED_ALL);
    await store.sweepFinished(T0 + 3, 1);
    await store.close();
  } finally {
    DatabaseSync.prototype.prepare = prepare;
  }
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS) db.exec(migration);
  db.exec(GROUP_TRACKING);
  db.function("tegami_token", () => "token"); // the claim's lease tokens
  const bounded = [
    /^SELECT queue, state, count\(\*\)/, // the startup count, run before the switch
    /INDEXED BY jobs_leased .* LIMIT \? \+ 0$/, // a page of leased jobs: LIMIT keeps a page
    /^WITH g AS \( SELECT j\.grp, j\.turn/, // a grouped claim: its groups' first jobs, LIMITed
    /ORDER BY j\.pending DESC, j\.grp LIMIT 5$/, // the held groups of the stats: five
  ];
  const sorting: string[] = [];
  for (const text of sql) {
    const steps = db.prepare(`EXPLAIN QUERY PLAN ${text}`).all().map((row) => String(row.detail));
    if (!steps.some((step) => /TEMP B-TREE/.test(step))) continue;
    const flat = text.replace(/\s+/g, " ").trim();
    sorting.push(flat);
    assert.ok(bounded.some((known) => known.test(flat)), `${flat}\n${steps.join("; ")}`);
  }
  assert.ok(sql.size > 50, `${sql.size} statements recorded`);
  assert.equal(sorting.length, 5, sorting.join("\n"));
});

Deno.test("a transaction that changed nothing is answered without an fsync of its own", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  await store.enqueue("q", [job], T0); // durable: its fsync has finished
  const syncData = Deno.FsFile.prototype.syncData;
  Deno.FsFile.prototype.syncData = () => new Promise((resolve) => setTimeout(resolve, 2000));
  try {
    const empty = store.claim("nothing-here", 10, null, T0); // reads, writes nothing
    const answer = await Promise.race([
      empty,
      new Promise((resolve) => setTimeout(() => resolve("still waiting"), 500)),
    ]);
    assert.deepEqual(answer, [], "an empty claim waits for no disk");
  } finally {
    Deno.FsFile.prototype.syncData = syncData;
  }
  await store.close();
});

Deno.test("SqliteStore forgets a group's row once none of its jobs is pending or leased", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  const groupRows = () => {
    const check = new DatabaseSync(db.path);
    try {
      return (check.prepare("SELECT count(*) AS n FROM job_groups").get() as { n: number }).n;
    } finally {
      check.close();
    }
  };
  try {
    await store.enqueue("q", [newJob({ group: "g" })], T0);
    const [held] = await store.claim("q", 1, null, T0);
    assert.equal(groupRows(), 1);
    await store.ack(held.job.id, held.lease.token, null, T0);
    assert.equal(groupRows(), 0);
  } finally {
    await store.close();
  }
});

Deno.test("the group tracking is created with the first grouped job and counts it from its first row", async () => {
  await using db = await tempDb();
  const triggers = () => {
    const raw = new DatabaseSync(db.path, { readOnly: true });
    try {
      return (raw.prepare(
        "SELECT name FROM sqlite_master WHERE type IN ('trigger', 'index') AND name LIKE 'jobs_group%' ORDER BY name",
      ).all() as { name: string }[]).map((row) => row.name);
    } finally {
      raw.close();
    }
  };
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    await store.enqueue("plain", [newJob({})], T0);
    assert.deepEqual(triggers(), [], "a database without groups pays nothing for them");
    await store.enqueue("q", [newJob({ group: "g" }), newJob({ group: "g" })], T0);
    assert.deepEqual(triggers(), [
      "jobs_group_delete",
      "jobs_group_insert",
      "jobs_group_pending",
      "jobs_group_update",
    ]);
    const [first] = await store.claim("q", 10, null, T0);
    assert.deepEqual(await store.claim("q", 10, null, T0), [], "the group's limit holds");
    const [stats] = await store.stats("q");
    assert.deepEqual(stats.groups, {
      waiting: 1,
      leased: 1,
      full: 1,
      rate_held: 0,
      top_held: [{ group: "g", held: "concurrency", pending: 1, leased: 1, limit: 1 }],
    });
    await store.ack(first.job.id, first.lease.token, null, T0);
    assert.equal((await store.claim("q", 10, null, T0)).length, 1);
  } finally {
    await store.close();
  }
});

Deno.test("the group tracking is made again when the transaction that made it is rolled back", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    // One batch: the grouped enqueue creates the tracking, then an ack of no lease fails bare,
    // the transaction is rolled back (the tracking with it) and run again.
    const enqueued = store.enqueue("q", [newJob({ group: "g" })], T0);
    const refused = assert.rejects(store.ack(999, "no-such-token", null, T0), /no such job/);
    await enqueued;
    await refused;
    const [stats] = await store.stats("q");
    assert.deepEqual(
      stats.groups,
      { waiting: 1, leased: 0, full: 0, rate_held: 0, top_held: [] },
      "the job is counted",
    );
    assert.equal((await store.claim("q", 10, null, T0)).length, 1);
  } finally {
    await store.close();
  }
});

Deno.test("a grouped enqueue asks for the group tracking only until it is committed", async () => {
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  const statementsOf = async (write: () => Promise<unknown>) => {
    const before = store.commitStats().statements!;
    await write();
    return store.commitStats().statements! - before;
  };
  try {
    await store.enqueue("q", [newJob({ group: "g" })], T0);
    const plain = await statementsOf(() => store.enqueue("plain", [newJob({})], T0));
    const grouped = await statementsOf(() => store.enqueue("q", [newJob({ group: "h" })], T0));
    assert.equal(grouped, plain);
  } finally {
    await store.close();
  }
});

/** Bytes this process has caused to be written to storage so far, or null off Linux. */
async function writtenByThisProcess(): Promise<number | null> {
  try {
    const io = await Deno.readTextFile("/proc/self/io");
    return Number(io.match(/^write_bytes:\s+(\d+)/m)![1]);
  } catch {
    return null;
  }
}

Deno.test("a run of acks writes the write-ahead log and nothing else", async (t) => {
  // Settling an ack run keeps an undo record of every page it changes (a savepoint). With
  // SQLite's scratch space in files, a record over 64 KiB went to a temp file: written (and
  // deleted) at every commit, as many bytes again as the log itself under load.
  if (await writtenByThisProcess() === null) {
    await t.step({ name: "skipped: no /proc/self/io here", ignore: true, fn: () => {} });
    return;
  }
  await using db = await tempDb();
  const store = SqliteStore.open({ path: db.path, policy: SUITE_POLICY });
  try {
    const big = newJob({ payload: JSON.stringify({ pad: "x".repeat(1000) }) });
    await store.enqueue("q", Array.from({ length: 400 }, () => big), T0);
    const leased = await store.claim("q", 400, 60_000, T0);
    assert.equal(leased.length, 400);
    const walBefore = (await Deno.stat(`${db.path}-wal`)).size;
    const before = (await writtenByThisProcess())!;
    // Submitted in one tick with no other write between: one run, settled under one savepoint
    // whose undo record spans a hundred pages and more.
    await Promise.all(leased.map((d) => store.ack(d.job.id, d.lease.token, null, T0 + 1)));
    const written = (await writtenByThisProcess())! - before;
    const walGrowth = (await Deno.stat(`${db.path}-wal`)).size - walBefore;
    assert.ok(walGrowth > 100 * 4096, `the acks changed ${walGrowth} bytes of log`);
    // The log's frames, and a margin under the 64 KiB from which an undo record spilled.
    assert.ok(
      written <= walGrowth + 32 * 1024,
      `wrote ${written} bytes for ${walGrowth} bytes of log`,
    );
    assert.equal((await store.stats("q"))[0].counts.done, 400);
  } finally {
    await store.close();
  }
});

Deno.test("the fair-shares migration keeps served groups' order and remakes the group trigger", () => {
  // A database as the version before it left it: counting groups with the old trigger, turns
  // from the old counter.
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS.slice(0, 14)) db.exec(migration);
  db.exec(GROUP_TRACKING);
  db.exec(`DROP TRIGGER jobs_group_update;
    CREATE TRIGGER jobs_group_update AFTER UPDATE OF state ON jobs BEGIN SELECT 1; END;
    PRAGMA user_version = 14;
    INSERT INTO job_groups (queue, grp, pending, turn) VALUES
      ('q', 'late', 1, 9), ('q', 'early', 1, 5), ('q', 'new', 1, 0), ('r', 'other', 1, 3);`);
  assert.equal(migrate(db), MIGRATIONS.length);
  const turns = db.prepare("SELECT queue, grp, turn FROM job_groups ORDER BY queue, turn").all()
    .map((row) => `${row.queue}/${row.grp}=${row.turn}`);
  assert.deepEqual(turns, ["q/new=0", "q/early=1000000", "q/late=2000000", "r/other=1000000"]);
  const trigger = db.prepare(
    "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'jobs_group_update'",
  ).get() as { sql: string };
  assert.doesNotMatch(trigger.sql, /max\(turn\)/, "the claim moves the turns, not the trigger");
  db.close();
});
