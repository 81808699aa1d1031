/**
 * JobRowStatement reads whole `jobs` rows as arrays and builds the same rows node:sqlite's object
 * rows are, member for member, whatever order the columns come in; a statement that does not
 * answer every member is refused when it is wrapped, not at its first row.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "../../../lib/store/sqlite/sqlite_schema.ts";
import { CountedStatement } from "../../../lib/store/sqlite/counted_statement.ts";
import { JobRowStatement } from "../../../lib/store/sqlite/job_row_statement.ts";

function database(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const migration of MIGRATIONS) db.exec(migration);
  // Every column a distinct value, so a member read from the wrong column shows.
  db.exec(`INSERT INTO jobs (queue, state, priority, key, payload, attempts, max_attempts, run_at,
      lease_ms, backoff_base_ms, backoff_max_ms, created_at, checkpoint, result, last_error,
      lease_token, lease_len_ms, lease_expires_at, finished_at, key_expires_at, released_key,
      progress, progress_at, grp)
    VALUES ('q', 'leased', 3, 'k', '{"a":1}', 4, 5, 6, 7, 8, 9, 10, '"c"', '"r"', 'e', 't', 11,
      12, 13, 14, 'rk', '"p"', 15, 'g'),
      ('q', 'pending', 0, NULL, '[]', 0, 1, 2, NULL, NULL, NULL, 3, NULL, NULL, NULL, NULL, NULL,
      NULL, NULL, NULL, NULL, NULL, NULL, NULL)`);
  return db;
}

Deno.test("a job row statement answers what object rows hold, member for member", () => {
  const db = database();
  const count = { n: 0 };
  const plain = db.prepare("SELECT * FROM jobs ORDER BY id");
  // RETURNING in another column order than the table's.
  const reversed = new JobRowStatement(
    new CountedStatement(
      db.prepare(
        `SELECT ${plain.columns().map((c) => c.name).reverse().join(", ")} FROM jobs ORDER BY id`,
      ),
      count,
    ),
  );
  const expected = plain.all().map((row) => ({ ...row }));
  assert.deepEqual(reversed.all(), expected);
  assert.deepEqual(reversed.get(), expected[0]);
  assert.equal(count.n, 2);
});

Deno.test("get() answers undefined when there is no row", () => {
  const db = database();
  const byId = new JobRowStatement(
    new CountedStatement(db.prepare("SELECT * FROM jobs WHERE id = ?"), { n: 0 }),
  );
  assert.equal(byId.get(99), undefined);
  assert.equal(byId.get(1)?.payload, '{"a":1}');
});

Deno.test("a statement that does not answer every member of a job row is refused", () => {
  const db = database();
  assert.throws(
    () =>
      new JobRowStatement(new CountedStatement(db.prepare("SELECT id, queue FROM jobs"), { n: 0 })),
    /does not answer the column state/,
  );
});
