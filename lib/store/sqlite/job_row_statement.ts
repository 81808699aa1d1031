/**
 * Statements that answer whole `jobs` rows (`SELECT *`, `RETURNING *`), read as arrays and built
 * into {@linkcode JobRow}s here. node:sqlite makes an object row by setting each of its 25
 * members through the engine's API, which costs several times what an array of the values does
 * and leaves an object that is slower to read; a claim answers one such row per job it leases
 * (measured: a 32-job claim and its push frames, 27 against 20 µs per job).
 *
 * @module
 */

import type { SQLOutputValue } from "node:sqlite";
import type { JobRow } from "../job_row.ts";
import type { CountedStatement, Params } from "./counted_statement.ts";

/** Every member of a {@linkcode JobRow}: the columns a row statement must answer. */
const JOB_COLUMNS = [
  "id",
  "queue",
  "state",
  "priority",
  "key",
  "key_expires_at",
  "released_key",
  "grp",
  "payload",
  "attempts",
  "max_attempts",
  "run_at",
  "lease_ms",
  "backoff_base_ms",
  "backoff_max_ms",
  "created_at",
  "checkpoint",
  "progress",
  "progress_at",
  "result",
  "last_error",
  "lease_token",
  "lease_len_ms",
  "lease_expires_at",
  "finished_at",
] as const satisfies readonly (keyof JobRow)[];

/** A JobRow member missing from JOB_COLUMNS makes this `never`, and the line below fail. */
type EveryMember = Exclude<keyof JobRow, typeof JOB_COLUMNS[number]> extends never ? true : never;
const everyMember: EveryMember = true;
void everyMember;

type Values = SQLOutputValue[];

/**
 * Builds a JobRow from the values of a row whose columns are `names`; throws at once if one of
 * the row's members is not among them (a statement that does not answer whole rows).
 */
function jobRowReader(names: string[]): (values: Values) => JobRow {
  const at = JOB_COLUMNS.map((column) => {
    const index = names.indexOf(column);
    if (index < 0) throw new Error(`A job row statement does not answer the column ${column}`);
    return index;
  });
  const [
    id,
    queue,
    state,
    priority,
    key,
    keyExpiresAt,
    releasedKey,
    grp,
    payload,
    attempts,
    maxAttempts,
    runAt,
    leaseMs,
    backoffBaseMs,
    backoffMaxMs,
    createdAt,
    checkpoint,
    progress,
    progressAt,
    result,
    lastError,
    leaseToken,
    leaseLenMs,
    leaseExpiresAt,
    finishedAt,
  ] = at;
  // One object literal: every row gets the same shape.
  return (v) => ({
    id: v[id],
    queue: v[queue],
    state: v[state],
    priority: v[priority],
    key: v[key],
    key_expires_at: v[keyExpiresAt],
    released_key: v[releasedKey],
    grp: v[grp],
    payload: v[payload],
    attempts: v[attempts],
    max_attempts: v[maxAttempts],
    run_at: v[runAt],
    lease_ms: v[leaseMs],
    backoff_base_ms: v[backoffBaseMs],
    backoff_max_ms: v[backoffMaxMs],
    created_at: v[createdAt],
    checkpoint: v[checkpoint],
    progress: v[progress],
    progress_at: v[progressAt],
    result: v[result],
    last_error: v[lastError],
    lease_token: v[leaseToken],
    lease_len_ms: v[leaseLenMs],
    lease_expires_at: v[leaseExpiresAt],
    finished_at: v[finishedAt],
  } as JobRow);
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
