/**
 * The PostgreSQL floor: tegami's own jobs table (its migrations, its indexes) driven straight from
 * this process, with no server in between. A consumer claims up to its prefetch with one
 * statement of the plain claim's shape (`FOR UPDATE SKIP LOCKED`, index order), hands the jobs
 * over, and completes the whole batch with one more; each statement is its own transaction. A
 * producer's `send` is one INSERT. Nothing else: no fencing token check beyond the state, no
 * NOTIFY (an idle consumer polls every 2 ms), no retries, no group commit, no protocol.
 *
 * It is not a queue; it is a bench instrument, like the runtime floor. Run in the same run as
 * tegami on PostgreSQL and pg-boss, it measures what this PostgreSQL alone does with a job's
 * two updates on this machine: the ceiling of any server keeping jobs in this table, and so the
 * part of a gap to a target that no change inside tegami's server can close.
 *
 * @module
 */

import type { Stamp } from "../payload.ts";
import { type Consumer, type Peer, PeerUnavailable, type Producer, type Target } from "./peer.ts";
import { benchPgUrl, dropSchema, freshSchema } from "./pg_schema.ts";
import { migratePg } from "../../lib/store/postgres/pg_schema.ts";
import { connectPg, type Sql } from "../../lib/store/postgres/pg_driver.ts";

/** Display name of the floor's rows. */
export const PG_FLOOR_NAME = "PostgreSQL floor (claim + ack statements, no server)";

const FILL_CHUNK = 5000;
const IDLE_POLL_MS = 2;

/** Opens a pool on `schema` with tegami's own session settings, and its claim's. */
function pool(schema: string, max: number): Sql {
  return connectPg(benchPgUrl(), {
    schema,
    max,
    applicationName: "tegami-bench-floor",
    // tegami's claim reads the pending index in order (pg_store.ts inIndexOrder).
    settings: { enable_sort: "off" },
  });
}

class PgFloorTarget implements Target {
  readonly name = PG_FLOOR_NAME;
  readonly pids: readonly number[] = [];
  readonly singleThreaded = false;
  readonly #schema: string;
  readonly #pools: Sql[] = [];

  constructor(schema: string) {
    this.#schema = schema;
  }

  #pool(max: number): Sql {
    const sql = pool(this.#schema, max);
    this.#pools.push(sql);
    return sql;
  }

  producer(queue: string): Promise<Producer> {
    const sql = this.#pool(4);
    return Promise.resolve({
      send: async (payload) => {
        const now = Date.now();
        await sql`
          INSERT INTO jobs (queue, state, payload, max_attempts, run_at, created_at)
          VALUES (${queue}, 'pending', ${payload}, 3, ${now}, ${now})`;
      },
      close: () => Promise.resolve(),
    });
  }

  consumer(queue: string, prefetch: number, onJob: (job: Stamp) => void): Promise<Consumer> {
    const sql = this.#pool(1);
    let stopped = false;
    const loop = (async () => {
      while (!stopped) {
        const now = Date.now();
        const token = crypto.randomUUID();
        const rows = await sql<{ id: number; payload: string }[]>`
          WITH c AS (
            SELECT id FROM jobs WHERE queue = ${queue} AND state = 'pending' AND grp IS NULL
            ORDER BY priority DESC, id LIMIT ${prefetch} FOR UPDATE SKIP LOCKED
          )
          UPDATE jobs j SET state = 'leased', attempts = j.attempts + 1, lease_token = ${token},
            lease_len_ms = 30000, lease_expires_at = ${now + 30_000}::bigint
          FROM c WHERE j.id = c.id
          RETURNING j.id, j.payload`;
        if (rows.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
          continue;
        }
        for (const row of rows) onJob(JSON.parse(row.payload));
        await sql`
          UPDATE jobs SET state = 'done', finished_at = ${Date.now()}::bigint,
            lease_expires_at = NULL
          WHERE id = ANY(${rows.map((row) => row.id)}::bigint[]) AND state = 'leased'
            AND lease_token = ${token}`;
      }
    })();
    return Promise.resolve({
      // Each batch is completed before the next claim: every ack is answered once the loop
      // has come round.
      acked: () => Promise.resolve(),
      close: async () => {
        stopped = true;
        await loop;
      },
    });
  }

  async fill(queue: string, count: number, payload: string): Promise<void> {
    const sql = this.#pool(1);
    const now = Date.now();
    for (let left = count; left > 0; left -= FILL_CHUNK) {
      const n = Math.min(FILL_CHUNK, left);
      await sql`
        INSERT INTO jobs (queue, state, payload, max_attempts, run_at, created_at)
        SELECT ${queue}, 'pending', ${payload}, 3, ${now}::bigint, ${now}::bigint
        FROM generate_series(1, ${n}::int)`;
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.#pools.map((sql) => sql.end({ timeout: 1 })));
    await dropSchema(this.#schema);
  }
}

/** The PostgreSQL floor on the bench's PostgreSQL (TEGAMI_BENCH_PG_URL), a fresh schema each. */
export function pgFloorPeer(): Peer {
  return {
    key: "pgfloor",
    name: "PostgreSQL floor",
    start: async () => {
      const schema = freshSchema("floor");
      const sql = pool(schema, 1);
      try {
        await migratePg(sql, schema);
      } catch (error) {
        await dropSchema(schema).catch(() => {});
        throw new PeerUnavailable(
          `cannot create the floor's schema on ${benchPgUrl()} (set TEGAMI_BENCH_PG_URL): ` +
            (error as Error).message.split("\n")[0],
        );
      } finally {
        await sql.end({ timeout: 1 });
      }
      return new PgFloorTarget(schema);
    },
  };
}
