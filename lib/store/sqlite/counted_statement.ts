/**
 * A prepared statement that counts its executions, so the store can report how many SQL
 * statements a job costs (`tegami_store_statements_total`, and the bench's statements per job).
 * One increment per call: cheap next to the statement itself.
 *
 * @module
 */

import type { SQLInputValue, StatementSync } from "node:sqlite";

/** A statement's bound parameters. */
export type Params = SQLInputValue[];

/** A shared count of statements run. */
export interface StatementCount {
  /** Statements run so far. */
  n: number;
}

/** A prepared statement whose `run`, `get` and `all` add one to `count` each. */
export class CountedStatement {
  readonly #statement: StatementSync;
  readonly #count: StatementCount;

  /** Wraps `statement`, counting into `count`. */
  constructor(statement: StatementSync, count: StatementCount) {
    this.#statement = statement;
    this.#count = count;
  }

  /** Runs the statement; answers SQLite's change count and last rowid. */
  run(...params: Params): ReturnType<StatementSync["run"]> {
    this.#count.n++;
    return this.#statement.run(...params);
  }

  /** Runs the statement and answers its first row. */
  get(...params: Params): ReturnType<StatementSync["get"]> {
    this.#count.n++;
    return this.#statement.get(...params);
  }

  /** Runs the statement and answers every row. */
  all(...params: Params): ReturnType<StatementSync["all"]> {
    this.#count.n++;
    return this.#statement.all(...params);
  }

  /**
   * From now on `get` and `all` answer each row as an array of its values in
   * {@linkcode CountedStatement.columnNames} order instead of an object.
   */
  returnArrays(): void {
    this.#statement.setReturnArrays(true);
  }

  /** The names of the columns the statement answers, in order. */
  columnNames(): string[] {
    return this.#statement.columns().map((column) => column.name);
  }
}
