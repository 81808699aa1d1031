/**
 * Inserts new job rows many per statement: one `INSERT … VALUES (…), (…), …` for a run of jobs
 * instead of one call each (see rows_statement.ts), which costs SQLite and node:sqlite less per
 * job, commit included.
 *
 * @module
 */

import type { SQLInputValue } from "node:sqlite";
import type { CountedStatement } from "./counted_statement.ts";
import { RowsStatement } from "./rows_statement.ts";

/** The columns a new job row is given, in the order {@linkcode JobInsert.insert} takes them. */
export const INSERT_COLUMNS = [
  "queue",
  "state",
  "priority",
  "key",
  "grp",
  "payload",
  "max_attempts",
  "run_at",
  "lease_ms",
  "backoff_base_ms",
  "backoff_max_ms",
  "created_at",
  "key_expires_at",
  "attributes",
] as const;

/** Inserts runs of new rows in as few statements as their number allows. */
export class JobInsert {
  readonly #rows: RowsStatement;

  /** Prepares its statements with `prepare` (the store's, which counts their runs). */
  constructor(prepare: (sql: string) => CountedStatement) {
    this.#rows = new RowsStatement(
      prepare,
      INSERT_COLUMNS.length,
      (rows) => `INSERT INTO jobs (${INSERT_COLUMNS.join(", ")}) VALUES ${rows}`,
    );
  }

  /**
   * Inserts the rows of `values` (each row's {@linkcode INSERT_COLUMNS}, one row after the
   * other), in order, and answers the id of the first; the others have the ids after it, one by
   * one. (An `AUTOINCREMENT` table gives each row of a statement the largest id yet plus one,
   * and this process is the file's only writer: a run's ids are consecutive; checked.) Answers 0
   * for no rows.
   */
  insert(values: readonly SQLInputValue[]): number {
    let first = 0;
    this.#rows.run(values, (n, info, at) => {
      const start = Number(info.lastInsertRowid) - n + 1;
      if (info.changes !== n || (at > 0 && start !== first + at)) {
        throw new Error(`Job rows inserted out of sequence (${info.changes} of ${n} at ${at})`);
      }
      if (at === 0) first = start;
    });
    return first;
  }
}
