/**
 * Statements that answer whole `jobs` rows (`SELECT *`, `RETURNING *`), read as arrays and built
 * into {@linkcode JobRow}s here. node:sqlite makes an object row by setting each of its 25
 * members through the engine's API, which costs several times what an array of the values does
 * and leaves an object that is slower to read; a claim answers one such row per job it leases.
 *
 * @module
 */

import type { SQLOutputValue } from "node:sqlite";
import type { JobRow } from "../job_row.ts";
import type { CountedStatement, Params } from "./counted_statement.ts";

type Values = SQLOutputValue[];

/**
 * Builds a JobRow from the values of a row whose columns are `names`; throws at once if one of
 * the row's members is not among them (a statement that does not answer whole rows). Both lists
 * below are checked against JobRow by the compiler: a member missing or extra fails the build.
 */
function jobRowReader(names: string[]): (values: Values) => JobRow {
  const at = (column: keyof JobRow): number => {
    const index = names.indexOf(column);
    if (index < 0) throw new Error(`A job row statement does not answer the column ${column}`);
    return index;
  };
  const c = {
    id: at("id"),
    queue: at("queue"),
    state: at("state"),
    priority: at("priority"),
    key: at("key"),
    key_expires_at: at("key_expires_at"),
    released_key: at("released_key"),
    grp: at("grp"),
    payload: at("payload"),
    attributes: at("attributes"),
    attempts: at("attempts"),
    max_attempts: at("max_attempts"),
    run_at: at("run_at"),
    lease_ms: at("lease_ms"),
    backoff_base_ms: at("backoff_base_ms"),
    backoff_max_ms: at("backoff_max_ms"),
    created_at: at("created_at"),
    checkpoint: at("checkpoint"),
    progress: at("progress"),
    progress_at: at("progress_at"),
    result: at("result"),
    last_error: at("last_error"),
    lease_token: at("lease_token"),
    lease_len_ms: at("lease_len_ms"),
    lease_expires_at: at("lease_expires_at"),
    finished_at: at("finished_at"),
    dead_lettered_from: at("dead_lettered_from"),
    flow_id: at("flow_id"),
    flow_ref: at("flow_ref"),
    waiting_on: at("waiting_on"),
  } satisfies Record<keyof JobRow, number>;
  // One object literal: every row gets the same shape.
  return (v) =>
    ({
      id: v[c.id],
      queue: v[c.queue],
      state: v[c.state],
      priority: v[c.priority],
      key: v[c.key],
      key_expires_at: v[c.key_expires_at],
      released_key: v[c.released_key],
      grp: v[c.grp],
      payload: v[c.payload],
      attributes: v[c.attributes],
      attempts: v[c.attempts],
      max_attempts: v[c.max_attempts],
      run_at: v[c.run_at],
      lease_ms: v[c.lease_ms],
      backoff_base_ms: v[c.backoff_base_ms],
      backoff_max_ms: v[c.backoff_max_ms],
      created_at: v[c.created_at],
      checkpoint: v[c.checkpoint],
      progress: v[c.progress],
      progress_at: v[c.progress_at],
      result: v[c.result],
      last_error: v[c.last_error],
      lease_token: v[c.lease_token],
      lease_len_ms: v[c.lease_len_ms],
      lease_expires_at: v[c.lease_expires_at],
      finished_at: v[c.finished_at],
      dead_lettered_from: v[c.dead_lettered_from],
      flow_id: v[c.flow_id],
      flow_ref: v[c.flow_ref],
      waiting_on: v[c.waiting_on],
    }) satisfies Record<keyof JobRow, SQLOutputValue> as unknown as JobRow;
}

/** A prepared statement answering whole `jobs` rows, as {@linkcode JobRow}s. */
export class JobRowStatement {
  readonly #statement: CountedStatement;
  readonly #read: (values: Values) => JobRow;

  /** Wraps `statement`, which must answer every column of `jobs`; switches it to arrays. */
  constructor(statement: CountedStatement) {
    this.#read = jobRowReader(statement.columnNames());
    statement.returnArrays();
    this.#statement = statement;
  }

  /** Runs the statement and answers its first row, if any. */
  get(...params: Params): JobRow | undefined {
    const values = this.#statement.get(...params) as unknown as Values | undefined;
    return values === undefined ? undefined : this.#read(values);
  }

  /** Runs the statement and answers every row. */
  all(...params: Params): JobRow[] {
    const rows = this.#statement.all(...params) as unknown as Values[];
    const out: JobRow[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = this.#read(rows[i]);
    return out;
  }
}
