/**
 * Group commit against a fake database that records every call, so each test can say exactly
 * which transactions and savepoints a batch produced.
 */

import assert from "node:assert/strict";
import { TegamiError } from "../../lib/core/errors.ts";
import { GroupCommit, type Transactor } from "../../lib/store/group_commit.ts";

/** A transactor that records its calls and can be told to fail. */
class FakeDb implements Transactor {
  calls: string[] = [];
  failBegin: Error | null = null;
  failCommit: Error | null = null;

  begin(): void {
    this.calls.push("begin");
    if (this.failBegin) throw this.failBegin;
  }
  commit(): void {
    this.calls.push("commit");
    if (this.failCommit) throw this.failCommit;
  }
  rollback(): void {
    this.calls.push("rollback");
  }
  mark(): void {
    this.calls.push("mark");
  }
  release(): void {
    this.calls.push("release");
  }
  undo(): void {
    this.calls.push("undo");
  }
}

interface Observed {
  size: number;
  ms: number;
  error: unknown;
}

function setup(): { db: FakeDb; commits: GroupCommit; observed: Observed[] } {
  const db = new FakeDb();
  const observed: Observed[] = [];
  const commits = new GroupCommit(db, (size, ms, error) => observed.push({ size, ms, error }));
  return { db, commits, observed };
}

/** Asserts that every result was rejected with `unavailable` (never resolved). */
function assertAllUnavailable(results: PromiseSettledResult<unknown>[]): void {
  for (const result of results) {
    assert.equal(result.status, "rejected");
    assert.ok(result.reason instanceof TegamiError);
    assert.equal(result.reason.code, "unavailable");
  }
}

Deno.test("submit() runs operations submitted together in one transaction", async () => {
  const { db, commits, observed } = setup();
  const ran: number[] = [];
  const answers = await Promise.all([1, 2, 3].map((n) =>
    commits.submit(() => {
      ran.push(n);
      return n * 10;
    })
  ));
  assert.deepEqual(answers, [10, 20, 30]);
  assert.deepEqual(ran, [1, 2, 3], "operations run in the order they were submitted");
  assert.deepEqual(db.calls, ["begin", "commit"], "no savepoints while nothing fails");
  assert.equal(observed.length, 1);
  assert.equal(observed[0].size, 3);
  assert.equal(observed[0].error, null);
});

Deno.test("submit() answers no caller before the commit", async () => {
  const { db, commits } = setup();
  const seen: string[][] = [];
  await Promise.all([
    commits.submit(() => 1).then(() => seen.push([...db.calls])),
    commits.submit(() => 2).then(() => seen.push([...db.calls])),
  ]);
  for (const calls of seen) assert.equal(calls.at(-1), "commit");
});

Deno.test("submit() starts a new transaction for operations submitted after a commit", async () => {
  const { db, commits, observed } = setup();
  await commits.submit(() => "a");
  await commits.submit(() => "b");
  assert.deepEqual(db.calls, ["begin", "commit", "begin", "commit"]);
  assert.deepEqual(observed.map((o) => o.size), [1, 1]);
});

Deno.test("a TegamiError from one operation undoes only it and rejects only its caller", async () => {
  const { db, commits, observed } = setup();
  const lost = new TegamiError("lease_lost", "Cannot ack job 2: the token does not hold the lease");
  const runs: string[] = [];
  const results = await Promise.allSettled([
    commits.submit(() => (runs.push("first"), "first")),
    commits.submit(() => {
      runs.push("second");
      throw lost;
    }),
    commits.submit(() => (runs.push("third"), "third")),
  ]);
  assert.deepEqual(results[0], { status: "fulfilled", value: "first" });
  assert.deepEqual(results[1], { status: "rejected", reason: lost });
  assert.deepEqual(results[2], { status: "fulfilled", value: "third" });
  assert.deepEqual(db.calls, [
    ...["begin", "rollback"], // the bare run: the second operation failed, nothing kept
    ...["begin", "mark", "undo", "mark", "release", "commit"], // savepoints from it on
  ]);
  assert.deepEqual(runs, ["first", "second", "first", "second", "third"]);
  assert.equal(observed[0].error, null);
});

Deno.test("any other error from an operation rolls back and rejects every caller with unavailable", async () => {
  const { db, commits, observed } = setup();
  const bug = new TypeError("disk I/O error");
  let thirdRan = false;
  const results = await Promise.allSettled([
    commits.submit(() => "first"),
    commits.submit(() => {
      throw bug;
    }),
    commits.submit(() => {
      thirdRan = true;
      return "third";
    }),
  ]);
  assertAllUnavailable(results);
  assert.equal((results[1] as PromiseRejectedResult).reason.cause, bug);
  assert.equal(thirdRan, false, "nothing runs after the transaction is lost");
  assert.deepEqual(db.calls, ["begin", "rollback"]);
  assert.equal(observed.length, 1);
  assert.equal(observed[0].size, 3);
  assert.equal(observed[0].error, bug);
});

Deno.test("a failing commit rolls back and rejects every caller with unavailable", async () => {
  const { db, commits, observed } = setup();
  const full = new Error("database or disk is full");
  db.failCommit = full;
  const results = await Promise.allSettled([
    commits.submit(() => "first"),
    commits.submit(() => {
      throw new TegamiError("not_found", "Cannot find job 9: no such job");
    }),
    commits.submit(() => "third"),
  ]);
  assertAllUnavailable(results);
  assert.deepEqual(db.calls, [
    ...["begin", "rollback"],
    ...["begin", "mark", "undo", "mark", "release", "commit", "rollback"],
  ]);
  assert.equal(observed[0].error, full);

  // The next batch gets a fresh transaction once the disk has room again.
  db.failCommit = null;
  db.calls = [];
  assert.equal(await commits.submit(() => "later"), "later");
  assert.deepEqual(db.calls, ["begin", "commit"]);
});

Deno.test("a failing begin rejects every caller with unavailable", async () => {
  const { db, commits } = setup();
  db.failBegin = new Error("database is locked");
  let ran = false;
  const results = await Promise.allSettled([
    commits.submit(() => {
      ran = true;
    }),
    commits.submit(() => 2),
  ]);
  assertAllUnavailable(results);
  assert.equal(ran, false);
  assert.deepEqual(db.calls, ["begin", "rollback"]);
});

Deno.test("flush() commits everything submitted so far at once", async () => {
  const { db, commits } = setup();
  const a = commits.submit(() => "a");
  const b = commits.submit(() => "b");
  assert.equal(commits.waiting, 2);
  assert.deepEqual(db.calls, [], "nothing runs before the flush");
  commits.flush();
  assert.equal(commits.waiting, 0);
  assert.equal(db.calls.at(-1), "commit");
  assert.deepEqual(await Promise.all([a, b]), ["a", "b"]);
  await new Promise((resolve) => setTimeout(resolve, 0)); // the scheduled flush finds nothing
  assert.equal(db.calls.filter((c) => c === "begin").length, 1);
});

Deno.test("drained() resolves at once when nothing is waiting", async () => {
  const { db, commits } = setup();
  await commits.drained();
  assert.deepEqual(db.calls, []);
});

Deno.test("drained() resolves once the waiting operations are committed", async () => {
  const { db, commits } = setup();
  let answered = 0;
  const writes = [commits.submit(() => 1), commits.submit(() => 2)].map((p) =>
    p.then(() => answered++)
  );
  await commits.drained();
  assert.equal(commits.waiting, 0);
  assert.equal(db.calls.at(-1), "commit");
  await Promise.all(writes);
  assert.equal(answered, 2);
});

Deno.test("drained() resolves after a failed commit too", async () => {
  const { db, commits } = setup();
  db.failCommit = new Error("disk full");
  const write = commits.submit(() => 1);
  await commits.drained();
  assert.equal(db.calls.at(-1), "rollback");
  await assert.rejects(write, (error: unknown) => (error as TegamiError).code === "unavailable");
});

Deno.test("on a real database a failing operation's partial writes are undone and the rest kept", async () => {
  const { DatabaseSync } = await import("node:sqlite");
  const sqlite = new DatabaseSync(":memory:");
  sqlite.exec("CREATE TABLE t (v TEXT)");
  const exec = (sql: string) => () => sqlite.exec(sql);
  const db: Transactor = {
    begin: exec("BEGIN IMMEDIATE"),
    commit: exec("COMMIT"),
    rollback: () => {
      if (sqlite.isTransaction) sqlite.exec("ROLLBACK");
    },
    mark: exec("SAVEPOINT op"),
    release: exec("RELEASE op"),
    undo: exec("ROLLBACK TO op; RELEASE op"),
  };
  const commits = new GroupCommit(db, () => {});
  const insert = (v: string) => sqlite.prepare("INSERT INTO t VALUES (?)").run(v);
  const results = await Promise.allSettled([
    commits.submit(() => insert("a")),
    commits.submit(() => {
      insert("b1");
      insert("b2");
      throw new TegamiError("lease_lost", "Cannot ack: stale token");
    }),
    commits.submit(() => insert("c")),
    commits.submit(() => {
      insert("d");
      throw new TegamiError("not_found", "Cannot find it");
    }),
    commits.submit(() => insert("e")),
  ]);
  assert.deepEqual(results.map((r) => r.status), [
    "fulfilled",
    "rejected",
    "fulfilled",
    "rejected",
    "fulfilled",
  ]);
  const rows = sqlite.prepare("SELECT v FROM t ORDER BY rowid").all().map((r) => r.v);
  assert.deepEqual(rows, ["a", "c", "e"]);
  sqlite.close();
});
