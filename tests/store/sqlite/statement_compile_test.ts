/**
 * The SQLite store's statements are compiled once, when the store opens, and never again by
 * running them with new values. SQLite reads the value of a bare bound LIMIT (`LIMIT ?`) into a
 * statement's plan, so binding a new one marks the statement expired and its next run compiles
 * it again from its SQL text: a claim, whose LIMIT is the consumers' credit, paid that at every
 * run. An authorizer sees every compilation (SQLite calls it only while compiling), so these
 * tests count them while a warm store runs every kind of operation with ever new values.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "../../../lib/store/sqlite/sqlite_schema.ts";
import { SqliteStore } from "../../../lib/store/sqlite/sqlite_store.ts";
import { HANDED_ALL, newJob, queueSettings, SUITE_POLICY } from "../store_suite.ts";
import { tempDir } from "../../helpers/temp_dir.ts";

/** A migrated database in memory whose compilations are counted in `compiles.n`. */
function countingDatabase(): { db: DatabaseSync; compiles: { n: number } } {
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS) db.exec(migration);
  const compiles = { n: 0 };
  db.setAuthorizer(() => {
    compiles.n++;
    return 0; // SQLITE_OK
  });
  return { db, compiles };
}

/**
 * Runs `round(0)` … `round(warm - 1)` to warm the store up, then `rounds` more, and answers the
 * compile checks those later rounds made (0 when no statement compiled again).
 */
async function compilesAfterWarmUp(
  store: SqliteStore,
  round: (r: number) => Promise<void>,
  warm: number,
  rounds: number,
): Promise<number> {
  for (let r = 0; r < warm; r++) await round(r);
  const before = store.compileChecks;
  for (let r = warm; r < warm + rounds; r++) await round(r);
  return store.compileChecks - before;
}

Deno.test("a bare bound LIMIT recompiles its statement at every run; LIMIT ? + 0 does not", () => {
  // The premise of the form the store's statements use, shown on this runtime's SQLite.
  const { db, compiles } = countingDatabase();
  const bare = db.prepare("SELECT id FROM jobs WHERE queue = ? ORDER BY id LIMIT ?");
  const added = db.prepare("SELECT id FROM jobs WHERE queue = ? ORDER BY id LIMIT ? + 0");
  bare.all("q", 1);
  added.all("q", 1);
  const before = compiles.n;
  for (let limit = 2; limit < 6; limit++) added.all("q", limit);
  assert.equal(compiles.n, before, "LIMIT ? + 0 compiled again");
  for (let limit = 2; limit < 6; limit++) bare.all("q", limit);
  assert.ok(compiles.n > before, "a bare LIMIT ? no longer recompiles: the store's form can go");
  db.close();
});

Deno.test("every LIMIT in the SQLite store's SQL is a literal or written ? + 0", async () => {
  // A statement added later is held to the same form, whether or not a test above runs it.
  const dir = new URL("../../../lib/store/sqlite/", import.meta.url);
  const bare: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(entry.name, dir));
    // SQL only: comments may name the bare form.
    const code = text.split("\n").filter((line) => !/^\s*(\*|\/\/|\/\*\*)/.test(line));
    for (const line of code) {
      for (const match of line.matchAll(/LIMIT\s+(\?\d*|:\w+|@\w+|\$\w+)(?![\w\s]*\+\s*0)/g)) {
        bare.push(`${entry.name}: ${match[0]}`);
      }
    }
  }
  assert.deepEqual(bare, []);
});

Deno.test("a warm SQLite store runs a job's whole life without compiling a statement", async () => {
  await using dir = await tempDir("tegami_compile_");
  const store = SqliteStore.open({ path: `${dir.path}/tegami.db`, policy: SUITE_POLICY });
  try {
    // One round of every frequent operation, with limits and values that change each round.
    let now = 1_000_000;
    const round = async (r: number) => {
      now += 60_000;
      const jobs = Array.from(
        { length: 4 },
        (_, i) => newJob({ payload: `{"r":${r},"i":${i}}`, run_at: now }),
      );
      await store.enqueue("q", jobs, now);
      await store.enqueue(
        "q",
        [newJob({ key: `k${r}`, run_at: now }), newJob({ run_at: now + 5 })],
        now,
      );
      const [a, b, c, ...more] = await store.claimFair("q", [{ max: 3 + r, lease_ms: null }], now)
        .then((lists) => lists[0]);
      await Promise.all([
        store.ack(a.job.id, a.lease.token, null, now),
        store.ack(b.job.id, b.lease.token, `{"r":${r}}`, now),
      ]);
      await store.extend(c.job.id, c.lease.token, 1000 + r, now);
      await store.checkpoint(c.job.id, c.lease.token, `{"at":${r}}`, now);
      await store.progress(c.job.id, c.lease.token, `{"p":${r}}`, now);
      await store.nack(c.job.id, c.lease.token, { error: "e", delay_ms: null, dead: true }, now);
      for (const d of more) await store.ack(d.job.id, d.lease.token, null, now);
      // The first of the rest keeps its lease until the tick below ends it.
      const [kept, ...rest] = await store.claim("q", 10 + r, 1000, now);
      assert.ok(kept !== undefined);
      for (const d of rest) await store.ack(d.job.id, d.lease.token, null, now);
      await store.listJobs("q", { state: "done", order: "oldest", after: null, limit: 5 + r });
      await store.listJobs("q", { state: "dead", order: "newest", after: null, limit: 5 + r });
      await store.listJobs("q", { state: "leased", order: "oldest", after: r, limit: 5 + r });
      await store.listJobs("q", { state: "pending", order: "newest", after: null, limit: 5 + r });
      await store.requeueDead("q", { after: r }, now, 100 + r);
      await store.tick(now + 5000, HANDED_ALL, 100 + r);
      await store.stats("q");
      await store.nextDeadline(now);
      await store.sweepFinished(now, 30_000 + r);
      await store.dueSchedules(now, 5 + r);
      // A queue with groups and a concurrency: the grouped claim's statements.
      const grouped = [0, 1, 2].map((i) => newJob({ group: `g${i % 2}`, run_at: now }));
      grouped.push(newJob({ run_at: now })); // an ungrouped job in a grouped queue
      await store.enqueue("g", grouped, now);
      for (const d of await store.claim("g", 2 + r, null, now)) {
        await store.ack(d.job.id, d.lease.token, null, now);
      }
      await store.listJobs("g", { state: "pending", order: "oldest", after: r, limit: 5 + r });
    };
    await store.putSettings("g", queueSettings({ concurrency: 2, group_limit: 1 }), 0);
    await store.putSettings("q", queueSettings({ retain_done_ms: 1000, retain_dead_ms: 1000 }), 0);
    // Two rounds warm up: the first grouped job creates the group tracking (a schema change),
    // after which each statement compiles once more, at its next run.
    const compiled = await compilesAfterWarmUp(store, round, 2, 3);
    assert.equal(compiled, 0, "a statement compiled again while the store ran");
  } finally {
    await store.close();
  }
});

Deno.test("after an ANALYZE from outside, a reopened store's claims compile nothing", async () => {
  // ANALYZE's value samples (sqlite_stat4) make `queue = ?` plan-dependent; the store drops them
  // when it opens, keeping the row counts.
  await using dir = await tempDir("tegami_compile_");
  const path = `${dir.path}/tegami.db`;
  const now = 1_000_000;
  const first = SqliteStore.open({ path, policy: SUITE_POLICY });
  for (let i = 0; i < 20; i++) {
    const jobs = Array.from({ length: 50 }, () => newJob({ run_at: now }));
    await first.enqueue(`q${i % 3}`, jobs, now);
  }
  await first.close();
  const outside = new DatabaseSync(path);
  outside.exec("ANALYZE");
  assert.ok((outside.prepare("SELECT count(*) AS n FROM sqlite_stat4").get()!.n as number) > 0);
  outside.close();

  const store = SqliteStore.open({ path, policy: SUITE_POLICY });
  try {
    const round = async (r: number) => {
      const queue = `q${r % 3}`;
      const got = await store.claim(queue, 2 + r, null, now);
      assert.ok(got.length > 0);
      for (const d of got) await store.ack(d.job.id, d.lease.token, null, now);
      await store.enqueue(queue, [newJob({ run_at: now })], now);
    };
    const compiled = await compilesAfterWarmUp(store, round, 1, 5);
    assert.equal(compiled, 0, "a claim compiled again after the ANALYZE");
  } finally {
    await store.close();
  }
  const after = new DatabaseSync(path, { readOnly: true });
  assert.equal(after.prepare("SELECT count(*) AS n FROM sqlite_stat4").get()!.n, 0);
  assert.ok((after.prepare("SELECT count(*) AS n FROM sqlite_stat1").get()!.n as number) > 0);
  after.close();
});
