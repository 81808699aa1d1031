/**
 * A store-neutral look at the jobs a server left behind, for tests that judge what is on disk
 * (crash campaigns, recovery, fuzzing): the same rows from a SQLite file or a PostgreSQL
 * schema, read without going through a server and without changing anything.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import type { JobState } from "../../lib/core/job.ts";

/** One stored job, as the table holds it (JSON fields as text). */
export interface InspectedJob {
  /** Id. */
  id: number;
  /** Queue. */
  queue: string;
  /** State. */
  state: JobState;
  /** Payload JSON text. */
  payload: string;
  /** Deliveries so far. */
  attempts: number;
  /** When the job is due. */
  run_at: number;
  /** The current lease's token, or the last one's. */
  lease_token: string | null;
  /** The lease's expiry while leased, else null. */
  lease_expires_at: number | null;
  /** The ack's result JSON text. */
  result: string | null;
  /** The last checkpoint JSON text. */
  checkpoint: string | null;
  /** The last error. */
  last_error: string | null;
}

/** Reads a database's jobs. */
export interface Inspector extends AsyncDisposable {
  /** The engine: `sqlite` or `postgres`. */
  readonly engine: "sqlite" | "postgres";
  /** Every job (of `queue`, if given), by id. */
  jobs(queue?: string): Promise<InspectedJob[]>;
  /** `ok`, or what the engine's own consistency check found wrong. */
  integrity(): Promise<string>;
  /** Closes the connection. */
  close(): Promise<void>;
}

const COLUMNS =
  "id, queue, state, payload, attempts, run_at, lease_token, lease_expires_at, result, " +
  "checkpoint, last_error";

/**
 * Opens `db` as a server's `--db` names it: a SQLite path (read-only) or a `postgres://` URL,
 * whose tables are in `schema`.
 */
export function openInspector(db: string, schema = "tegami"): Inspector {
  if (/^postgres(ql)?:\/\//.test(db)) return pgInspector(db, schema);
  const database = new DatabaseSync(db, { readOnly: true });
  const close = () => {
    if (database.isOpen) database.close();
    return Promise.resolve();
  };
  return {
    engine: "sqlite",
    jobs: (queue) => {
      const rows = queue === undefined
        ? database.prepare(`SELECT ${COLUMNS} FROM jobs ORDER BY id`).all()
        : database.prepare(`SELECT ${COLUMNS} FROM jobs WHERE queue = ? ORDER BY id`).all(queue);
      return Promise.resolve(rows.map((row) => clean(row as unknown as InspectedJob)));
    },
    integrity: () => {
      const rows = database.prepare("PRAGMA integrity_check").all();
      return Promise.resolve(
        rows.map((row) => Object.values(row as Record<string, string>)[0]).join("; "),
      );
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

function pgInspector(url: string, schema: string): Inspector {
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    connection: { search_path: `"${schema}"`, application_name: "tegami-inspector" },
    types: {
      bigint: { to: 20, from: [20], serialize: String, parse: Number },
    },
  });
  const close = () => sql.end({ timeout: 1 });
  return {
    engine: "postgres",
    jobs: async (queue) => {
      const rows = queue === undefined
        ? await sql.unsafe(`SELECT ${COLUMNS} FROM jobs ORDER BY id`)
        : await sql.unsafe(`SELECT ${COLUMNS} FROM jobs WHERE queue = $1 ORDER BY id`, [queue]);
      return rows.map((row) => clean(row as unknown as InspectedJob));
    },
    integrity: async () => {
      // amcheck (shipped with PostgreSQL) verifies each B-tree index of the jobs table against
      // the table itself; it raises at the first inconsistency.
      try {
        await sql`CREATE EXTENSION IF NOT EXISTS amcheck SCHEMA public`;
        await sql`
          SELECT public.bt_index_check(index => i.indexrelid, heapallindexed => true)
          FROM pg_index i WHERE i.indrelid = 'jobs'::regclass`;
        return "ok";
      } catch (error) {
        return (error as Error).message;
      }
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

function clean(row: InspectedJob): InspectedJob {
  return {
    ...row,
    id: Number(row.id),
    attempts: Number(row.attempts),
    run_at: Number(row.run_at),
    lease_expires_at: row.lease_expires_at === null ? null : Number(row.lease_expires_at),
  };
}
