/**
 * One statement over many rows of bound values (`VALUES (…), (…), …`), in place of one call per
 * row. Most of a small write is the call itself (binding its values from JavaScript, stepping,
 * resetting, building the answer), not the B-tree work it does. A run of rows is cut into
 * statements of 64, 32, … 1 rows, each prepared once, when first needed.
 *
 * @module
 */

import type { SQLInputValue, StatementResultingChanges } from "node:sqlite";
import type { CountedStatement } from "./counted_statement.ts";

/** Most rows one statement takes (64 rows of 13 values stay far below SQLite's 32 766). */
const MOST_ROWS = 64;

/** A statement prepared for runs of rows of `width` values each. */
export class RowsStatement {
  readonly #prepare: (sql: string) => CountedStatement;
  readonly #width: number;
  readonly #sql: (rows: string) => string;
  /** By row count, for 1, 2, 4 … 64. */
  readonly #statements = new Map<number, CountedStatement>();

  /**
   * `sql` makes the statement from its list of rows, `(?, ?), (?, ?)`, rows of `width`
   * placeholders; `prepare` is the store's, which counts the runs.
   */
  constructor(
    prepare: (sql: string) => CountedStatement,
    width: number,
    sql: (rows: string) => string,
  ) {
    this.#prepare = prepare;
    this.#width = width;
    this.#sql = sql;
  }

  /**
   * Runs the statement over the rows of `values` (one row's values after the other), in order,
   * and tells `each` what every statement did: its row count, SQLite's answer, and the index of
   * its first row.
   */
  run(
    values: readonly SQLInputValue[],
    each: (rows: number, info: StatementResultingChanges, at: number) => void,
  ): void {
    const width = this.#width;
    const rows = values.length / width;
    if (!Number.isInteger(rows)) {
      throw new Error(`${values.length} values are not rows of ${width}`);
    }
    let at = 0;
    while (at < rows) {
      const n = largestPowerOfTwo(Math.min(rows - at, MOST_ROWS));
      const run = n === rows ? values : values.slice(at * width, (at + n) * width);
      each(n, this.#statement(n).run(...run), at);
      at += n;
    }
  }

  #statement(rows: number): CountedStatement {
    let statement = this.#statements.get(rows);
    if (statement === undefined) {
      const row = `(${Array(this.#width).fill("?").join(", ")})`;
      statement = this.#prepare(this.#sql(Array(rows).fill(row).join(", ")));
      this.#statements.set(rows, statement);
    }
    return statement;
  }
}

function largestPowerOfTwo(n: number): number {
  let p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
