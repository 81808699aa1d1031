/**
 * JobInsert puts runs of new job rows in with as few statements as their length allows and
 * answers the first id of the run: every row lands in order, with the id the answer implies,
 * whatever the run's length and whatever ids the table has used before.
 */

import assert from "node:assert/strict";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { MIGRATIONS } from "../../../lib/store/sqlite/sqlite_schema.ts";
import { CountedStatement } from "../../../lib/store/sqlite/counted_statement.ts";
import { INSERT_COLUMNS, JobInsert } from "../../../lib/store/sqlite/job_insert.ts";

function database(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS) db.exec(migration);
  return db;
}

/** The values of `n` rows whose payloads are `${tag}.${i}`. */
function rows(n: number, tag: string): SQLInputValue[] {
  const values: SQLInputValue[] = [];
  for (let i = 0; i < n; i++) {
    const row: Record<(typeof INSERT_COLUMNS)[number], SQLInputValue> = {
      queue: "q",
      state: "pending",
      priority: i % 3,
      key: null,
      grp: null,
      payload: `"${tag}.${i}"`,
      max_attempts: 5,
      run_at: 1000 + i,
      lease_ms: null,
      backoff_base_ms: null,
      backoff_max_ms: null,
      created_at: 1000,
      key_expires_at: null,
      attributes: null,
    };
    values.push(...INSERT_COLUMNS.map((column) => row[column]));
  }
  return values;
}

Deno.test("runs of every length land in order with consecutive ids, in few statements", () => {
  const db = database();
  const count = { n: 0 };
  const insert = new JobInsert((sql) => new CountedStatement(db.prepare(sql), count));
  const byId = db.prepare("SELECT payload, priority, run_at FROM jobs WHERE id = ?");
  // Statements each length takes: 64, 32, … 1 rows each.
  const lengths: [number, number][] = [[1, 1], [2, 1], [37, 3], [64, 1], [65, 2], [130, 3]];
  let previous = 0;
  for (const [length, statements] of lengths) {
    const before = count.n;
    const first = insert.insert(rows(length, `r${length}`));
    assert.equal(count.n - before, statements, `statements for ${length} rows`);
    assert.equal(first, previous + 1);
    for (let i = 0; i < length; i++) {
      assert.deepEqual({ ...byId.get(first + i) }, {
        payload: `"r${length}.${i}"`,
        priority: i % 3,
        run_at: 1000 + i,
      });
    }
    previous = first + length - 1;
  }
  const total = lengths.reduce((sum, [length]) => sum + length, 0);
  assert.deepEqual({ ...db.prepare("SELECT count(*) AS n FROM jobs").get() }, { n: total });
});

Deno.test("no rows insert nothing and run no statement", () => {
  const db = database();
  const count = { n: 0 };
  const insert = new JobInsert((sql) => new CountedStatement(db.prepare(sql), count));
  assert.equal(insert.insert([]), 0);
  assert.equal(count.n, 0);
});

Deno.test("the ids answered follow the largest ever used, past rows since removed", () => {
  const db = database();
  const insert = new JobInsert((sql) => new CountedStatement(db.prepare(sql), { n: 0 }));
  const first = insert.insert(rows(10, "a"));
  db.exec(`DELETE FROM jobs WHERE id > ${first + 4}`);
  const next = insert.insert(rows(40, "b"));
  assert.equal(next, first + 10, "the removed ids are not used again");
  const payloads = db.prepare("SELECT id, payload FROM jobs WHERE id >= ? ORDER BY id").all(next);
  assert.deepEqual(
    payloads.map((row) => [row.id, row.payload]),
    Array.from({ length: 40 }, (_, i) => [next + i, `"b.${i}"`]),
  );
});
